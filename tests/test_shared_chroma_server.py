"""A store server shared by several processes: omoide's server and `omoide memory ...`
use one real Chroma server (`chroma run`, started here) at the same time.

The command has a config of its own (its own data dir, the same store): with the
server's config it would go through the running server's API instead of the store.

Real parts: the Chroma server, e5 embeddings, the robust engine, the offline chat
stand-in (which extracts facts); ASR, VAD and TTS are the test doubles (text turns only).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from omoide.config import validate_config, wanted_components
from omoide.plugins import build_registry
from omoide.server.app import create_app
from omoide.testing.auth import admin_client
from omoide_store_chroma.local_server import LocalChromaServer, chroma_command

NOW = "2026-09-27T21:00:00+09:00"


@pytest.fixture(scope="module")
def configs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(the server's config, the command's config): one Chroma server, two data dirs."""
    if chroma_command() is None:
        pytest.skip("the `chroma` command (from the chromadb package) is not installed")
    root = tmp_path_factory.mktemp("shared-chroma")
    with LocalChromaServer(root / "chroma") as chroma:
        config = {
            "assistant": {"name": "かな", "timezone": "Asia/Tokyo"},
            # the server re-reads an index the CLI changed once it is this old
            "memory": {"engine": "robust", "index": {"refresh_s": 0.2}},
            "asr": {"use": "fake"}, "tts": {"use": "fake"},
            "embed": {"use": "e5"},
            "store": {"use": "chroma", "host": chroma.host, "port": chroma.port},
            "chat": {"use": "standin"},
        }
        paths = []
        for name in ("server", "command"):
            config["server"] = {"data_dir": str(root / name)}
            path = root / f"{name}.yaml"
            path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
            paths.append(path)
        yield paths[0], paths[1]


@pytest.fixture(scope="module")
def config_file(configs: tuple[Path, Path]) -> Path:
    """The command's config."""
    return configs[1]


@pytest.fixture(scope="module")
def server(configs: tuple[Path, Path]) -> Iterator[TestClient]:
    raw: dict[str, Any] = yaml.safe_load(configs[0].read_text(encoding="utf-8"))
    settings = validate_config(raw, source=str(configs[0]))
    registry = build_registry(wanted_components(settings.envelope))
    with admin_client(create_app(settings, registry)) as client:
        deadline = time.monotonic() + 120
        while client.get("/healthz").json()["status"] == "starting":
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)
        assert client.get("/healthz").json()["status"] == "ready", client.get("/healthz").json()
        yield client


def cli(config_file: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "omoide.cli", "memory", args[0],
                             "--config", str(config_file), *args[1:]],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    return out


def turn(server: TestClient, user: str, text: str) -> dict[str, Any]:
    r = server.post("/v1/turns", json={"user": user, "text": text, "now": NOW})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_the_cli_imports_while_the_server_answers_and_the_server_then_recalls_it(
        server: TestClient, config_file: Path, tmp_path: Path) -> None:
    turn(server, "alice", "私の好きなケーキ覚えてる?")  # alice's index is built now
    export = tmp_path / "alice.jsonl"
    export.write_text(json.dumps({
        "id": "x1", "text": "あなたは来週の土曜日（2026年10月3日）に友達と箱根に行く予定だ。",
        "created_at": "2026-09-27T20:50:00+09:00", "kind": "plan"}, ensure_ascii=False) + "\n",
        encoding="utf-8")
    proc = cli(config_file, "import", "--user", "alice", str(export))
    answered = 0
    while proc.poll() is None:  # the server keeps answering while the CLI works
        turn(server, "bob", "週末の予定覚えてる?")
        answered += 1
    assert "imported 1 memories" in finish(proc)
    assert answered >= 1
    listed = server.get("/v1/users/alice/memories").json()["memories"]
    assert [m["text"] for m in listed] == [
        "あなたは来週の土曜日（2026年10月3日）に友達と箱根に行く予定だ。"]
    deadline = time.monotonic() + 60
    while True:  # alice's index was built before the import: it is refreshed in the background
        memories = turn(server, "alice", "箱根の予定覚えてる?")["memories"]
        if memories:
            break
        assert time.monotonic() < deadline, "the server never saw the CLI's memory"
        time.sleep(0.2)
    assert "箱根" in memories[0]["text"]


def test_the_cli_lists_what_the_server_extracted(server: TestClient,
                                                 config_file: Path) -> None:
    turn(server, "carol", "最近、仕事終わりにギターの練習をしてるんだ")
    r = server.post("/v1/memory/extract", json={"user": "carol"})
    assert r.status_code == 200, r.text
    assert r.json()["stored"], r.json()
    out = finish(cli(config_file, "list", "--user", "carol", "--json"))
    texts = [json.loads(line)["text"] for line in out.splitlines() if line.strip()]
    assert any("ギター" in t for t in texts), texts
