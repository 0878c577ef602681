"""「Xってどこの区だっけ」 asks the unit a place lies in, as 「Xって何県だっけ」 does: a
memory of going to X does not tell it; one that names X with that unit does.

Runs over the test doubles (hash embedder, in-memory store).
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from omoide.memory.engine import MemoryEngine
from omoide.memory.recall.robust import prepare

from .conftest import recalled

JST = ZoneInfo("Asia/Tokyo")
NOW = datetime(2027, 5, 19, 21, 0, tzinfo=JST)
MEMORIES = {
    "park": ("2027-05-03", "あなたは昨日（2027年5月2日）、息子と葛西臨海公園に行った。"),
    "museum": ("2027-04-11", "あなたは昨日、鉄道博物館に行った。鉄道博物館はさいたま市大宮区にある。"),
}


def test_which_unit_a_place_lies_in_is_asked_after_it() -> None:
    assert prepare("葛西臨海公園ってどこの区だっけ", NOW).asked_of_the_thing[1] == ("区",)
    assert prepare("葛西臨海公園ってどこの県だっけ", NOW).asked_of_the_thing[1] == ("県",)


async def test_a_memory_of_going_there_does_not_tell_which_ward(
        engine: MemoryEngine) -> None:
    assert await recalled(engine, "葛西臨海公園ってどこの区だっけ", NOW) == []


async def test_a_memory_telling_the_ward_does(engine: MemoryEngine) -> None:
    assert "museum" in await recalled(engine, "鉄道博物館ってどこの区だっけ", NOW)
