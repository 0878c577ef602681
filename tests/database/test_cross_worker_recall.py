"""A memory written on one worker is recalled on another: several memory engines
(workers) on one PostgreSQL database and one real Chroma server (`chroma run`), each
with its own data dir, its own store client and its own cached indexes.

Each worker's index of the person is built before the other writes, and the count
check of a shared store (``memory.index.refresh_s``) is set to an hour: what brings
the index up to date is the announcement (:mod:`omoide.memory.index.peer_writes`),
not a rebuild. Embeddings are the test doubles' hashes; recall is the robust engine.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import psycopg
import pytest

from omoide.config_schema import DatabaseSettings
from omoide.memory.config import MemoryConfig
from omoide.memory.engine import MemoryEngine
from omoide.memory.index.peer_channel import CHANNEL
from omoide.memory.store_payload import USER_FIELD
from omoide.testing.doubles import HashEmbedder, HashEmbedderConfig
from omoide.testing.postgresql import ThrowawayPostgres
from omoide.types import VectorRecord

chroma = pytest.importorskip("omoide_store_chroma")
from omoide_store_chroma.config import ChromaStoreConfig  # noqa: E402
from omoide_store_chroma.local_server import LocalChromaServer, chroma_command  # noqa: E402
from omoide_store_chroma.store import ChromaStore  # noqa: E402

JST = ZoneInfo("Asia/Tokyo")
NOW = datetime(2026, 12, 1, 21, 0, tzinfo=JST)
HAKONE = {"id": "x1", "text": "あなたは来週の土曜日に友達と箱根に行く予定だ。",
          "created_at": "2026-12-01T20:50:00+09:00", "kind": "plan"}
ASKED = "箱根に行く予定って覚えてる?"
WAIT_S = 20.0
"""How long a test waits for the other worker to see a change before it fails (the
time itself is measured by `omoide bench workers`, never asserted)."""


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalChromaServer]:
    if chroma_command() is None:
        pytest.skip("the `chroma` command (from the chromadb package) is not installed")
    with LocalChromaServer(tmp_path_factory.mktemp("chroma")) as server:
        yield server


Worker = Callable[..., Awaitable[MemoryEngine]]
STOPPED: list[MemoryEngine] = []
"""Workers a test stopped itself (the fixture does not stop them again)."""


@pytest.fixture
async def make_worker(postgres_url: str, chroma_server: LocalChromaServer, tmp_path: Path,
                      request: pytest.FixtureRequest) -> AsyncIterator[Worker]:
    async with workers_on(postgres_url, chroma_server, tmp_path,
                          f"c{abs(hash(request.node.name)) % 10**9}") as make:
        yield make


@contextlib.asynccontextmanager
async def workers_on(url: str, chroma_server: LocalChromaServer, tmp_path: Path,
                     collection: str) -> AsyncIterator[Worker]:
    """Makes workers on the database ``url`` and one collection of the Chroma server."""
    engines: list[MemoryEngine] = []
    stopped = STOPPED

    async def make(*, reconnect_s: float = 1.0, catch_up_s: float = 30.0,
                   data_dir: Path | None = None) -> MemoryEngine:
        store = ChromaStore(ChromaStoreConfig(host=chroma_server.host, port=chroma_server.port,
                                              collection=collection))
        await store.start()
        embedder = HashEmbedder(HashEmbedderConfig(dims=64))
        await embedder.start()
        config = MemoryConfig.model_validate({"time_budget_ms": 10_000.0,
                                              "index": {"refresh_s": 3600.0}})
        engine = MemoryEngine(config, embedder=embedder, store=store, chat=None,
                              timezone="Asia/Tokyo",
                              data_dir=data_dir or tmp_path / f"worker{len(engines)}",
                              database=DatabaseSettings(url=url, pool_size=2))
        assert engine.peers is not None
        engine.peers.reconnect_s = reconnect_s
        engine.peers.catch_up_s = catch_up_s
        await engine.start()
        engines.append(engine)
        return engine

    try:
        yield make
    finally:
        for engine in engines:
            if engine not in stopped:
                await engine.stop()
            await engine.store.stop()


async def recalled(worker: MemoryEngine, user: str, query: str = ASKED) -> set[str]:
    """The texts a turn's recall on ``worker`` brings (memories and profile)."""
    recall = await worker.recall(user, query, NOW)
    texts = {m.memory.text for m in recall.memories}
    return texts | {f.text for f in recall.profile.facts}


async def until(check: Callable[[], Awaitable[bool]]) -> bool:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if await check():
            return True
        await asyncio.sleep(0.05)
    return False


async def ready_index(worker: MemoryEngine, user: str) -> None:
    """``user``'s index built on ``worker`` (their first turn there)."""
    await recalled(worker, user)
    await worker.indexes.settle()
    assert worker.indexes.holds(user)


async def test_a_memory_imported_on_one_worker_is_recalled_by_a_turn_on_another(
        make_worker: Worker) -> None:
    a, b, c = await make_worker(), await make_worker(), await make_worker()
    for worker in (b, c):
        await ready_index(worker, "alice")
        assert HAKONE["text"] not in await recalled(worker, "alice")
    report = await a.import_memories("alice", [HAKONE])
    assert len(report.stored) == 1
    for worker in (b, c):
        assert await until(lambda w=worker: _has(w, "alice", str(HAKONE["text"])))
        assert worker.peers is not None and worker.peers.applied >= 1
        assert worker.peers.caught_up == 0  # applied by id, not by reading the store


async def test_forgetting_on_one_worker_stops_the_recall_on_another(make_worker: Worker,
                                                                    ) -> None:
    a, b = await make_worker(), await make_worker()
    [memory] = (await a.import_memories("alice", [HAKONE])).stored
    await ready_index(b, "alice")
    assert HAKONE["text"] in await recalled(b, "alice")
    assert await a.forget("alice", memory.id)
    assert await until(lambda: _lacks(b, "alice", str(HAKONE["text"])))


async def test_a_supersession_on_one_worker_reaches_the_other_workers_index(
        make_worker: Worker) -> None:
    a, b = await make_worker(), await make_worker()
    [old] = (await a.import_memories("alice", [HAKONE])).stored
    await ready_index(b, "alice")
    [new] = (await a.import_memories("alice", [{
        "id": "x2", "text": "あなたは来週の日曜日に友達と箱根に行く予定だ。",
        "created_at": "2026-12-01T20:55:00+09:00", "kind": "plan"}])).stored
    await a.set_kind("alice", old.id, "episodic")

    async def changed() -> bool:
        held = (await b.index("alice")).get(old.id)
        return held is not None and held.kind == "episodic" and \
            (await b.index("alice")).get(new.id) is not None

    assert await until(changed)


async def test_a_worker_whose_listening_connection_dropped_catches_up_from_the_versions(
        make_worker: Worker, postgres_url: str) -> None:
    a = await make_worker()
    b = await make_worker(reconnect_s=3.0)  # stays deaf a while after losing its connection
    assert b.peers is not None
    await ready_index(b, "alice")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        [(dropped,)] = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE application_name = %s", (f"omoide-peer-listen-{b.peers.worker}",),
        ).fetchall()
    assert dropped
    assert await until(lambda: _true(not b.peers.listening))  # type: ignore[union-attr]
    await a.import_memories("alice", [HAKONE])  # announced while b hears nothing
    assert await until(lambda: _has(b, "alice", str(HAKONE["text"])))
    assert b.peers.caught_up >= 1  # by comparing versions once it listened again
    assert b.peers.listening


async def test_a_forget_during_a_database_restart_reaches_the_other_worker_once_it_is_back(
        chroma_server: LocalChromaServer, tmp_path: Path) -> None:
    own = ThrowawayPostgres().start()  # restarted here: not the session's cluster
    try:
        async with workers_on(own.create_database("restart"), chroma_server, tmp_path,
                              "restart") as make:
            a, b = await make(), await make()
            [memory] = (await a.import_memories("alice", [HAKONE])).stored
            await ready_index(b, "alice")
            assert HAKONE["text"] in await recalled(b, "alice")
            own.pause()
            assert await a.forget("alice", memory.id)  # the store forgets; no database
            assert a.peers is not None and a.peers.unannounced
            assert HAKONE["text"] in await recalled(b, "alice")  # b cannot know yet
            own.resume()
            assert await until(lambda: _lacks(b, "alice", str(HAKONE["text"])))
            assert not a.peers.unannounced
    finally:
        own.stop()


async def test_a_version_whose_notification_never_came_is_caught_up_by_the_periodic_check(
        make_worker: Worker, postgres_url: str) -> None:
    a = await make_worker()
    b = await make_worker(catch_up_s=0.3)
    assert b.peers is not None
    await ready_index(b, "alice")
    # a change that reached the store and the version row, but whose NOTIFY was lost
    [memory] = (await a.import_memories("bob", [HAKONE])).stored
    record = (await a.store.get("bob", [memory.id]))[0]
    moved = VectorRecord("alice-x1", record.vector, {**record.payload, USER_FIELD: "alice"})
    await a.store.upsert("alice", [moved])
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("INSERT INTO memory_person_versions (person, version) VALUES"
                     " ('alice', 1) ON CONFLICT (person) DO UPDATE"
                     " SET version = memory_person_versions.version + 1")
    assert await until(lambda: _has(b, "alice", str(HAKONE["text"])))
    assert b.peers.caught_up >= 1 and b.peers.listening


async def test_a_worker_started_again_drops_what_changed_while_it_was_down(
        make_worker: Worker, tmp_path: Path) -> None:
    a = await make_worker()
    b = await make_worker(data_dir=tmp_path / "b")
    [memory] = (await a.import_memories("alice", [HAKONE])).stored
    await ready_index(b, "alice")  # built and saved in b's data dir
    await b.stop()
    STOPPED.append(b)
    assert (tmp_path / "b" / "peer_versions.json").exists()
    # while b is down: a change the store's count does not show
    await a.set_kind("alice", memory.id, "episodic")
    again = await make_worker(data_dir=tmp_path / "b")
    held = (await again.index("alice")).get(memory.id)
    assert held is not None and held.kind == "episodic"


async def test_a_large_import_is_announced_without_its_ids_and_caught_up_from_the_store(
        make_worker: Worker) -> None:
    a, b = await make_worker(), await make_worker()
    await ready_index(b, "alice")
    items = [{"id": f"m{i}", "text": f"あなたは{i}番目の駅で電車を降りたことがある。",
              "kind": "episodic"} for i in range(300)]
    await a.import_memories("alice", items)
    assert await until(lambda: _count(b, "alice", 300))
    assert b.peers is not None and b.peers.caught_up >= 1


async def test_the_version_table_counts_each_persons_changes(make_worker: Worker,
                                                             postgres_url: str) -> None:
    a = await make_worker()
    [memory] = (await a.import_memories("alice", [HAKONE])).stored
    await a.forget("alice", memory.id)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        rows = conn.execute("SELECT person, version FROM memory_person_versions").fetchall()
        conn.execute(f"LISTEN {CHANNEL}")  # the channel's name is a valid identifier
    assert rows == [("alice", 2)]


async def _has(worker: MemoryEngine, user: str, text: str) -> bool:
    return text in await recalled(worker, user)


async def _lacks(worker: MemoryEngine, user: str, text: str) -> bool:
    return text not in await recalled(worker, user)


async def _count(worker: MemoryEngine, user: str, n: int) -> bool:
    return len(await worker.index(user)) == n


async def _true(value: bool) -> bool:
    return value


async def test_a_forget_on_one_worker_is_undone_on_another(make_worker: Worker,
                                                           postgres_url: str,
                                                           tmp_path: Path) -> None:
    from omoide.memory.control.forget_undo import ForgetWithUndo

    a, b = await make_worker(), await make_worker()
    [memory] = (await a.import_memories("alice", [HAKONE])).stored
    await ready_index(a, "alice")
    undo_a = ForgetWithUndo(a, tmp_path / "a-forgotten.sqlite3", database_url=postgres_url)
    undo_b = ForgetWithUndo(b, tmp_path / "b-forgotten.sqlite3", database_url=postgres_url)
    try:
        ticket = await undo_a.forget("alice", memory.id)
        assert ticket is not None
        assert await until(lambda: _lacks(a, "alice", str(HAKONE["text"])))
        assert [t.ticket for t in await undo_b.pending("alice")] == [ticket.ticket]
        assert await undo_b.restore("bob", ticket.ticket) == ("unknown", None)
        outcome, restored = await undo_b.restore("alice", ticket.ticket)
        assert outcome == "restored" and restored is not None
        assert (restored.id, restored.text) == (memory.id, memory.text)
        assert await until(lambda: _has(a, "alice", str(HAKONE["text"])))  # A's index too
        assert (await undo_a.restore("alice", ticket.ticket))[0] == "unknown"  # used once
        assert await undo_a.pending("alice") == []
    finally:
        undo_a.close()
        undo_b.close()
    assert not (tmp_path / "a-forgotten.sqlite3").exists()   # nothing in the data dir
