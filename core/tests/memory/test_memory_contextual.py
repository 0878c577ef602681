"""Contextual recall: memories reach the prompt when the talk is about them, asked or not.

Runs over the test doubles (hash embedder, in-memory store): what is tested is the
gate, which decides on words, readings, sounds and dates, not on a cosine.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from omoide.memory.engine import MemoryEngine
from omoide.memory.recall.intent import detect
from omoide.memory.recall.memory_block import render_memory_block
from omoide.types import Memory

JST = ZoneInfo("Asia/Tokyo")
SAID = datetime(2026, 11, 25, 20, 0, tzinfo=JST)
MONDAY = datetime(2026, 11, 30, 20, 0, tzinfo=JST)   # the live server's Monday 30 Nov
HAKONE = "あなたは再来週の土曜日（2026年12月12日）に友達と箱根に行く予定だ。"
FRIDAY = "あなたは来週の金曜日（2026年12月4日）に会社の飲み会がある。"
SEMINAR = "あなたは再来週の木曜日（2026年12月10日）に、ゼミで卒論の発表をする。"
GUITAR = "あなたは最近、仕事終わりにギターの練習をしている。"
ALLERGY = "あなたはそばアレルギーがある。"


@pytest.fixture
async def engine(make_engine) -> MemoryEngine:  # type: ignore[no-untyped-def]
    engine: MemoryEngine = await make_engine(time_budget_ms=30_000)
    await engine.add_memories("me", [
        Memory("hakone", "me", HAKONE, SAID), Memory("friday", "me", FRIDAY, SAID),
        Memory("seminar", "me", SEMINAR, SAID), Memory("guitar", "me", GUITAR, SAID),
        Memory("allergy", "me", ALLERGY, SAID)])
    return engine


async def injected(engine: MemoryEngine, text: str) -> list[str]:
    return [r.memory.id for r in (await engine.recall("me", text, MONDAY)).memories]


async def test_weekend_with_nothing_this_weekend_means_the_next_weekend_with_a_plan(
        engine: MemoryEngine) -> None:
    recall = await engine.recall("me", "週末の予定覚えてる?", MONDAY)
    assert [r.memory.id for r in recall.memories] == ["hakone"]
    assert recall.details["weekend_fallback"] == "2026-12-12"
    assert "2026年12月12日" in render_memory_block(recall.memories, "Asia/Tokyo")


async def test_a_remark_about_a_planned_place_brings_the_plan(engine: MemoryEngine) -> None:
    assert await injected(engine, "箱根って寒いかな") == ["hakone"]


async def test_a_remark_about_a_named_day_brings_that_days_plan(engine: MemoryEngine) -> None:
    assert await injected(engine, "金曜日何時ごろ帰れるかな") == ["friday"]


async def test_a_remark_about_a_day_brings_a_meeting_told_in_the_past_tense(
        make_engine) -> None:  # type: ignore[no-untyped-def]
    """「…面談を行うと連絡を受けた」: the telling is past, the meeting on that day is not."""
    engine: MemoryEngine = await make_engine(time_budget_ms=30_000)
    await engine.add_memories("me", [Memory(
        "meeting", "me", "あなたはケアマネの大塚さんから、母の面談を来週の水曜日（2026年12月2日）"
        "の夕方6時から行うと連絡を受けた。", SAID)])
    assert await injected(engine, "水曜の夕方に歯医者の予約入れちゃって平気かな") == ["meeting"]


@pytest.mark.parametrize("text", ["箱根の名物って何?", "日本で一番高い山は?", "こんばんは",
                                  "金曜日の朝7時に起こして", "今日って何曜日だっけ"])
async def test_questions_about_the_world_small_talk_and_commands_get_nothing(
        engine: MemoryEngine, text: str) -> None:
    assert await injected(engine, text) == []


async def test_a_profile_fact_is_never_repeated_as_an_episodic_memory(
        engine: MemoryEngine) -> None:
    recall = await engine.recall("me", "ギターって何だっけ", MONDAY)
    assert "guitar" in recall.profile.ids
    assert "guitar" not in [r.memory.id for r in recall.memories]


@pytest.mark.parametrize("heard", ["数末の予定を覚えている", "セミの発表っていつだけ"])
async def test_misheard_questions_still_recall(engine: MemoryEngine, heard: str) -> None:
    assert (await injected(engine, heard))[:1] in (["hakone"], ["seminar"])


@pytest.mark.parametrize("text", ["週末の予定覚えている", "ゼミの発表っていつだけ",
                                  "次の発表なんだっけ", "予定おぼえてる", "あれ何だったかしら"])
def test_recall_intent_survives_recognition_variants(text: str) -> None:
    assert detect(text).recall


async def test_vocabulary_lists_the_persons_names_first(engine: MemoryEngine) -> None:
    words = (await engine.index("me")).vocabulary(10)
    assert words[0] == "箱根"
    assert "ギター" in words and "アレルギー" in words
    assert (await engine.index("me")).vocabulary(2) == words[:2]


async def test_a_question_about_one_speaker_gets_nothing_said_by_the_other(
        make_engine) -> None:  # type: ignore[no-untyped-def]
    engine: MemoryEngine = await make_engine(time_budget_ms=30_000)
    await engine.add_memories("c", [
        Memory("m1", "c", "Melanie: I ran a charity race for mental health last Saturday.", SAID),
        Memory("c1", "c", "Caroline: That charity race sounds great, Mel! Proud of you!", SAID)])
    asked = await engine.recall("c", "What did Melanie do for the charity race?", MONDAY)
    assert [r.memory.id for r in asked.memories][:1] == ["m1"]
    swapped = await engine.recall("c", "What did Caroline realize after her charity race?",
                                  MONDAY)
    assert swapped.memories == [] and swapped.details["gate"] == "about someone else"


async def test_a_question_about_a_family_member_is_answered_by_memories_about_them(
        make_engine) -> None:  # type: ignore[no-untyped-def]
    engine: MemoryEngine = await make_engine(time_budget_ms=30_000)
    await engine.add_memories("me", [
        Memory("h", "me", "あなたの妹の遥は来週の土曜日（2026年12月5日）に引っ越す。", SAID),
        Memory("k", "me", "あなたの友達の健太は来週の土曜日（2026年12月5日）に引っ越す。", SAID)])
    assert await injected(engine, "遥の引っ越しっていつだっけ") == ["h"]


async def test_a_question_about_a_planned_place_brings_the_plan(engine: MemoryEngine) -> None:
    # memory.md's own example: nobody asked to remember, but the trip is coming
    assert await injected(engine, "箱根って今寒い？") == ["hakone"]


async def test_a_reaction_to_someone_elses_news_does_not_answer_a_question_about_the_reactor(
        make_engine) -> None:  # type: ignore[no-untyped-def]
    engine: MemoryEngine = await make_engine(time_budget_ms=30_000)
    await engine.add_memories("c", [
        Memory("maria", "c", "Maria: Just yesterday I joined a nearby church. I wanted to feel"
               " closer to a community.", SAID),
        Memory("john", "c", "John: That's great, Maria! Joining a church can be really"
               " encouraging. I'm thrilled for you.", SAID)])
    asked = await engine.recall("c", "Why did Maria join a nearby church?", MONDAY)
    assert [r.memory.id for r in asked.memories][:1] == ["maria"]
    swapped = await engine.recall("c", "Why did John join a church?", MONDAY)
    assert swapped.memories == [] and swapped.details["gate"] == "about someone else"


async def test_a_question_about_a_speaker_whose_name_looks_plural_is_checked_too(
        make_engine) -> None:  # type: ignore[no-untyped-def]
    engine: MemoryEngine = await make_engine(time_budget_ms=30_000)
    await engine.add_memories("c", [
        Memory("john", "c", "John: I left my IT job after three years to work on games.", SAID),
        Memory("james", "c", "James: Wow, John! Congrats on the dream job. When do you"
               " start?", SAID)])
    swapped = await engine.recall("c", "What made James leave his IT job?", MONDAY)
    assert swapped.memories == [] and swapped.details["gate"] == "about someone else"
