"""Workers killed with SIGKILL during extraction lose nothing and duplicate nothing.

Three extraction workers (real processes, :mod:`extraction_worker`) share one PostgreSQL
journal and one real Chroma server (``chroma run``); while they extract 3 people's 300
exchanges, the longest-running one is killed with SIGKILL and replaced, 30 times
(kills land while the chat model is asked, with batches open or planned, while the store
is written). Then: every exchange is consumed (lost 0), none in two finished batches,
and the store holds each fact exactly once (duplicated 0).
"""

from __future__ import annotations

import asyncio
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from omoide.memory.journal.postgres_journal import PostgresJournal
from omoide.testing.doubles import HashEmbedder, HashEmbedderConfig
from omoide.types import Exchange
from omoide_store_chroma.config import ChromaStoreConfig
from omoide_store_chroma.local_server import LocalChromaServer, chroma_command
from omoide_store_chroma.store import ChromaStore

JST = timezone(timedelta(hours=9))
USERS = ["mika", "taro", "hana"]
PER_USER = 100
KILLS = 30
WORKER = Path(__file__).with_name("extraction_worker.py")

pytestmark = pytest.mark.slow


@pytest.fixture
def chroma(tmp_path: Path) -> Iterator[LocalChromaServer]:
    if chroma_command() is None:
        pytest.fail("the `chroma` command (from the chromadb package) is not installed")
    with LocalChromaServer(tmp_path / "chroma") as server:
        yield server


def exchanges() -> list[Exchange]:
    return [Exchange(f"{u}-{n:03d}", u, f"{u}の話その{n}", "うん",
                     datetime(2026, 12, 1, 9, 0, tzinfo=JST) + timedelta(minutes=n))
            for u in USERS for n in range(PER_USER)]


class Workers:
    """The worker processes, each started on its own data dir."""

    def __init__(self, url: str, port: int, root: Path) -> None:
        self.url, self.port, self.root = url, port, root
        self.started = 0
        self.running: list[subprocess.Popen[str]] = []

    def start(self) -> subprocess.Popen[str]:
        self.started += 1
        proc = subprocess.Popen(
            [sys.executable, str(WORKER), self.url, str(self.port),
             str(self.root / f"worker{self.started}"), *USERS],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.running.append(proc)
        return proc

    def kill_one_working(self) -> bool:
        """SIGKILL the longest-running worker a random moment after it said it works;
        False when it had already finished (nothing left to extract)."""
        proc = self.running[0]
        assert proc.stdout is not None
        if proc.stdout.readline().strip() == "working":  # blocks until it started
            time.sleep(random.uniform(0.2, 1.0))
        working = proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        self.running.remove(proc)
        return working

    def finish(self) -> None:
        for proc in self.running:
            proc.wait(timeout=300)


def stored_texts(port: int) -> Counter[str]:
    async def read() -> Counter[str]:
        store = ChromaStore(ChromaStoreConfig(host="127.0.0.1", port=port))
        embedder = HashEmbedder(HashEmbedderConfig(dims=64))
        await store.start()
        await embedder.start()
        await store.open(await embedder.fingerprint())
        texts: Counter[str] = Counter()
        try:
            for user in USERS:
                texts.update(str(r.payload["text"]) for r in await store.scroll(user))
        finally:
            await store.stop()
        return texts
    return asyncio.run(read())


def test_killed_workers_lose_and_duplicate_nothing(postgres_url: str, tmp_path: Path,
                                                   chroma: LocalChromaServer) -> None:
    journal = PostgresJournal(postgres_url, path=tmp_path / "journal.sqlite3")
    journal.open()
    for ex in exchanges():
        journal.append_sync(ex)
    workers = Workers(postgres_url, chroma.port, tmp_path)
    for _ in range(3):
        workers.start()
    kills = 0
    for _ in range(KILLS):
        kills += workers.kill_one_working()
        workers.start()
    workers.finish()
    pending = asyncio.run(journal.pending_summary())
    batches = [b for u in USERS for b in asyncio.run(journal.batches(u))]
    journal.close()

    assert pending == []  # lost 0: every exchange consumed
    done = Counter(i for b in batches if b.state == "done" for i in b.exchange_ids)
    assert sorted(done) == sorted(e.id for e in exchanges())
    assert set(done.values()) == {1}  # no exchange in two finished batches
    texts = stored_texts(chroma.port)
    assert sorted(texts) == sorted(f"あなたは{e.user_text}。" for e in exchanges())
    assert set(texts.values()) == {1}  # duplicated 0
    asked = Counter(line.strip() for f in tmp_path.glob("worker*/asked.txt")
                    for line in f.read_text(encoding="utf-8").splitlines())
    assert kills >= KILLS - 3, f"only {kills} kills landed while workers were working"
    print(f"{kills} kills of working workers, {workers.started} workers,"
          f" {len(batches)} batches ({Counter(b.state for b in batches)}), lost 0,"
          f" duplicated 0; the chat model asked {sum(asked.values())} times for"
          f" {len(asked)} exchanges ({sum(n > 1 for n in asked.values())} asked again"
          " after a kill)")
