"""One person's store lost or damaged: noticed at start, named, and repairable.

The Qdrant store keeps each person's memories in a store of their own (a directory
under ``qdrant/shards/``), vouched for by a manifest beside them (how many memories,
a checksum of their ids). A start over a person's store that went missing or whose
``storage.sqlite`` is damaged is refused, naming the person, what is wrong and what to
do; ``--accept-data-loss`` starts anyway with that person degraded (``/healthz``, the
console's people view, their turns and listings say their memory is unavailable);
``omoide memory repair --user U`` rebuilds their store from the journal's extraction
results.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.conftest import Server, _free_port, start, write_config

pytestmark = pytest.mark.skipif(
    any(__import__("importlib").util.find_spec(m) is None
        for m in ("omoide_store_qdrant", "omoide_standins")),
    reason="needs the store_qdrant and standins plugins")


@pytest.fixture
def data(history: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "data"
    shutil.copytree(history, copy)
    return copy


def shard_of(data: Path, user: str) -> Path:
    digest = hashlib.sha256(user.encode()).hexdigest()[:24]
    return data / "qdrant" / "shards" / "memories" / digest[:2] / digest


def damage_header(data: Path, user: str) -> Path:
    storage = shard_of(data, user) / "collection" / "memories" / "storage.sqlite"
    with storage.open("r+b") as f:
        f.write(b"\x00" * 100)            # the SQLite header, gone
    return storage


def status_and_body(server: Server, path: str) -> tuple[int, Any]:
    from omoide.testing.auth import admin_headers
    request = urllib.request.Request(server.url(path), headers=admin_headers(server.data))
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.fixture
def serve_degraded() -> Any:
    """``serve_degraded(data, *flags)``: ``omoide serve`` once it answers (ready or
    degraded: the conftest's helper waits for ready); killed after the test."""
    servers: list[Server] = []

    def run(data: Path, *flags: str) -> Server:
        port = _free_port()
        server = Server(start(write_config(data, port), port, *flags), port, data)
        servers.append(server)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if server.process.poll() is not None:
                raise AssertionError(server.process.communicate()[1][-3000:])
            try:
                if server.get("/healthz")["status"] in ("ready", "degraded"):
                    return server
            except (OSError, ValueError):
                pass
            time.sleep(0.2)
        raise AssertionError("omoide serve did not answer")

    yield run
    for s in servers:
        if s.process.poll() is None:
            s.process.kill()
            s.process.wait()


def repair(data: Path, user: str) -> subprocess.CompletedProcess[str]:
    config = write_config(data, 1)
    return subprocess.run([sys.executable, "-m", "omoide.cli", "memory", "repair", "--config",
                           str(config), "--user", user], capture_output=True, text=True,
                          timeout=300, check=False)


def test_a_deleted_persons_store_refuses_to_start(data: Path, refused_start: Any) -> None:
    shutil.rmtree(shard_of(data, "alice"))
    code, err = refused_start(data)
    assert code == 1 and "Traceback" not in err
    assert "alice" in err and "missing" in err
    assert "omoide memory repair" in err and "--user alice" in err
    assert "--accept-data-loss" in err


def test_a_damaged_storage_header_refuses_to_start(data: Path, refused_start: Any) -> None:
    storage = damage_header(data, "alice")
    code, err = refused_start(data)
    assert code == 1 and "Traceback" not in err
    assert "alice" in err and "damaged" in err and storage.name in err
    assert "omoide memory repair" in err


def test_accepting_a_lost_store_marks_the_person_degraded(data: Path,
                                                          serve_degraded: Any) -> None:
    shutil.rmtree(shard_of(data, "alice"))
    server = serve_degraded(data, "--accept-data-loss")

    health = server.get("/healthz")
    assert health["status"] == "degraded"
    assert health["components"]["memory"]["state"] == "degraded"
    assert health["components"]["memory"]["people"] == ["alice"]

    turn = server.post("/v1/turns", {"user": "alice", "text": "箱根はどうだったっけ"})
    assert turn["reply"]
    notes = " ".join(turn["degraded"])
    assert "unavailable" in notes and "time budget" not in notes

    code, body = status_and_body(server, "/v1/users/alice/memories")
    assert code == 503
    assert "alice" in body["error"] and "omoide memory repair" in body["error"]

    code, people = status_and_body(server, "/v1/users")
    assert code == 200
    [alice] = [p for p in people["people"] if p["user"] == "alice"]
    assert alice["memory_unavailable"] and "missing" in alice["memory_unavailable"]

    other = server.post("/v1/turns", {"user": "bob", "text": "こんにちは"})
    assert not any("unavailable" in n for n in other["degraded"])


def test_repair_rebuilds_a_deleted_store_from_the_journal(data: Path,
                                                          serve_omoide: Any) -> None:
    shutil.rmtree(shard_of(data, "alice"))
    done = repair(data, "alice")
    assert done.returncode == 0, done.stderr
    assert "restored" in done.stdout and "could not restore 0" in done.stdout

    server = serve_omoide(data)                      # no longer refused
    assert server.get("/healthz")["status"] == "ready"
    memories = server.get("/v1/users/alice/memories")["memories"]
    assert len(memories) >= 4 and any("箱根" in m["text"] for m in memories)


def test_repair_sets_a_damaged_store_aside_and_rebuilds_it(data: Path,
                                                           serve_omoide: Any) -> None:
    damage_header(data, "alice")
    done = repair(data, "alice")
    assert done.returncode == 0, done.stderr
    assert "set aside" in done.stdout
    server = serve_omoide(data)
    memories = server.get("/v1/users/alice/memories")["memories"]
    assert any("ラーメン" in m["text"] for m in memories)


def test_a_large_repair_restores_first_and_the_vectors_are_filled_after(
        data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """More than a few hundred memories (here: any, the threshold lowered) are restored
    at once with placeholder vectors and embedded afterwards, as a large import's are."""
    import argparse
    import asyncio
    import os

    import numpy as np

    from omoide.commands.memory import _repair_store
    from omoide.config import load_settings
    from omoide.memory.control import repair as repair_module
    from omoide.memory.control.pending_vectors import FILE_NAME, placeholder_vector

    monkeypatch.setattr(repair_module, "INLINE_EMBED_MAX", 0)
    shutil.rmtree(shard_of(data, "alice"))
    config = write_config(data, 1)
    umask = os.umask(0o022)
    try:   # claiming the data dir sets this process's umask: give it back after
        args = argparse.Namespace(user="alice", json=True)
        assert asyncio.run(_repair_store(load_settings(config), args)) == 0
    finally:
        os.umask(umask)
    assert (data / FILE_NAME).exists()
    filled = subprocess.run([sys.executable, "-m", "omoide.cli", "memory", "vectors",
                             "--config", str(config), "--fill"],
                            capture_output=True, text=True, timeout=300)
    assert filled.returncode == 0, filled.stderr
    restored = int(filled.stdout.split(" vectors filled")[0].split()[-1])
    assert restored >= 4 and "0 memories wait for their vectors" in filled.stdout

    async def vectors() -> list[np.ndarray]:
        from omoide.memory_client.local import LocalMemoryClient
        async with LocalMemoryClient.open(load_settings(config), ("embed", "store")) as c:
            return [np.asarray(r.vector) for r in await c.engine.store.scroll("alice")]
    stored = asyncio.run(vectors())
    assert len(stored) == restored
    assert not any(np.allclose(v, placeholder_vector(len(v)), atol=1e-5) for v in stored)
