"""The memory vocabulary that biases speech recognition: names first, then other nouns,
by how many live memories use them, from one user's memories only."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from omoide.memory.index.person_index import UserIndex
from omoide.types import Memory

JST = ZoneInfo("Asia/Tokyo")
NOW = datetime(2026, 9, 27, 21, 0, tzinfo=JST)


def _memory(mid: str, text: str, *, user: str = "me", days_ago: int = 0,
            entities: tuple[str, ...] = (), superseded_by: str | None = None) -> Memory:
    return Memory(mid, user, text, NOW - timedelta(days=days_ago), entities=entities,
                  superseded_by=superseded_by)


def _index(*memories: Memory) -> UserIndex:
    index = UserIndex("me", "Asia/Tokyo")
    for m in memories:
        index.add(m)
    return index


def test_names_and_places_come_before_other_nouns() -> None:
    index = _index(_memory("a", "あなたは毎週ラーメンを食べる。"),
                   _memory("b", "あなたはラーメンが好きだ。"),
                   _memory("c", "あなたは友達と箱根に行く予定だ。"))
    words = index.vocabulary(10)
    assert words.index("箱根") < words.index("ラーメン")


def test_a_word_in_more_memories_ranks_higher_within_its_tier() -> None:
    index = _index(_memory("a", "あなたはギターを練習している。", days_ago=1),
                   _memory("b", "あなたはギターの弦を買った。", days_ago=2),
                   _memory("c", "あなたはピアノを聴いた。"))
    words = index.vocabulary(10)
    assert words.index("ギター") < words.index("ピアノ")


def test_the_extractions_entities_are_names_in_their_own_spelling() -> None:
    index = _index(_memory("a", "あなたの妹は来月結婚する。", entities=("ゆき",)))
    assert index.vocabulary(1) == ["ゆき"]


def test_superseded_memories_do_not_count() -> None:
    index = _index(_memory("old", "あなたは鎌倉に行く予定だった。", superseded_by="new"),
                   _memory("new", "あなたは日光に行く予定だ。"))
    words = index.vocabulary(10)
    assert "日光" in words and "鎌倉" not in words


def test_the_limit_bounds_the_vocabulary_and_zero_gives_nothing() -> None:
    index = _index(*(_memory(str(i), f"あなたは{place}に行った。") for i, place in
                     enumerate(["箱根", "鎌倉", "日光", "京都", "金沢"])))
    assert len(index.vocabulary(3)) == 3
    assert index.vocabulary(0) == []


def test_the_vocabulary_follows_changes_to_the_index() -> None:
    index = _index(_memory("a", "あなたは箱根に行った。"))
    assert "箱根" in index.vocabulary(10)
    index.add(_memory("b", "あなたは金沢に行った。"))
    assert "金沢" in index.vocabulary(10)
    index.remove("a")
    assert "箱根" not in index.vocabulary(10)


async def test_the_engine_answers_from_the_users_own_memories(make_engine: Any) -> None:
    engine = await make_engine()
    await engine.add_memories("me", [_memory("a", "あなたは箱根に行く予定だ。")])
    await engine.add_memories("you", [_memory("b", "あなたは金沢に行く予定だ。", user="you")])
    assert "箱根" in await engine.recognition_vocabulary("me", 10)
    assert "金沢" not in await engine.recognition_vocabulary("me", 10)


async def test_a_forgotten_memory_leaves_the_vocabulary(make_engine: Any) -> None:
    engine = await make_engine()
    await engine.add_memories("me", [_memory("a", "あなたは箱根に行く予定だ。"),
                                     _memory("b", "あなたの犬のポチはご飯を食べない。",
                                             entities=("ポチ",))])
    assert "ポチ" in await engine.recognition_vocabulary("me", 10)
    await engine.forget("me", "b")
    assert "ポチ" not in await engine.recognition_vocabulary("me", 10)
