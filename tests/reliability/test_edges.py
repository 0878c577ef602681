"""Reliability: trust at the edges (issue 27, points 2-4), against a real ``omoide serve``.

- Personal data is private: the data dir is 0700 and every file in it 0600 after a
  session (turns, an import, extraction, a forget) started under umask 022, files an
  older version left readable included.
- Half-sent requests cannot take the server: a few hundred sockets from one address
  sending headers that never end are refused past the per-address cap or closed at the
  header timeout, while a turn from another address (127.0.0.2) is answered.
- Forwarded headers (X-Forwarded-For, Forwarded, X-Real-IP) change the address
  per-address limits count only when the connecting address is a trusted proxy.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from omoide.testing.auth import admin_headers

STAGES = """
asr: {use: fake}
embed: {use: fake, dims: 64}
store: {use: qdrant, path: %s/qdrant}
chat: {use: standin}
tts: {use: fake}
"""
ANOTHER_MACHINE = "127.0.0.2"   # loopback answers every 127.x address


@dataclass
class Running:
    process: subprocess.Popen[str]
    port: int
    data: Path

    def client(self, source: str = "127.0.0.1", timeout: float = 60) -> httpx.Client:
        """An HTTP client signed in as the admin whose connections come from ``source``."""
        return httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=timeout,
                            headers=admin_headers(self.data),
                            transport=httpx.HTTPTransport(local_address=source))

    def stop(self) -> str:
        """Stop it as an operator would (Ctrl-C); returns what it logged."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        _, err = self.process.communicate(timeout=60)
        return err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(data: Path, server: dict[str, Any]) -> Running:
    port = _free_port()
    config = data.with_name(data.name + ".yaml")
    section = {"host": "127.0.0.1", "port": port, "data_dir": str(data), **server}
    config.write_text(yaml.safe_dump({"server": section}) + STAGES % data, encoding="utf-8")
    process = subprocess.Popen([sys.executable, "-m", "omoide.cli", "serve", "--config",
                                str(config)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    running = Running(process, port, data)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"omoide serve exited: {running.stop()[-3000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).json()["status"] \
                    == "ready":
                return running
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.2)
    process.kill()
    raise AssertionError("omoide serve did not become ready")


@pytest.fixture
def serve() -> Iterator[Any]:
    """``serve(data, {server settings})``: a ready ``omoide serve``, killed afterwards."""
    started: list[Running] = []

    def run(data: Path, server: dict[str, Any] | None = None) -> Running:
        started.append(_serve(data, server or {}))
        return started[-1]

    yield run
    for running in started:
        if running.process.poll() is None:
            running.process.kill()
            running.process.communicate()


# -- 2. private files ---------------------------------------------------------------------

def _group_or_other_bits(root: Path) -> list[str]:
    loose = []
    for path in [root, *root.rglob("*")]:
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            continue
        wanted = 0o700 if stat.S_ISDIR(mode) else 0o600
        if stat.S_IMODE(mode) & 0o077 or (stat.S_ISREG(mode)
                                          and stat.S_IMODE(mode) & ~wanted):
            loose.append(f"{oct(stat.S_IMODE(mode))} {path.relative_to(root)}")
    return loose


def test_every_file_of_a_session_is_private_whatever_the_umask(serve: Any,
                                                                 tmp_path: Path) -> None:
    data = tmp_path / "data"
    old = os.umask(0o022)
    try:
        data.mkdir(mode=0o755)
        (data / "traces.jsonl").write_text("", encoding="utf-8")   # left by an older version
        os.chmod(data / "traces.jsonl", 0o644)
        server = serve(data)
    finally:
        os.umask(old)
    with server.client() as http:
        for text in ("ラーメンが好きなんだ", "友達の佐藤さんは札幌に住んでる"):
            assert http.post("/v1/turns", json={"user": "alice", "text": text}
                             ).status_code == 200
        assert http.post("/v1/memory/extract", json={"user": "alice"}).status_code == 200
        imported = http.post("/v1/users/bob/memories/import",
                             content='{"text": "ボブは猫を飼っている"}\n'
                                     '{"text": "ボブはコーヒーが好き"}\n',
                             headers={"content-type": "application/x-ndjson"})
        assert imported.status_code == 200, imported.text
        memories = http.get("/v1/users/bob/memories").json()["memories"]
        assert http.delete(f"/v1/users/bob/memories/{memories[0]['id']}").status_code == 200
    log = server.stop()
    names = {p.name for p in data.rglob("*")}
    assert {"journal.sqlite3", "traces.jsonl", "recently_forgotten.sqlite3"} <= names
    assert _group_or_other_bits(data) == []
    assert "made 2 files and folders" in log, log[-2000:]   # the dir and traces.jsonl


# -- 3. connection floods ---------------------------------------------------------------

HALF_A_HEAD = (b"POST /v1/turns HTTP/1.1\r\nHost: 127.0.0.1\r\n"
               b"Content-Type: application/json\r\nX-Slow: ")


def _half_sent(count: int, port: int) -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.connect(("127.0.0.1", port))
        with contextlib.suppress(OSError):   # refused at once: already closed
            s.sendall(HALF_A_HEAD)
        sockets.append(s)
    return sockets


def _answer(s: socket.socket, wait_s: float) -> bytes:
    """What the server sent before it closed ``s`` (waiting at most ``wait_s``)."""
    s.settimeout(wait_s)
    received = b""
    try:
        while chunk := s.recv(4096):
            received += chunk
    except ConnectionResetError:
        pass
    except TimeoutError:
        return b"<still open>"
    return received


def test_half_sent_requests_from_one_address_leave_others_served(serve: Any,
                                                                  tmp_path: Path) -> None:
    server = serve(tmp_path / "data", {"limits": {"max_connections_per_source": 50,
                                                  "header_timeout_s": 3}})
    slow = _half_sent(300, server.port)
    try:
        with server.client(ANOTHER_MACHINE) as http:
            turn = http.post("/v1/turns", json={"user": "alice", "text": "こんにちは"})
        assert turn.status_code == 200, turn.text
        answers = [_answer(s, 60) for s in slow]
    finally:
        for s in slow:
            s.close()
    refused = [a for a in answers if a.startswith(b"HTTP/1.1 503")]
    timed_out = [a for a in answers if a.startswith(b"HTTP/1.1 408")]
    assert len(refused) == 250 and len(timed_out) == 50, \
        sorted({a[:40] for a in answers})
    log = server.stop()
    refusals = [line for line in log.splitlines() if "refused connections" in line]
    assert len(refusals) == 1 and "127.0.0.1" in refusals[0], log[-3000:]


def test_a_connection_that_sends_nothing_is_closed_at_the_header_timeout(
        serve: Any, tmp_path: Path) -> None:
    server = serve(tmp_path / "data", {"limits": {"header_timeout_s": 1}})
    with socket.create_connection(("127.0.0.1", server.port)) as idle:
        assert _answer(idle, 60) == b""


def test_a_request_head_past_its_limit_is_a_431(serve: Any, tmp_path: Path) -> None:
    server = serve(tmp_path / "data", {"limits": {"max_header_bytes": 8192}})
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  + b"X-Filler: " + b"a" * 20_000 + b"\r\n")
        assert _answer(s, 60).startswith(b"HTTP/1.1 431")
    with server.client() as http:
        assert http.get("/healthz").status_code == 200


def test_a_stalled_body_is_closed_and_the_app_sees_the_disconnect(serve: Any,
                                                                   tmp_path: Path) -> None:
    server = serve(tmp_path / "data", {"limits": {"body_timeout_s": 1}})
    head = (f"POST /v1/turns HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
            f"\r\nAuthorization: {admin_headers(server.data)['Authorization']}\r\n"
            f"Content-Length: 100\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        s.sendall(head + b'{"user": "alice", ')
        assert _answer(s, 60).startswith(b"HTTP/1.1 408")
    with server.client() as http:
        assert http.post("/v1/turns", json={"user": "alice", "text": "やあ"}
                         ).status_code == 200


# -- 4. forwarded headers ---------------------------------------------------------------

FORWARDING = [{"X-Forwarded-For": "10.0.0.1"}, {"Forwarded": "for=10.0.0.2"},
              {"X-Real-IP": "10.0.0.3"}]


def _new_people_with_forwarding(server: Running) -> list[int]:
    with server.client() as http:
        return [http.post("/v1/turns", json={"user": f"someone{i}", "text": "やあ"},
                          headers=headers).status_code
                for i, headers in enumerate(FORWARDING)]


def test_forwarded_headers_from_loopback_do_not_change_the_source(serve: Any,
                                                                  tmp_path: Path) -> None:
    server = serve(tmp_path / "data", {"limits": {"new_users_per_source": 2}})
    assert _new_people_with_forwarding(server) == [200, 200, 429]


def test_forwarded_headers_from_a_trusted_proxy_name_the_client(serve: Any,
                                                                tmp_path: Path) -> None:
    server = serve(tmp_path / "data", {"limits": {"new_users_per_source": 2},
                                       "trusted_proxies": ["127.0.0.1"]})
    assert _new_people_with_forwarding(server) == [200, 200, 200]
    with server.client() as http:
        again = http.post("/v1/turns", json={"user": "someone9", "text": "やあ"},
                          headers={"X-Forwarded-For": "10.0.0.1"})
        assert again.status_code == 200
        third = [http.post("/v1/turns", json={"user": f"more{i}", "text": "やあ"},
                           headers={"X-Forwarded-For": "10.0.0.1"}).status_code
                 for i in range(2)]
    assert third == [429, 429]


def test_open_websockets_count_against_the_per_address_cap_until_they_close(
        tmp_path: Path) -> None:
    import asyncio
    import threading

    import uvicorn
    import websockets
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    from omoide.data_dir_owner import DataDirClaim
    from omoide.server.connections import (
        ConnectionGate,
        ConnectionLimits,
        guarded_http_protocol,
    )
    from omoide.server.runner import PublishingServer

    async def echo(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            await receive()
            await send({"type": "websocket.accept"})
            while (await receive())["type"] != "websocket.disconnect":
                pass

    gate = ConnectionGate(ConnectionLimits(max_connections=100, max_per_source=3,
                                           header_timeout_s=1, body_timeout_s=1,
                                           max_header_bytes=8192))
    port = _free_port()
    server = PublishingServer(uvicorn.Config(
        echo, port=port, log_level="warning", lifespan="off",
        http=guarded_http_protocol(AutoHTTPProtocol, gate)), DataDirClaim(tmp_path, None),
        gate)
    threading.Thread(target=server.run, daemon=True).start()
    url = f"ws://127.0.0.1:{port}/"

    async def scenario() -> list[str]:
        seen = []
        sockets = [await websockets.connect(url) for _ in range(3)]
        await asyncio.sleep(2.5)         # past the header timeout: an open socket stays
        seen.append(",".join(s.state.name for s in sockets))
        with pytest.raises(websockets.InvalidStatus) as refused:
            await websockets.connect(url)
        seen.append(str(refused.value.response.status_code))
        await sockets[0].close()
        for _ in range(100):             # once the server has closed its end
            try:
                async with websockets.connect(url):
                    seen.append("accepted")
                    return seen
            except websockets.InvalidStatus:
                await asyncio.sleep(0.1)
        return seen

    try:
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        assert asyncio.run(scenario()) == ["OPEN,OPEN,OPEN", "503", "accepted"]
    finally:
        server.should_exit = True
