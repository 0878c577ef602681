"""Honest degradation: a failing journal spills and says so; missing data refuses to start.

Journal failures here are real SQLite failures: another connection holds the journal's
write lock (as a backup tool or a second process would), so writes fail after the busy
timeout (set short for the tests).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from omoide.components.store import StoreCapabilities
from omoide.memory.journal.data_guard import DataMissing
from omoide.memory.journal.keeper import JournalingFailed
from omoide.memory.journal.manifest import DataManifest
from omoide.memory.journal.spill import exchange_to_json
from omoide.testing.doubles import InMemoryStore, MemoryStoreConfig
from omoide.types import Exchange, Memory

JST = ZoneInfo("Asia/Tokyo")
AT = datetime(2026, 9, 27, 20, 0, tzinfo=JST)


def said(i: int, text: str = "猫が好きなんだ", user: str = "me") -> Exchange:
    return Exchange(f"ex{i}", user, text, "いいね", AT + timedelta(minutes=i))


@contextmanager
def journal_locked(path: Path) -> Iterator[None]:
    """Another connection holds the journal's write lock while inside."""
    other = sqlite3.connect(path, isolation_level=None, timeout=0)
    other.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


async def impatient(engine: Any) -> Any:
    """The engine with a journal that gives up on a lock after 50 ms."""
    engine.journal.busy_timeout_s = 0.05
    engine.journal.reopen()
    engine.keeper.probe_seconds = 0.05
    return engine


async def journaled_ids(engine: Any) -> list[str]:
    return [e.id for e in await engine.journal.pending("me")]


# -- the spill file ---------------------------------------------------------------------
async def test_a_failing_journal_keeps_the_exchange_in_the_spill_file_and_says_so(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await impatient(await make_engine())
    with journal_locked(engine.journal.path):
        with pytest.raises(JournalingFailed, match=r"kept in .*journal-spill.jsonl"):
            await engine.record_exchange(said(1))
        assert engine.problem is not None and "locked" in engine.problem
    spilled = engine.keeper.spill.path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["id"] for line in spilled] == ["ex1"]


async def test_spilled_exchanges_reach_the_journal_once_it_works_again(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await impatient(await make_engine())
    with journal_locked(engine.journal.path):
        for i in (1, 2):
            with pytest.raises(JournalingFailed):
                await engine.record_exchange(said(i))
    await engine.record_exchange(said(3))
    assert await journaled_ids(engine) == ["ex1", "ex2", "ex3"]
    assert engine.problem is None and not engine.keeper.spill.path.exists()


async def test_the_probe_recovers_the_journal_without_waiting_for_a_turn(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await impatient(await make_engine())
    with journal_locked(engine.journal.path):
        with pytest.raises(JournalingFailed):
            await engine.record_exchange(said(1))
        await asyncio.sleep(0.3)
        assert engine.problem is not None  # still locked: still failed
    for _ in range(100):
        if engine.problem is None:
            break
        await asyncio.sleep(0.05)
    assert engine.problem is None and await journaled_ids(engine) == ["ex1"]


async def test_a_spill_file_left_by_a_previous_run_is_journaled_at_start(make_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "left"
    data.mkdir()
    spill = data / "journal-spill.jsonl"
    spill.write_text(exchange_to_json(said(1)) + "\n" + exchange_to_json(said(2))[:30],
                     encoding="utf-8")   # the second line was cut short by a crash
    engine = await make_engine(data_dir=data)
    assert await journaled_ids(engine) == ["ex1"] and not spill.exists()


# -- refusing to start over missing data -------------------------------------------------
class PersistentStore(InMemoryStore):
    """The in-memory store double, claiming to persist (its data lives in the object)."""

    capabilities = StoreCapabilities(persistent=True)


async def filled(make_engine, data: Path, store: Any = None) -> Any:  # type: ignore[no-untyped-def]
    """An engine in ``data`` with two exchanges and a memory, stopped."""
    store = store or PersistentStore(MemoryStoreConfig())
    engine = await make_engine(data_dir=data, store=store)
    await engine.record_exchange(said(1))
    await engine.record_exchange(said(2))
    await engine.add_memories("me", [Memory("m1", "me", "あなたは猫が好きだ。", AT)])
    await engine.stop()
    return engine


async def test_the_manifest_records_the_journal_and_that_memories_were_stored(make_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    await filled(make_engine, tmp_path / "d")
    manifest = DataManifest.load(tmp_path / "d")
    assert manifest is not None
    assert (manifest.journal.file, manifest.journal.exchanges) == ("journal.sqlite3", 2)
    assert manifest.store.memories_stored


async def test_a_zero_length_journal_refuses_to_start_naming_the_file(make_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    old = await filled(make_engine, tmp_path / "d")
    old.journal.path.write_bytes(b"")
    with pytest.raises(DataMissing, match=r"(?s)journal.sqlite3: the journal is empty \(0 bytes\)"
                       r".*--accept-data-loss"):
        await make_engine(data_dir=tmp_path / "d", store=old.store)


async def test_a_journal_with_a_garbage_page_refuses_to_start(make_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    old = await filled(make_engine, tmp_path / "d")
    with old.journal.path.open("r+b") as f:
        f.seek(4096)
        f.write(b"\xde\xad\xbe\xef" * 1024)
    with pytest.raises(DataMissing, match="the journal is damaged"):
        await make_engine(data_dir=tmp_path / "d", store=old.store)


async def test_a_missing_journal_where_the_manifest_saw_exchanges_refuses_to_start(make_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    old = await filled(make_engine, tmp_path / "d")
    old.journal.path.unlink()
    with pytest.raises(DataMissing, match=r"the journal is missing; .* at least 2 exchanges"):
        await make_engine(data_dir=tmp_path / "d", store=old.store)


async def test_a_store_emptied_since_memories_were_stored_refuses_to_start(make_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    await filled(make_engine, tmp_path / "d")
    with pytest.raises(DataMissing, match=r"the vector store \(fake\) holds no memories"):
        await make_engine(data_dir=tmp_path / "d", store=PersistentStore(MemoryStoreConfig()))


async def test_accepting_the_loss_sets_the_damaged_journal_aside_and_keeps_what_reads(make_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "d"
    engine = await make_engine(data_dir=data, store=PersistentStore(MemoryStoreConfig()))
    for i in range(400):
        await engine.record_exchange(said(i, f"話その{i:03d}。" + "長い話です。" * 20))
    await engine.stop()
    raw = engine.journal.path.read_bytes()
    page = raw.index("話その200".encode()) // 4096     # a page of the table's rows
    with engine.journal.path.open("r+b") as f:
        f.seek(4096 * page)
        f.write(b"\x00garbage" * 512)
    with pytest.raises(DataMissing):
        await make_engine(data_dir=data, store=engine.store)
    again = await make_engine(data_dir=data, store=engine.store, accept_data_loss=True)
    kept = await again.journal.count_exchanges()
    assert 380 < kept < 400
    assert list(data.glob("journal.sqlite3.damaged-*"))
    assert DataManifest.load(data).journal.exchanges == kept  # type: ignore[union-attr]
    await again.stop()
    await make_engine(data_dir=data, store=engine.store)       # starts again without help


async def test_a_fresh_data_dir_starts_and_an_older_one_gets_a_manifest(make_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    old = await filled(make_engine, tmp_path / "d")
    DataManifest.path_in(tmp_path / "d").unlink()           # as before manifests existed
    engine = await make_engine(data_dir=tmp_path / "d", store=old.store)
    await engine.stop()
    manifest = DataManifest.load(tmp_path / "d")
    assert manifest is not None and manifest.journal.exchanges == 2
    assert manifest.store.memories_stored
