"""Reliability (issue 27, point 7): a large import stores first and embeds afterwards.

Embedding is what an import costs (multilingual-e5-small: ~25 ms of CPU a text here, so
10,000 memories are minutes of CPU however they are batched). An import of more than a
few hundred new memories therefore stores every memory at once with a placeholder
vector and notes it as waiting for its own; the vectors are filled in the background
(a server) or by ``omoide memory vectors --fill``. These tests hold the promises that
make that safe: the import is durable and idempotent when it returns, a memory is found
by its words at once, the fill gives each memory its own vector, a memory forgotten
meanwhile stays forgotten, a kill -9 at any point loses nothing, and a restarted server
resumes the fill. ``tests/reliability/measure_import.py`` times it.

Real parts: the engine as the CLI's local backend builds it, a Qdrant local store on
disk, the robust read engine, the hashing embedder of the test doubles.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from omoide.config import load_settings
from omoide.memory.control.pending_vectors import (
    FILE_NAME,
    INLINE_EMBED_MAX,
    VECTORS_WAITING,
    placeholder_vector,
)
from omoide.memory.engine import MemoryEngine
from omoide.memory_client.local import LocalMemoryClient

COUNT = INLINE_EMBED_MAX + 44
CONFIG = """
server: {{data_dir: {data}}}
asr: {{use: fake}}
embed: {{use: fake, dims: 64}}
store: {{use: qdrant, path: {data}/qdrant}}
chat: {{use: fake}}
tts: {{use: fake}}
"""
PLACES = ["箱根", "札幌", "京都", "大阪", "沖縄", "横浜", "金沢", "仙台", "福岡", "名古屋"]
T = TypeVar("T")


def text(i: int) -> str:
    return "函館の朝市で海鮮丼を食べた" if i == 123 else f"{PLACES[i % 10]}で{i}番目の写真を撮った"


def export(count: int) -> bytes:
    return "".join(json.dumps({"id": f"m{i}", "text": text(i),
                               "created_at": "2026-01-01T09:00:00+09:00"},
                              ensure_ascii=False) + "\n" for i in range(count)).encode()


def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "omoide.yaml"
    path.write_text(CONFIG.format(data=tmp_path / "data"), encoding="utf-8")
    return path


def with_engine(config: Path, work: Callable[[MemoryEngine], Awaitable[T]]) -> T:
    async def run() -> T:
        async with LocalMemoryClient.open(load_settings(config), ("embed", "store")) as c:
            return await work(c.engine)
    return asyncio.run(run())


async def vectors_of(engine: MemoryEngine, user: str) -> dict[str, np.ndarray]:
    return {r.id: np.asarray(r.vector) for r in await engine.store.scroll(user)}


def is_placeholder(vector: np.ndarray) -> bool:
    return bool(np.allclose(vector, placeholder_vector(len(vector)), atol=1e-5))


def test_a_large_import_is_stored_at_once_found_by_its_words_and_counted_as_waiting(
        tmp_path: Path) -> None:
    async def work(engine: MemoryEngine) -> None:
        report = await engine.import_memories(
            "alice", [json.loads(line) for line in export(COUNT).splitlines()])
        assert (len(report.stored), report.skipped, report.vectors_pending) == (COUNT, 0, COUNT)
        vectors = await vectors_of(engine, "alice")
        assert len(vectors) == COUNT and all(is_placeholder(v) for v in vectors.values())
        await engine.index("alice")  # the person's index (built on first recall) is ready
        recall = await engine.recall("alice", "函館の朝市で何を食べたんだっけ?",
                                     datetime.fromisoformat("2026-02-01T12:00:00+09:00"))
        assert [r.memory.text for r in recall.memories][:1] == [text(123)], recall
        assert VECTORS_WAITING in recall.shortfalls  # the turn says its memory is partial
        again = await engine.import_memories(
            "alice", [json.loads(line) for line in export(COUNT).splitlines()])
        assert (len(again.stored), again.skipped) == (0, COUNT)
        assert await engine.vectors.count("alice") == COUNT
    with_engine(config_file(tmp_path), work)


def test_a_small_import_is_embedded_before_it_returns(tmp_path: Path) -> None:
    async def work(engine: MemoryEngine) -> None:
        report = await engine.import_memories(
            "alice", [json.loads(line) for line in export(10).splitlines()])
        assert report.vectors_pending == 0
        vectors = await vectors_of(engine, "alice")
        assert len(vectors) == 10 and not any(is_placeholder(v) for v in vectors.values())
    with_engine(config_file(tmp_path), work)


def test_the_fill_gives_each_memory_its_own_vector_and_a_forgotten_one_stays_forgotten(
        tmp_path: Path) -> None:
    async def work(engine: MemoryEngine) -> None:
        report = await engine.import_memories(
            "alice", [json.loads(line) for line in export(COUNT).splitlines()])
        gone = report.stored[7]
        assert await engine.forget("alice", gone.id)
        progress = await engine.fill_vectors()
        assert (progress.filled, progress.dropped) == (COUNT - 1, 1)
        assert await engine.vectors.count() == 0
        recall = await engine.recall("alice", "函館の朝市で何を食べたんだっけ?",
                                     datetime.fromisoformat("2026-02-01T12:00:00+09:00"))
        assert VECTORS_WAITING not in recall.shortfalls
        vectors = await vectors_of(engine, "alice")
        assert gone.id not in vectors and len(vectors) == COUNT - 1
        for m in report.stored[:20]:
            if m.id != gone.id:
                own = (await engine.embedder.embed([m.text], "document"))[0]
                assert np.allclose(vectors[m.id], own / np.linalg.norm(own), atol=1e-5)
    with_engine(config_file(tmp_path), work)


def pending_rows(data: Path) -> int:
    path = data / FILE_NAME
    if not path.exists():
        return 0
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM pending").fetchone()[0])


def test_an_import_killed_part_way_loses_nothing_and_the_same_file_completes_it(
        tmp_path: Path) -> None:
    config = config_file(tmp_path)
    source = tmp_path / "memories.jsonl"
    count = 4000
    source.write_bytes(export(count))
    command = [sys.executable, "-m", "omoide.cli", "memory", "import", "--config",
               str(config), "--user", "alice", str(source)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    while pending_rows(tmp_path / "data") == 0 and process.poll() is None:
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)  # noted as waiting, part of it stored or not yet
    process.communicate(timeout=60)
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    filled = subprocess.run([sys.executable, "-m", "omoide.cli", "memory", "vectors",
                             "--config", str(config), "--fill"],
                            capture_output=True, text=True, timeout=600)
    assert filled.returncode == 0, filled.stderr
    assert "0 memories wait for their vectors" in filled.stdout

    async def work(engine: MemoryEngine) -> None:
        vectors = await vectors_of(engine, "alice")
        assert len(vectors) == count
        assert not any(is_placeholder(v) for v in vectors.values())
    with_engine(config, work)


def test_a_server_started_with_vectors_waiting_fills_them(tmp_path: Path) -> None:
    config = config_file(tmp_path)

    async def stored_first(engine: MemoryEngine) -> Any:
        return await engine.import_memories(
            "alice", [json.loads(line) for line in export(COUNT).splitlines()])
    with_engine(config, stored_first)

    async def as_a_server(engine: MemoryEngine) -> None:
        assert await engine.vectors.count() == COUNT
        engine.warm_indexes()  # what a server does once it is up
        for _ in range(6000):
            if await engine.vectors.count() == 0:
                break
            await asyncio.sleep(0.05)
        vectors = await vectors_of(engine, "alice")
        assert await engine.vectors.count() == 0
        assert not any(is_placeholder(v) for v in vectors.values())
    with_engine(config, as_a_server)


def test_a_server_fills_the_vectors_of_an_import_it_took_and_says_how_many_wait(
        tmp_path: Path, serve_omoide: Any) -> None:
    server = serve_omoide(tmp_path / "data")
    request = urllib.request.Request(
        server.url("/v1/users/alice/memories/import"), export(COUNT),
        {**server._headers(), "Content-Type": "application/x-ndjson"})
    with urllib.request.urlopen(request, timeout=120) as answer:
        body = json.loads(answer.read())
    assert (body["imported"], body["vectors_pending"]) == (COUNT, COUNT)
    waiting = [server.get("/v1/users/alice/vectors")["vectors_pending"]]
    while waiting[-1] and len(waiting) < 3000:
        time.sleep(0.1)
        waiting.append(server.get("/v1/users/alice/vectors")["vectors_pending"])
    assert waiting[-1] == 0, waiting[-5:]
    assert waiting == sorted(waiting, reverse=True)   # only ever fewer
    assert len(server.get("/v1/users/alice/memories")["memories"]) == COUNT


def test_a_fill_that_fails_is_tried_again_and_nothing_is_lost(
        tmp_path: Path, monkeypatch: Any) -> None:
    import omoide.memory.engine as engine_module
    monkeypatch.setattr(engine_module, "FILL_RETRY_S", 0.2)
    config = config_file(tmp_path)

    async def work(engine: MemoryEngine) -> None:
        await engine.import_memories(
            "alice", [json.loads(line) for line in export(COUNT).splitlines()])
        embed = engine.embedder.embed
        failures = []

        async def down_once(*args: Any, **kwargs: Any) -> Any:
            if not failures:
                failures.append(1)
                raise ConnectionError("embedder down")
            return await embed(*args, **kwargs)
        monkeypatch.setattr(engine.embedder, "embed", down_once)
        engine.warm_indexes()
        for _ in range(6000):
            if failures and await engine.vectors.count() == 0:
                break
            await asyncio.sleep(0.05)
        assert failures and await engine.vectors.count() == 0
        vectors = await vectors_of(engine, "alice")
        assert len(vectors) == COUNT and not any(is_placeholder(v) for v in vectors.values())
    with_engine(config, work)
