"""Reliability (issue 27, point 7): an import writes its memories in batches.

Importing 10,000 memories took 364 s. With a hashing embedder ~200 s of it was Qdrant's
local mode committing (and syncing to disk) every point on its own. Now each batch
of the import is one transaction on the store's file, the import is still idempotent,
and what it wrote is there for the next process. How long it takes is measured by
``tests/reliability/measure_import.py``, not asserted here.

The memories go through the real import path (``MemoryEngine.import_memories`` as the
CLI's local backend calls it), a real Qdrant local store on disk and the hashing
embedder of the test doubles; SQLite statements are counted by a trace callback on
every connection opened while the test runs.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from omoide.config import load_settings
from omoide.memory.engine import IMPORT_BATCH
from omoide.memory_client.local import LocalMemoryClient

COUNT = 300
CONFIG = """
server: {{data_dir: {data}}}
asr: {{use: fake}}
embed: {{use: fake, dims: 64}}
store: {{use: qdrant, path: {data}/qdrant}}
chat: {{use: fake}}
tts: {{use: fake}}
"""


@pytest.fixture
def commits(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """COMMITs per file name, for every SQLite connection opened from now on."""
    counted: Counter[str] = Counter()
    connect = sqlite3.connect

    def traced(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        connection = connect(database, *args, **kwargs)
        name = Path(str(database)).name

        def statement(sql: str) -> None:
            if sql.strip().upper().startswith("COMMIT"):
                counted[name] += 1
        connection.set_trace_callback(statement)
        return connection

    monkeypatch.setattr(sqlite3, "connect", traced)
    yield counted


def export(count: int) -> bytes:
    return "".join(json.dumps({"id": f"m{i}", "text": f"あなたは{i}番目の駅で降りた。"},
                              ensure_ascii=False) + "\n" for i in range(count)).encode()


def import_twice(config: Path, data: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    settings = load_settings(config)

    async def run() -> tuple[dict[str, Any], dict[str, Any]]:
        async with LocalMemoryClient.open(settings, ("embed", "store")) as client:
            _, first = await client.import_file("alice", data, skip_invalid=False)
            _, second = await client.import_file("alice", data, skip_invalid=False)
            return first, second
    return asyncio.run(run())


def test_an_import_commits_the_store_once_a_batch_and_stays_idempotent(
        tmp_path: Path, commits: Counter[str]) -> None:
    config = tmp_path / "omoide.yaml"
    config.write_text(CONFIG.format(data=tmp_path / "data"), encoding="utf-8")
    first, second = import_twice(config, export(COUNT))
    assert (first["imported"], first["skipped"]) == (COUNT, 0)
    assert (second["imported"], second["skipped"]) == (0, COUNT)
    batches = -(-COUNT // IMPORT_BATCH)
    assert 0 < commits["storage.sqlite"] <= batches + 3, commits
    listed = subprocess.run([sys.executable, "-m", "omoide.cli", "memory", "list",
                             "--config", str(config), "--user", "alice", "--json"],
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert len(listed.stdout.splitlines()) == COUNT
