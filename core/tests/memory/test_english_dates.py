"""English dates: what an English question asks about and when an English memory's event
happened, as date ranges; and a question naming a month or a day finds the memory whose
event falls in it, however that memory said it ("last night", "two weeks ago").
"""

from __future__ import annotations

from datetime import date, datetime
from zoneinfo import ZoneInfo

import pytest

from omoide.memory.engine import MemoryEngine
from omoide.memory.language.english_dates import is_english, memory_spans_en, question_spans
from omoide.types import Memory

TODAY = date(2023, 12, 20)   # a Wednesday


def ranges(spans: list) -> list[tuple[str, str]]:  # type: ignore[type-arg]
    return [(s.start.isoformat(), s.end.isoformat()) for s in spans]


@pytest.mark.parametrize(("question", "expected"), [
    ("What did Joanna watch on 1 May, 2022?", [("2022-05-01", "2022-05-01")]),
    ("What did Audrey eat for dinner on October 24, 2023?", [("2023-10-24", "2023-10-24")]),
    ("What did she accomplish in January 2022?", [("2022-01-01", "2022-01-31")]),
    ("When did Melanie go camping in June?", [("2023-06-01", "2023-06-30")]),
    ("Where did they go in May?", [("2023-05-01", "2023-05-31")]),
    ("Where was John between August 11 and August 15 2023?", [("2023-08-11", "2023-08-15")]),
    ("Where was Tim in the week before 16 November 2023?", [("2023-11-09", "2023-11-15")]),
    ("Where was he in the second week of November?", [("2023-11-08", "2023-11-14")]),
    ("Where did Andrew go during the first weekend of August 2023?",   # from Friday
     [("2023-08-04", "2023-08-06")]),
    ("Where was Dave in the last two weeks of August 2023?", [("2023-08-18", "2023-08-31")]),
    ("Which tournament did Nate win in the beginning of November 2022?",
     [("2022-11-01", "2022-11-10")]),
    ("What happened towards the end of summer 2023?", [("2023-08-01", "2023-08-31")]),
    ("Which country did they visit in 2010?", [("2010-01-01", "2010-12-31")]),
    ("What did I do last week?", [("2023-12-11", "2023-12-17")]),
    ("What did I do yesterday?", [("2023-12-19", "2023-12-19")]),
])
def test_a_question_names_the_range_it_asks_about(question: str,
                                                  expected: list[tuple[str, str]]) -> None:
    assert ranges(question_spans(question, TODAY)) == expected


def test_a_month_without_a_year_is_the_next_one_when_the_question_is_about_a_plan() -> None:
    assert ranges(question_spans("Where will we go in March?", TODAY)) == \
        [("2024-03-01", "2024-03-31")]


@pytest.mark.parametrize("question", [
    "How many pets did Andrew have, as of September 2023?",   # a state, not a time
    "I may go camping",                                       # "may" the verb
    "What is your favourite colour?",
    "先月どこに行ったっけ",                                     # Japanese is read elsewhere
])
def test_no_range_where_the_question_names_no_time(question: str) -> None:
    assert question_spans(question, TODAY) == []


@pytest.mark.parametrize(("memory", "expected"), [
    ("Nate: Dyed my hair last week - come see!", [("2022-04-04", "2022-04-10")]),
    ("Joanna: I watched the trilogy last night!", [("2022-04-14", "2022-04-14")]),
    ("Jolene: Two weeks ago I read a novel in one sitting!", [("2022-03-28", "2022-04-03")]),
    ("Joanna: I finished my screenplay last Friday.", [("2022-04-08", "2022-04-08")]),
    ("Evan: We will paint on Tuesday.", [("2022-04-19", "2022-04-19")]),
    ("Melanie: It was an awesome time, we roasted marshmallows.",
     [("2022-04-15", "2022-04-15")]),   # something done, told that day
])
def test_a_memory_is_dated_from_the_day_it_was_told(memory: str,
                                                    expected: list[tuple[str, str]]) -> None:
    assert ranges(memory_spans_en(memory, date(2022, 4, 15))) == expected   # a Friday


@pytest.mark.parametrize("memory", ["Caroline: I love painting.", "あなたは昨日病院に行った。"])
def test_a_liking_or_a_japanese_memory_gets_no_english_date(memory: str) -> None:
    assert memory_spans_en(memory, date(2022, 4, 15)) == []


def test_english_is_text_with_letters_and_no_japanese() -> None:
    assert is_english("Where did you go?")
    assert not is_english("LINEで送ったっけ")
    assert not is_english("2023-05-01")


UTC9 = ZoneInfo("Asia/Tokyo")
MEMORIES = {   # id: (text, told on)
    "lotr": ("Joanna: I took your recommendation and watched the trilogy last night!",
             datetime(2022, 5, 2, 11, 0, tzinfo=UTC9)),
    "film": ("Joanna: I watched a classic film the other day, so gripping.",
             datetime(2022, 8, 20, 11, 0, tzinfo=UTC9)),
    "script": ("Joanna: Another film script of mine was shown last Sunday.",
               datetime(2022, 10, 3, 11, 0, tzinfo=UTC9)),
    "likes": ("Joanna: I love watching films with friends.",
              datetime(2022, 3, 1, 11, 0, tzinfo=UTC9)),
}


@pytest.fixture
async def engine(make_engine) -> MemoryEngine:  # type: ignore[no-untyped-def]
    engine: MemoryEngine = await make_engine(time_budget_ms=30_000)
    await engine.add_memories("j", [Memory(k, "j", text, said, kind="event")
                                    for k, (text, said) in MEMORIES.items()])
    return engine


async def test_a_question_naming_a_day_finds_the_memory_of_that_day(
        engine: MemoryEngine) -> None:
    now = datetime(2022, 12, 1, 12, 0, tzinfo=UTC9)
    recall = await engine.recall("j", "What did Joanna watch on 1 May, 2022?", now)
    assert [r.memory.id for r in recall.memories][:1] == ["lotr"]
    recall = await engine.recall("j", "What did Joanna have shown in October 2022?", now)
    assert [r.memory.id for r in recall.memories][:1] == ["script"]


async def test_a_memory_that_places_its_event_in_the_month_beats_one_only_told_then(
        make_engine) -> None:  # type: ignore[no-untyped-def]
    """Both tell of a film seen in August: "placed" says when ("last week", told on 30
    August), "told" was only told in August. For a question about August the date counts
    more for the memory that places its event there; the meaning of the words (closer for
    "told") no longer decides alone."""
    engine: MemoryEngine = await make_engine(time_budget_ms=30_000)
    await engine.add_memories("k", [
        Memory("placed", "k", "Kim: Last week I watched a film at the cinema.",
               datetime(2022, 8, 30, 11, 0, tzinfo=UTC9), kind="event"),
        Memory("told", "k", "Kim: I watched a film at the cinema.",
               datetime(2022, 8, 20, 11, 0, tzinfo=UTC9), kind="event")])
    now = datetime(2022, 12, 1, 12, 0, tzinfo=UTC9)
    recall = await engine.recall("k", "What did Kim watch in August 2022?", now)
    assert recall.memories[0].channels["temporal"] > recall.memories[1].channels["temporal"]
    assert [r.memory.id for r in recall.memories][:1] == ["placed"]
