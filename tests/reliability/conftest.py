"""What the reliability tests share: a real ``omoide serve`` process on a data directory.

The stack is the real write path — SQLite journal, Qdrant local store, the stand-in chat
model's extraction — with test doubles where nothing of it is under test (ASR, TTS and a
hashing embedder).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

CONFIG = """
server: {server}
asr: {{use: fake}}
embed: {{use: fake, dims: 64}}
store: {{use: qdrant, path: {data}/qdrant}}
chat: {{use: {chat}}}
tts: {{use: fake}}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """A running ``omoide serve`` and how to talk to it (as the data dir's admin)."""

    process: subprocess.Popen[str]
    port: int
    data: Path

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def _headers(self) -> dict[str, str]:
        from omoide.testing.auth import admin_headers
        return {"Content-Type": "application/json", **admin_headers(self.data)}

    def get(self, path: str) -> Any:
        request = urllib.request.Request(self.url(path), headers=self._headers())
        try:
            with urllib.request.urlopen(request, timeout=30) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as exc:
            return json.loads(exc.read())

    def post(self, path: str, body: dict[str, Any]) -> Any:
        request = urllib.request.Request(self.url(path), json.dumps(body).encode(),
                                         self._headers())
        with urllib.request.urlopen(request, timeout=120) as r:
            return json.loads(r.read())

    def stop(self) -> None:
        """Stop it as an operator would (Ctrl-C): it shuts down cleanly."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            self.process.wait(timeout=60)


def write_config(data: Path, port: int, chat: str = "standin", extra: str = "",
                 server: dict[str, Any] | None = None) -> Path:
    """The config of a server on ``data``: ``server`` adds settings to its ``server:``
    section (e.g. ``{"limits": {"max_connections_per_source": 256}}``)."""
    path = data.with_name(data.name + ".yaml")
    section = {"host": "127.0.0.1", "port": port, "data_dir": str(data), **(server or {})}
    path.write_text(CONFIG.format(server=json.dumps(section), data=data, chat=chat) + extra,
                    encoding="utf-8")
    return path


def start(config: Path, port: int, *flags: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "omoide.cli", "serve", "--config",
                             str(config), *flags], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def serve(data: Path, *flags: str, chat: str = "standin", extra: str = "",
          server: dict[str, Any] | None = None, timeout: float = 180) -> Server:
    """Start ``omoide serve`` on ``data`` and wait until it is ready; ``chat`` is the
    chat stage's YAML after ``use:``, ``extra`` more YAML for the config, ``server``
    settings for its ``server:`` section."""
    port = _free_port()
    running = Server(start(write_config(data, port, chat, extra, server), port, *flags),
                     port, data)
    return _ready(running, timeout)


def _ready(server: Server, timeout: float) -> Server:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            _, err = server.process.communicate()
            raise AssertionError(f"omoide serve exited with {server.process.returncode}:\n"
                                 f"{err[-3000:]}")
        try:
            if server.get("/healthz")["status"] == "ready":
                return server
        except (OSError, ValueError):
            pass
        time.sleep(0.2)
    server.process.kill()
    raise AssertionError("omoide serve did not become ready")


def refused(data: Path, *flags: str) -> tuple[int, str]:
    """Start ``omoide serve`` on ``data`` expecting it to refuse: (exit code, stderr)."""
    port = _free_port()
    process = start(write_config(data, port), port, *flags)
    try:
        _, err = process.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        process.kill()
        raise AssertionError("omoide serve did not stop by itself") from None
    return process.returncode, err


@pytest.fixture
def serve_omoide() -> Iterator[Any]:
    """``serve_omoide(data, *flags, chat=..., extra=..., server={...})`` starts
    ``omoide serve`` and waits until it is ready; every server still running is killed
    after the test."""
    servers: list[Server] = []

    def run(data: Path, *flags: str, chat: str = "standin", extra: str = "",
            server: dict[str, Any] | None = None) -> Server:
        server = serve(data, *flags, chat=chat, extra=extra, server=server)
        servers.append(server)
        return server

    yield run
    for s in servers:
        if s.process.poll() is None:
            s.process.kill()
            s.process.wait()


@pytest.fixture
def refused_start() -> Any:
    """``refused_start(data, *flags)`` starts ``omoide serve`` expecting it to refuse:
    returns (exit code, stderr)."""
    return refused


HISTORY = ["来週の土曜日に友達と箱根に行くんだ", "ラーメンが好きなんだ",
           "友達の佐藤さんは札幌に住んでる", "最近、仕事終わりにギターの練習をしてるんだ"]


@pytest.fixture(scope="session")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory a real server left behind: turns journaled, facts extracted
    into Qdrant, shut down cleanly. Copy it before changing it."""
    data = tmp_path_factory.mktemp("history") / "data"
    server = serve(data)
    try:
        for text in HISTORY:
            server.post("/v1/turns", {"user": "alice", "text": text,
                                      "now": "2026-09-27T20:50:00+09:00"})
        server.post("/v1/turns", {"user": "alice", "text": "おはよう"})
        report = server.post("/v1/memory/extract", {"user": "alice"})
        assert len(report["stored"]) >= 4, report
    finally:
        server.stop()
    return data


@pytest.fixture(scope="session")
def start_omoide() -> Any:
    """The plain ``serve`` function, for module-scoped servers (stop them yourself)."""
    return serve
