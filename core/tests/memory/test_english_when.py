"""An English when-question is answered by the memory that places its event in time
("yesterday", "last week", "two days ago"), not by the later ones that mention it again:
the English counterpart of a Japanese memory with a date.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from omoide.memory.engine import MemoryEngine
from omoide.memory.language.english_time import tells_when
from omoide.types import Memory

UTC9 = ZoneInfo("Asia/Tokyo")
SAID = datetime(2023, 5, 8, 13, 0, tzinfo=UTC9)
MEMORIES = {
    "went": "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "helped": "Caroline: The LGBTQ support group has really helped me feel accepted.",
    "people": "Caroline: The people at the LGBTQ support group are so kind to me.",
    "paint": "Melanie: I painted a lake sunrise last year, it's special to me.",
}


@pytest.mark.parametrize(("text", "dated"), [
    ("I went to a support group yesterday", True),
    ("I ran a charity race last Saturday", True),
    ("We moved here two years ago", True),
    ("I wanted to tell you about my school event last week.", True),
    ("My friends are my rocks", False),
    ("I have known these friends for 4 years", False),
    ("あなたは昨日病院に行った。", False),   # Japanese dates are read elsewhere
])
def test_english_words_that_place_an_event_in_time(text: str, dated: bool) -> None:
    assert tells_when(text) is dated


@pytest.fixture
async def engine(make_engine) -> MemoryEngine:  # type: ignore[no-untyped-def]
    engine: MemoryEngine = await make_engine(time_budget_ms=30_000)
    await engine.add_memories("c", [Memory(k, "c", v, SAID, kind="event")
                                    for k, v in MEMORIES.items()])
    return engine


async def test_a_when_question_ranks_the_memory_that_dates_the_event_first(
        engine: MemoryEngine) -> None:
    recall = await engine.recall("c", "When did Caroline go to the LGBTQ support group?", SAID)
    assert [r.memory.id for r in recall.memories][:1] == ["went"]
