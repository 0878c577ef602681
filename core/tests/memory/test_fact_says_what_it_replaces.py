"""A fact that says what it replaces (``Fact.replaces``, from the chat extractor) updates
the stored memory holding what it names, though the two are worded too differently for
comparison alone to link them; without the hint they stay two facts, and the hint never
reaches a memory about something else.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from omoide.components.extractor import Fact
from omoide.memory.engine import MemoryEngine
from omoide.memory.extract.planning import BatchPlanner
from omoide.memory.facts.dedup import Verdict, compare, said_to_replace, view
from omoide.memory.journal.extraction_batches import ExtractionBatch
from omoide.types import Memory

JST = ZoneInfo("Asia/Tokyo")
BEFORE = datetime(2027, 5, 1, 20, 0, tzinfo=JST)
NOW = datetime(2027, 9, 1, 20, 0, tzinfo=JST)
OLD = {"coffee": ("あなたは毎朝コーヒーを飲んでいる。", "habit"),
       "hakone": ("あなたは10月12日に箱根へ旅行する予定だ。", "plan"),
       "cat": ("あなたは猫のミケを飼っている。", "person")}
NEW_HABIT = "あなたは最近は紅茶派だ。"


async def _plan(engine: MemoryEngine, fact: Fact) -> tuple[Verdict, tuple[str, ...]]:
    await engine.add_memories("me", [Memory(k, "me", text, BEFORE, kind=kind)
                                     for k, (text, kind) in OLD.items()])
    planner = BatchPlanner(engine.embedder, engine.store, "Asia/Tokyo", 0.9)
    batch = ExtractionBatch("b1", "me", ("x1",), NOW, (fact,), "answered")
    plan, _ = await planner.plan(batch)
    return plan[0].verdict, plan[0].supersedes


def test_the_words_alone_do_not_link_the_two_habits() -> None:
    assert compare(view(NEW_HABIT, "habit"), view(OLD["coffee"][0], "habit"), 0.5,
                   0.9) is Verdict.NEW


def test_what_is_replaced_is_matched_on_what_it_is_about() -> None:
    assert said_to_replace("コーヒーを飲む習慣", view(OLD["coffee"][0], "habit"))
    assert said_to_replace("箱根旅行の日程", view(OLD["hakone"][0], "plan"))
    assert not said_to_replace("コーヒーを飲む習慣", view(OLD["cat"][0], "person"))


async def test_a_fact_saying_it_replaces_a_habit_supersedes_it(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine()
    verdict, supersedes = await _plan(engine, Fact(NEW_HABIT, "habit", (), "コーヒーを飲む習慣"))
    assert verdict is Verdict.UPDATE
    assert supersedes == ("coffee",)


async def test_without_the_hint_the_new_habit_is_a_new_fact(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine()
    verdict, supersedes = await _plan(engine, Fact(NEW_HABIT, "habit", ()))
    assert verdict is Verdict.NEW
    assert supersedes == ()
