"""Questions about a thing of the world that a memory only touches get no memory.

- An attribute of the world (a height, a population) asked in the past of recollecting
  (〜だったっけ, 〜だった？) is still the world's: a memory of visiting the place does
  not tell its height. A question of the same shape about something of the person's
  (their check-up's blood pressure) still recalls.
- What someone described did (「…って何した人だっけ」) is theirs, not the speaker's: the
  question is about them, and only a memory naming them answers it.
- A thing named by a run of words (信州そば, ジャスミン茶) is named only by a memory that
  has them all: one naming only the run's last word (そば, 茶) is about another thing.

Runs over the test doubles (hash embedder, in-memory store).
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from omoide.memory.engine import MemoryEngine
from omoide.memory.recall.intent import detect
from omoide.memory.recall.robust import prepare

from .conftest import recalled

JST = ZoneInfo("Asia/Tokyo")
NOW = datetime(2027, 5, 19, 21, 0, tzinfo=JST)
MEMORIES = {
    "tower": ("2027-04-29", "あなたは昨日（2027年4月28日）、姉と横浜マリンタワーに登った。"),
    "checkup": ("2027-04-20", "あなたは先週の健診で血圧が上132、下84だった。"),
    "soba": ("2027-05-02", "あなたは昨日（2027年5月1日）、駅前の店でかけそばを食べた。"),
    "tea": ("2027-05-10", "あなたは昨日（2027年5月9日）、会社で麦茶を飲んだ。"),
    "shinshu": ("2027-05-12", "あなたは昨日（2027年5月11日）、松本で信州そばを食べた。"),
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


@pytest.mark.parametrize("text", ["十割そばって何だっけ", "ジャスミン茶って何だっけ"])
async def test_a_memory_naming_only_the_last_word_of_a_thing_does_not_name_it(
        engine: MemoryEngine, text: str) -> None:
    assert await recalled(engine, text, NOW) == []


def test_the_head_of_a_topic_is_the_run_of_words_ending_it() -> None:
    assert prepare("信州そばって何だっけ", NOW).topic_head == (("信州そば",), ("信州", "そば"))
    # (a run stops at a particle: の separates the castle from its roof ornament)
    assert prepare("名古屋城の金のしゃちほこって何だっけ", NOW).topic_head == (("しゃちほこ",),)


async def test_a_memory_naming_every_word_of_the_thing_still_names_it(
        engine: MemoryEngine) -> None:
    assert "shinshu" in await recalled(engine, "信州そばって何だっけ", NOW)


@pytest.mark.parametrize("text", ["坂本龍馬って何した人だっけ", "坂本龍馬って何をした人だっけ"])
def test_what_someone_described_did_is_not_the_speakers_doing(text: str) -> None:
    # (the verb describes the person asked about: a question about them, not recall of
    # something the speaker did)
    assert detect(text).impersonal


@pytest.mark.parametrize("text", ["昨日会った人って誰だっけ", "叔父さんって何した人だっけ"])
def test_a_person_of_the_speakers_own_stays_theirs(text: str) -> None:
    assert not detect(text).impersonal
