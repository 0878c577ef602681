"""The ready indexes of a cache: bounded by an estimate of their memory, the least
recently used dropped first, never the one just installed."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from omoide.memory.config import IndexSettings
from omoide.memory.index.lru import DEFAULT_DIMS, ENTRY_BYTES, ReadyIndexes, vector_bytes
from omoide.memory.index.person_index import UserIndex
from omoide.types import Memory

WHEN = datetime(2026, 9, 27, 21, 0, tzinfo=ZoneInfo("Asia/Tokyo"))


def _index(user: str, memories: int) -> UserIndex:
    idx = UserIndex(user, "Asia/Tokyo")
    for i in range(memories):
        idx.add(Memory(id=f"{user}-{i}", user=user, text=f"ギターの練習 {i}", created_at=WHEN))
    return idx


def _ready(room_for_memories: int, dropped: list[str]) -> ReadyIndexes:
    budget_mb = room_for_memories * (ENTRY_BYTES + vector_bytes(DEFAULT_DIMS)) / 2**20
    return ReadyIndexes(IndexSettings(budget_mb=budget_mb),
                        on_drop=lambda user, idx: dropped.append(user))


def test_over_the_budget_the_least_recently_used_index_is_dropped() -> None:
    dropped: list[str] = []
    ready = _ready(4, dropped)
    ready.install("a", _index("a", 2))
    ready.install("b", _index("b", 2))
    ready.used("a")
    ready.install("c", _index("c", 2))
    assert dropped == ["b"]
    assert "a" in ready and "c" in ready and "b" not in ready


def test_an_index_alone_over_the_budget_is_kept_rather_than_dropped_on_install() -> None:
    dropped: list[str] = []
    ready = _ready(1, dropped)
    ready.install("a", _index("a", 3))
    assert "a" in ready and dropped == []


def test_an_index_without_room_is_not_let_in_by_has_room_for() -> None:
    ready = _ready(4, [])
    ready.install("a", _index("a", 3))
    assert not ready.has_room_for(_index("b", 2))
    assert ready.has_room_for(_index("b", 1))
