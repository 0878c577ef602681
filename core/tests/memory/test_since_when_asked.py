"""A question asking since when (いつから, 何年から) is answered by a memory that tells a
beginning: a point in time something runs from (4月から), the doing asked (始めた for
「いつから始めたんだっけ」), or a plan still to come (a trip's dates). A memory of going to
see a festival tells when the person went, not since when the festival is held.

Runs over the test doubles (hash embedder, in-memory store).
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from omoide.memory.engine import MemoryEngine
from omoide.memory.recall.robust import prepare
from omoide.memory.recall.robust.query import doings_asked, tells_a_beginning

from .conftest import recalled

JST = ZoneInfo("Asia/Tokyo")
NOW = datetime(2027, 5, 19, 21, 0, tzinfo=JST)
MEMORIES = {
    "fireworks": ("2026-07-26", "あなたは昨日（2026年7月25日）、友達と隅田川の花火大会を見に行った。"),
    "yoga": ("2027-04-03", "あなたは4月から駅前のヨガ教室に通っている。"),
    "tennis": ("2027-03-10", "あなたは昨日、職場の仲間とテニスを始めた。"),
    "okinawa": ("2027-05-10", "あなたは6月3日（2027年6月3日）から家族で沖縄に旅行する予定だ。"),
}


@pytest.mark.parametrize("text", ["隅田川の花火大会っていつから始まったんだっけ",
                                  "隅田川の花火大会って何年から始まったんだっけ"])
async def test_a_memory_of_seeing_a_thing_does_not_say_since_when_it_is(
        engine: MemoryEngine, text: str) -> None:
    assert await recalled(engine, text, NOW) == []


@pytest.mark.parametrize(("text", "memory"), [
    ("ヨガ教室っていつから通ってるんだっけ", "yoga"),
    ("テニスっていつから始めたんだっけ", "tennis"),
    ("沖縄っていつから行くんだっけ", "okinawa"),
])
async def test_a_memory_telling_a_beginning_answers_since_when(
        engine: MemoryEngine, text: str, memory: str) -> None:
    assert memory in await recalled(engine, text, NOW)


def test_a_beginning_is_a_point_in_time_something_runs_from() -> None:
    assert tells_a_beginning("あなたは（2027年4月1日）から新しい部署で働いている。", ())
    assert tells_a_beginning("あなたは春から自転車で通勤している。", ())
    # (the から of a place, of a person or of an order is no beginning)
    assert not tells_a_beginning("あなたは駅から家まで歩いた。", ())
    assert not tells_a_beginning("あなたは同僚から花束をもらった。", ())
    assert not tells_a_beginning("あなたは高校を出てから東京に来た。", ())


def test_a_memory_spelling_the_doing_asked_tells_its_beginning() -> None:
    started = doings_asked(prepare("テニスっていつから始めたんだっけ", NOW))
    assert tells_a_beginning("あなたは職場の仲間とテニスを始めた。", started)
    # (something that began is not something the person began)
    began = doings_asked(prepare("花火大会っていつから始まったんだっけ", NOW))
    assert not tells_a_beginning("あなたは職場の仲間とテニスを始めた。", began)
