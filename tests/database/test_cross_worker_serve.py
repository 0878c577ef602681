"""Two ``omoide serve`` workers (real processes, their own data dirs) on one PostgreSQL
database and one Chroma server (`chroma run`): what a person says on one worker becomes
a memory there (the offline stand-in extracts it) and a turn on the other recalls it;
a memory imported on the first and then forgotten there stops being recalled on the
second; a memory imported by ``omoide memory import`` (a one-off command with its own
data dir on the same database and store) is recalled by both.

The second worker's index of the person is built by a turn before anything is written,
and the shared store's count check (``memory.index.refresh_s``) is an hour: the
announcement between the workers is what brings the index up to date.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

chroma = pytest.importorskip("omoide_store_chroma")
from omoide_store_chroma.local_server import (  # noqa: E402
    LocalChromaServer,
    chroma_command,
    free_port,
)

CONFIG = """
assistant: {{name: かな, timezone: Asia/Tokyo}}
server: {{data_dir: {data}, host: 127.0.0.1, port: {port}}}
database: {{url: {{$env: OMOIDE_DATABASE_URL}}}}
memory: {{engine: robust, index: {{refresh_s: 3600}}, extraction: {{max_exchanges: 1}}}}
asr: {{use: fake}}
embed: {{use: fake}}
store: {{use: chroma, host: 127.0.0.1, port: {chroma_port}}}
chat: {{use: standin}}
tts: {{use: fake}}
"""
NOW = "2026-09-27T21:00:00+09:00"
PLAN = "来週の土曜日に友達と箱根に行くんだ。"
ASKED = "箱根の予定って覚えてる?"
WAIT_S = 60.0
"""A bound on a busy machine, not a measure (`omoide bench workers` measures)."""


@pytest.fixture
def workers(omoide_workers: Any, tmp_path: Path,
            ) -> Iterator[tuple[httpx.Client, list[str], Path]]:
    """(a client with the admin token, the workers' URLs, a config for one-off commands:
    its own data dir, the same database and store)."""
    if chroma_command() is None:
        pytest.skip("the `chroma` command (from the chromadb package) is not installed")
    with LocalChromaServer(tmp_path / "chroma") as store:
        def config(data: Path, port: int) -> str:
            return CONFIG.format(data=data, port=port, chroma_port=store.port)

        command_config = tmp_path / "command.yaml"
        command_config.write_text(config(tmp_path / "command", free_port()), encoding="utf-8")
        with omoide_workers(2, config) as served, httpx.Client(
                timeout=60, headers={"Authorization": f"Bearer {served.admin}"}) as client:
            yield client, served.urls, command_config


def turn(client: httpx.Client, base: str, text: str) -> dict[str, Any]:
    r = client.post(f"{base}/v1/turns", json={"user": "alice", "text": text, "now": NOW})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def recalled(client: httpx.Client, base: str) -> list[str]:
    body = turn(client, base, ASKED)
    return [m["text"] for m in body.get("memories") or []] + \
        [f["text"] for f in body.get("profile") or []]


def until(check: Any) -> bool:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return False


@pytest.mark.slow
def test_memories_written_on_one_worker_or_by_a_command_reach_the_other_workers_turns(
        workers: tuple[httpx.Client, list[str], Path], postgres_url: str,
        tmp_path: Path) -> None:
    client, (first, second), command_config = workers
    assert not any("箱根" in t for t in recalled(client, second))  # its index is built now
    turn(client, first, PLAN)  # extracted on the first worker (one exchange is enough)
    assert until(lambda: any("箱根" in t for t in recalled(client, second)))

    imported = client.post(f"{first}/v1/users/alice/memories/import", json=[{
        "id": "x1", "text": "あなたは毎週木曜日に陶芸教室に通っている。", "kind": "habit"}])
    assert imported.status_code == 200, imported.text

    def pottery() -> list[str]:
        body = turn(client, second, "陶芸教室っていつだっけ?")
        return [m["id"] for m in body.get("memories") or []] + \
            [f["id"] for f in body.get("profile") or []]

    assert until(lambda: len(pottery()) > 0)
    [memory_id] = [i for i in pottery()
                   if "陶芸" in client.get(f"{first}/v1/users/alice/memories/{i}").text]
    assert client.delete(f"{first}/v1/users/alice/memories/{memory_id}").status_code == 200
    assert until(lambda: memory_id not in pottery())

    export = tmp_path / "calligraphy.jsonl"
    export.write_text(json.dumps({"id": "c1", "text": "あなたは毎月第二日曜日に書道教室に行く。",
                                  "kind": "habit"}, ensure_ascii=False) + "\n",
                      encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "omoide.cli", "memory", "import", "--config",
         str(command_config), "--user", "alice", str(export)], capture_output=True,
        text=True, timeout=300, env={**os.environ, "OMOIDE_DATABASE_URL": postgres_url})
    assert done.returncode == 0, done.stdout + done.stderr

    def calligraphy(base: str) -> bool:
        body = turn(client, base, "書道教室っていつだっけ?")
        return any("書道" in m["text"] for m in body.get("memories") or []) or \
            any("書道" in f["text"] for f in body.get("profile") or [])

    assert until(lambda: calligraphy(first) and calligraphy(second))
