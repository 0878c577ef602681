"""Indexes outlive the process: a restart loads them instead of analysing every memory,
unless the store changed, the code changed, or the copy is damaged; a forgotten
memory never survives in a saved copy."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from omoide.components import ScrollPage
from omoide.memory.config import MemoryConfig
from omoide.memory.engine import MemoryEngine
from omoide.memory.index.person_index import UserIndex
from omoide.memory.index.saved_indexes import IndexStore, index_version
from omoide.memory.store_payload import to_payload
from omoide.testing.doubles import (
    HashEmbedder,
    HashEmbedderConfig,
    InMemoryStore,
    MemoryStoreConfig,
)
from omoide.types import Memory, VectorRecord

JST = ZoneInfo("Asia/Tokyo")
NOW = datetime(2026, 9, 27, 21, 0, tzinfo=JST)


def memory(i: int) -> Memory:
    return Memory(f"m{i}", "me", f"あなたは毎週{i}回ギターの練習をしている。", NOW)


class CountingStore(InMemoryStore):
    """The in-memory store double, counting pages read and counts asked; ``shared_store``
    makes it a store other processes write."""

    pages = 0
    calls = 0
    shared_store = False

    async def _scroll_page(self, user: str, cursor: str | None, limit: int) -> ScrollPage:
        self.pages += 1
        self.calls += 1
        return await super()._scroll_page(user, cursor, limit)

    async def _count(self, user: str) -> int:
        self.calls += 1
        return await super()._count(user)

    @property
    def shared(self) -> bool:
        return self.shared_store


Start = Callable[..., Awaitable[MemoryEngine]]


@pytest.fixture
async def start(tmp_path: Path) -> AsyncIterator[Start]:
    """Starts engines over one data directory and one store (restarts of one server)."""
    store = CountingStore(MemoryStoreConfig())
    await store.start()
    embedder = HashEmbedder(HashEmbedderConfig(dims=32))
    await embedder.start()
    running: list[MemoryEngine] = []

    async def make(**config: Any) -> MemoryEngine:
        engine = MemoryEngine(MemoryConfig(**{"time_budget_ms": 10_000.0, **config}),
                              embedder=embedder, store=store, chat=None,
                              data_dir=tmp_path, timezone="Asia/Tokyo")
        await engine.start()
        running.append(engine)
        return engine

    yield make
    for engine in running:
        await engine.stop()


async def test_a_restart_loads_the_index_instead_of_reading_the_store(start: Start) -> None:
    first = await start()
    await first.add_memories("me", [memory(i) for i in range(5)])
    await first.index("me")
    await first.stop()
    store: CountingStore = first.store  # type: ignore[assignment]
    read = store.pages
    second = await start()
    index = await second.index("me")
    assert sorted(m.id for m in index.memories()) == [f"m{i}" for i in range(5)]
    assert store.pages == read
    assert (second.indexes.stats().loaded, second.indexes.stats().built) == (1, 0)


async def test_a_write_by_another_engine_on_the_same_data_keeps_the_saved_copy_current(
        start: Start) -> None:
    first = await start()
    await first.add_memories("me", [memory(i) for i in range(3)])
    await first.index("me")
    await first.stop()
    command = await start()  # `omoide memory import` while the server is stopped
    await command.add_memories("me", [memory(9)])
    await command.stop()
    server = await start()
    index = await server.index("me")
    assert "m9" in index and len(index) == 4
    assert (server.indexes.stats().loaded, server.indexes.stats().built) == (1, 0)


async def restarted_with_a_saved_index(start: Start) -> MemoryEngine:
    """An engine started over the data of one that indexed three memories of "me" and
    stopped: their index is saved, not loaded."""
    engine = await start()
    await engine.add_memories("me", [memory(i) for i in range(3)])
    await engine.index("me")
    await engine.stop()
    return await start()


async def test_a_write_while_the_index_is_not_in_memory_keeps_the_saved_copy_current(
        start: Start) -> None:
    again = await restarted_with_a_saved_index(start)
    await again.add_memories("me", [memory(9)])
    await again.indexes.settle()
    index = await again.index("me")
    assert "m9" in index and len(index) == 4
    assert (again.indexes.stats().loaded, again.indexes.stats().built) == (1, 0)


async def test_a_forget_while_the_index_is_not_in_memory_drops_the_saved_copy(
        start: Start) -> None:
    again = await restarted_with_a_saved_index(start)
    await again.forget("me", "m1")
    index = await again.index("me")
    assert "m1" not in index and len(index) == 2
    assert (again.indexes.stats().loaded, again.indexes.stats().built) == (0, 1)


async def test_over_a_shared_store_a_saved_index_is_used_then_rebuilt_when_the_count_differs(
        start: Start) -> None:
    first = await start()
    store: CountingStore = first.store  # type: ignore[assignment]
    store.shared_store = True
    await first.add_memories("me", [memory(i) for i in range(3)])
    await first.index("me")
    await first.stop()
    extra = memory(9)  # another server wrote to the shared store meanwhile
    await store.upsert("me", [VectorRecord(extra.id, (await first.embedder.embed(
        [extra.text]))[0], to_payload(extra))])
    second = await start()
    first_turn = await second.index("me")
    assert "m9" not in first_turn  # at once, from the saved copy ...
    second.indexes.peek("me")      # ... and checked against the store right after
    await second.indexes.settle()
    index = second.indexes.peek("me")
    assert index is not None and "m9" in index
    assert (second.indexes.stats().loaded, second.indexes.stats().built) == (1, 1)


async def test_a_restart_over_a_store_only_it_opens_does_not_touch_the_store(
        start: Start) -> None:
    first = await start()
    await first.add_memories("me", [memory(i) for i in range(3)])
    await first.index("me")
    await first.stop()
    store: CountingStore = first.store  # type: ignore[assignment]
    calls = store.calls
    second = await start()
    await second.index("me")
    assert store.calls == calls


async def test_a_forgotten_memory_leaves_no_saved_copy_behind(start: Start,
                                                            tmp_path: Path) -> None:
    first = await start()
    await first.add_memories("me", [memory(i) for i in range(3)])
    await first.index("me")
    await first.indexes.settle()  # a copy with m1 is saved
    assert IndexStore(tmp_path / "indexes.sqlite3", 100).load("me") is not None
    assert await first.forget("me", "m1")
    await first.indexes.settle()
    saved = IndexStore(tmp_path / "indexes.sqlite3", 100).load("me")
    assert saved is None or "m1" not in saved[0]
    await first.stop()  # saves the index without it
    loaded = IndexStore(tmp_path / "indexes.sqlite3", 100).load("me")
    assert loaded is not None and "m1" not in loaded[0] and loaded[1] == 2


def test_a_copy_made_by_other_code_is_not_loaded(tmp_path: Path) -> None:
    saved = IndexStore(tmp_path / "i.sqlite3", 100)
    idx = UserIndex("me", "Asia/Tokyo")
    idx.add(memory(1))
    assert saved.save("me", idx)
    saved._conn().execute("UPDATE indexes SET version='older'")
    assert saved.load("me") is None


def test_a_damaged_copy_is_dropped_and_not_loaded(tmp_path: Path) -> None:
    saved = IndexStore(tmp_path / "i.sqlite3", 100)
    saved._conn().execute("INSERT INTO indexes VALUES ('me', ?, 1, ?)",
                          (index_version(), b"not a pickle"))
    assert saved.load("me") is None
    assert saved._conn().execute("SELECT COUNT(*) FROM indexes").fetchone()[0] == 0


def test_an_index_changed_while_it_was_pickled_is_not_written(tmp_path: Path) -> None:
    saved = IndexStore(tmp_path / "i.sqlite3", 100)
    idx = UserIndex("me", "Asia/Tokyo")
    idx.add(memory(1))
    assert not saved.save("me", idx, unchanged=lambda: False)
    assert saved.load("me") is None


def test_an_index_over_the_size_limit_is_not_kept(tmp_path: Path) -> None:
    saved = IndexStore(tmp_path / "i.sqlite3", 2)
    idx = UserIndex("me", "Asia/Tokyo")
    for i in range(3):
        idx.add(memory(i))
    saved.save("me", idx)
    assert saved.load("me") is None


def test_the_file_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    saved = IndexStore(tmp_path / "i.sqlite3", 100)
    saved.save("me", UserIndex("me", "Asia/Tokyo"))
    assert (tmp_path / "i.sqlite3").stat().st_mode & 0o077 == 0
    assert sqlite3.connect(tmp_path / "i.sqlite3").execute(
        "SELECT memories FROM indexes").fetchone() == (0,)


async def test_a_write_drops_a_large_saved_copy_rather_than_rewrite_it(
        start: Start, monkeypatch: pytest.MonkeyPatch) -> None:
    from omoide.memory.index import saved_indexes as index_store
    monkeypatch.setattr(index_store, "EXTEND_AT_MOST", 2)
    again = await restarted_with_a_saved_index(start)
    await again.add_memories("me", [memory(9)])
    index = await again.index("me")
    assert "m9" in index and len(index) == 4
    assert (again.indexes.stats().loaded, again.indexes.stats().built) == (0, 1)
