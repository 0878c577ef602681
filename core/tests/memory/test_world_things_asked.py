"""Questions about a thing of the world that a memory only touches get no memory.

- An attribute of the world (a height, a population) asked in the past of recollecting
  (〜だったっけ, 〜だった？) is still the world's: a memory of visiting the place does
  not tell its height. A question of the same shape about something of the person's
  (their check-up's blood pressure) still recalls.

Runs over the test doubles (hash embedder, in-memory store).
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from omoide.memory.engine import MemoryEngine

from .conftest import recalled

JST = ZoneInfo("Asia/Tokyo")
NOW = datetime(2027, 5, 19, 21, 0, tzinfo=JST)
MEMORIES = {
    "tower": ("2027-04-29", "あなたは昨日（2027年4月28日）、姉と横浜マリンタワーに登った。"),
    "checkup": ("2027-04-20", "あなたは先週の健診で血圧が上132、下84だった。"),
}


@pytest.mark.parametrize("text", [
    "横浜マリンタワーの高さって何メートルだったっけ",
    "横浜マリンタワーの高さって何メートルだった？",
])
async def test_an_attribute_of_the_world_asked_in_the_past_gets_nothing(
        engine: MemoryEngine, text: str) -> None:
    assert await recalled(engine, text, NOW) == []


async def test_a_question_of_that_shape_about_the_persons_own_still_recalls(
        engine: MemoryEngine) -> None:
    assert "checkup" in await recalled(engine, "健診の血圧って上いくつだった?", NOW)
