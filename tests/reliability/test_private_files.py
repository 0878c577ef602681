"""Reliability (issue 27, point 2): the code that creates a file in the data dir makes
it private itself, not only the umask a server sets when it claims the dir.

A one-off command, a test harness or a plugin's helper process that never claimed the
data dir runs with the usual umask 022; the files omoide writes there must still be
0600 (SQLite's ``-wal``/``-shm``/``-journal`` files included: SQLite gives them the
database file's mode). Each test runs the real code that writes one kind of file —
the trace log, the announcement queue, the forget-undo copies, the memories waiting
for their vectors, the Qdrant shard manifest, the timer book, the re-embed backup —
under umask 022 in this process, which never claims the dir.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from omoide.announcements import Announcement, AnnouncementQueue
from omoide.config import load_settings
from omoide.memory.control.forget_undo import ForgetWithUndo
from omoide.memory.control.pending_vectors import PendingVectors
from omoide.memory.index.person_index import UserIndex
from omoide.memory.index.saved_indexes import IndexStore
from omoide.memory.journal.exchange_log import Journal
from omoide.memory.journal.manifest import DataManifest, JournalRecord
from omoide.memory.journal.spill import SpillFile
from omoide.memory_client.local import LocalMemoryClient
from omoide.pipeline.trace import TraceLog, TurnTrace
from omoide.private_files import connect_private, open_private
from omoide.types import Emotion, Exchange, Memory

CONFIG = """
server: {{data_dir: {data}}}
asr: {{use: fake}}
embed: {{use: fake, dims: 64}}
store: {{use: qdrant, path: {data}/qdrant}}
chat: {{use: fake}}
tts: {{use: fake}}
"""


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


def loose(root: Path, *, skip: str | None = None) -> list[str]:
    """Files and folders under ``root`` that group or others may read."""
    out = []
    for path in [root, *root.rglob("*")]:
        if skip and skip in path.relative_to(root).parts:
            continue
        mode = stat.S_IMODE(path.lstat().st_mode)
        if mode & 0o077:
            out.append(f"{oct(mode)} {path.relative_to(root)}")
    return out


def test_an_sqlite_database_and_the_files_beside_it_are_private(tmp_path: Path) -> None:
    for journal_mode in ("WAL", "DELETE"):
        db = connect_private(tmp_path / "data" / f"{journal_mode}.sqlite3",
                             isolation_level=None)
        db.execute(f"PRAGMA journal_mode={journal_mode}")
        db.execute("BEGIN")
        db.execute("CREATE TABLE t (x)")
        db.execute("INSERT INTO t VALUES (1)")
        siblings = sorted(p.name for p in (tmp_path / "data").iterdir())
        db.execute("COMMIT")
        db.close()
        assert any(name.endswith(("-wal", "-journal")) for name in siblings), siblings
    assert loose(tmp_path / "data") == []


def test_a_file_opened_private_keeps_its_mode_when_it_already_exists(
        tmp_path: Path) -> None:
    with open_private(tmp_path / "log.jsonl", "a") as f:
        f.write("one\n")
    with open_private(tmp_path / "log.jsonl", "a") as f:
        f.write("two\n")
    assert (tmp_path / "log.jsonl").read_text() == "one\ntwo\n"
    assert stat.S_IMODE((tmp_path / "log.jsonl").stat().st_mode) == 0o600


def test_the_trace_log_and_the_announcement_queue_are_private(tmp_path: Path) -> None:
    data = tmp_path / "data"
    TraceLog(data / "traces.jsonl").record(TurnTrace("t1", "alice"))
    queue = AnnouncementQueue(data / "announcements.json")
    asyncio.run(queue.add(Announcement("a1", "alice", "おはよう", Emotion.NEUTRAL,
                                       datetime.now(UTC))))
    assert {p.name for p in data.iterdir()} >= {"traces.jsonl", "announcements.json"}
    assert loose(data) == []


def test_the_stores_of_the_memory_engine_are_private(tmp_path: Path) -> None:
    """Forget-undo copies, memories waiting for vectors, the Qdrant plugin's shard
    manifest, fingerprint and lock, and a re-embed backup. Qdrant's own files (made by
    the library) are left to the umask a claiming process sets and to the fix-up at
    the claim; so, for now, are the journal's files and the saved indexes."""
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    config = tmp_path / "omoide.yaml"
    config.write_text(CONFIG.format(data=data), encoding="utf-8")

    async def work() -> None:
        async with LocalMemoryClient.open(load_settings(config), ("embed", "store")) as c:
            engine = c.engine
            await engine.import_memories("alice", [{"text": "ラーメンが好き"},
                                                   {"text": "猫を飼っている"}])
            await engine.vectors.add("alice", ["not-stored-yet"])
            undo = ForgetWithUndo(engine, data / "recently_forgotten.sqlite3")
            memories = await engine.list_memories("alice")
            assert await undo.forget("alice", memories[0].id) is not None
            undo.close()
            await engine.reembed(["alice"], backup=data / "backup" / "reembed.jsonl")
    asyncio.run(work())
    names = {p.name for p in data.rglob("*")}
    assert {"recently_forgotten.sqlite3", "vectors_pending.sqlite3", "reembed.jsonl"} <= names
    assert any("manifest" in n for n in names), names
    covered = [p for p in data.rglob("*") if p.is_file() and (
        p.name in {"recently_forgotten.sqlite3", "vectors_pending.sqlite3", "reembed.jsonl",
                   "fingerprint.json", "omoide-shards.lock"} or "manifest.sqlite" in p.name)]
    assert len(covered) >= 6, sorted(n for n in names)
    assert [f"{oct(stat.S_IMODE(p.stat().st_mode))} {p.name}" for p in covered
            if stat.S_IMODE(p.stat().st_mode) != 0o600] == []


def test_the_timer_book_is_private(tmp_path: Path) -> None:
    from omoide_skills.timer_book import Timer, TimerBook

    async def due(timer: Timer) -> None:
        return None

    async def work() -> None:
        book = TimerBook(tmp_path / "data" / "timers.json", due)
        now = datetime.now(UTC)
        await book.add(Timer("t1", "alice", "timer", now + timedelta(hours=1), now,
                             duration_s=3600.0))
    asyncio.run(work())
    assert json.loads((tmp_path / "data" / "timers.json").read_text())["timers"]
    assert loose(tmp_path / "data") == []


def test_pending_vectors_file_is_private_from_its_first_write(tmp_path: Path) -> None:
    pending = PendingVectors(tmp_path / "data" / "vectors_pending.sqlite3")
    asyncio.run(pending.add("alice", ["m1"]))
    pending.close()
    assert loose(tmp_path / "data") == []


def test_the_saved_indexes_are_private(tmp_path: Path) -> None:
    index = UserIndex("alice", "Asia/Tokyo")
    index.add(Memory("m1", "alice", "あなたは紅茶が好きだ。", datetime.now(UTC)))
    store = IndexStore(tmp_path / "data" / "indexes.sqlite3", max_memories=100)
    assert store.save("alice", index)
    assert loose(tmp_path / "data") == []


def test_the_journal_its_spill_file_and_the_manifest_are_private(tmp_path: Path) -> None:
    data = tmp_path / "data"
    exchange = Exchange("x1", "alice", "こんにちは", "こんにちは!", datetime.now(UTC))
    journal = Journal(data / "journal.sqlite3")
    journal.open()
    journal.append_sync(exchange)
    journal.close()
    SpillFile(data / "journal.spill.jsonl").append(exchange)
    DataManifest(JournalRecord("journal.sqlite3", 1)).save(data)
    assert loose(data) == []
