"""The read path's shortcuts for large indexes choose what the plain computation chooses:
the candidate pool, the best first and the temporal channel are worked out with set
operations and arrays instead of a Python step per memory, and give the same answers."""

from __future__ import annotations

import heapq
import random
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from omoide.memory.index.person_index import LexicalMatch, UserIndex
from omoide.memory.language.block_text import _TAG_NAME, escape_block_text, escape_memory_text
from omoide.memory.language.temporal import DateSpan
from omoide.memory.recall.robust.fusion import MAX_POOL, best_first, bounded_pool
from omoide.types import Memory

NOW = datetime(2026, 9, 27, 21, 0, tzinfo=ZoneInfo("Asia/Tokyo"))


def _match(score: float) -> LexicalMatch:
    return LexicalMatch(score, score, 0.0)


def test_the_pool_of_thousands_is_the_best_a_full_sort_gives() -> None:
    rnd = random.Random(3)
    candidates = {f"m{i}" for i in range(5000)}
    temporal = {c: rnd.choice([0.0, 0.5, 1.0]) for c in candidates if rnd.random() < 0.7}
    lexical = {c: _match(rnd.choice([1.0, 2.0, 4.5])) for c in candidates if rnd.random() < 0.3}
    best_lex = max(m.score for c, m in lexical.items() if c in candidates)
    expected = set(heapq.nlargest(
        MAX_POOL, candidates, key=lambda c: temporal.get(c, 0.0)
        + (lexical[c].score / best_lex if c in lexical else 0.0)))
    assert bounded_pool(candidates, lexical, temporal) == expected


def test_the_best_first_are_those_a_full_sort_gives_newer_first_on_ties() -> None:
    index = UserIndex("me", "Asia/Tokyo")
    rnd = random.Random(4)
    fused: dict[str, float] = {}
    for i in range(300):
        index.add(Memory(f"m{i}", "me", f"あなたは{i}回目の散歩をした。",
                         NOW - timedelta(days=rnd.randrange(30))))
        fused[f"m{i}"] = rnd.choice([0.1, 0.2, 0.3])
    for wanted in (1, 3, 10):
        def order(c: str) -> tuple[float, float]:
            m = index.get(c)
            assert m is not None
            return (-fused[c], -m.created_at.timestamp())

        expected = heapq.nsmallest(wanted, set(fused), key=order)
        assert best_first(index, set(fused), fused, wanted) == expected


def test_a_day_outranks_a_habit_on_its_weekday_and_superseded_memories_are_left_out() -> None:
    index = UserIndex("me", "Asia/Tokyo")
    index.add(Memory("plan", "me", "あなたは2026年10月3日に箱根に行く予定だ。", NOW))
    index.add(Memory("habit", "me", "あなたは毎週土曜日にジョギングをする。", NOW))
    index.add(Memory("old", "me", "あなたは毎週土曜日にヨガに通う。", NOW, superseded_by="habit"))
    saturday = DateSpan(date(2026, 10, 3), date(2026, 10, 3), "来週の土曜日")
    found = index.temporal((saturday,))
    assert found["plan"] == 1.0
    assert found["habit"] == found["old"] == 0.5
    assert index.live_only(found) == {"plan": 1.0, "habit": 0.5}


def test_plain_japanese_memory_text_is_placed_as_it_is_and_anything_else_escaped() -> None:
    rnd = random.Random(5)
    alphabet = "あいうアイウー日本語箱根0123４５、。（）「」・！？〜～"
    for _ in range(500):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randrange(0, 30)))
        assert escape_memory_text(text) == escape_block_text(text, _TAG_NAME, "(メモ)") == text
    assert escape_memory_text("箱根 <retrieved_memory>") == "箱根 （(メモ)）"
    assert escape_memory_text("ｒｅｔｒｉｅｖｅｄ＿ｍｅｍｏｒｙ") == "(メモ)"
