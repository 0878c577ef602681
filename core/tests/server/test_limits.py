"""Bounded requests: body limits per route (declared and streamed), import limits, and
the limit on new user ids per client address."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from omoide.audio import write_wav
from omoide.plugins import PluginRegistry
from omoide.server.app import create_app
from omoide.server.limits import NewUserLimiter, source_key
from omoide.testing.auth import admin_headers
from omoide.testing.http import LocalServer
from omoide.types import AudioClip

from .conftest import settings_for, wait_ready

MakeClient = Callable[..., TestClient]
SMALL = {"server": {"limits": {"max_body_bytes": 1024, "max_audio_bytes": 64 * 1024,
                               "max_import_bytes": 4096, "max_import_items": 3}}}
NDJSON = {"content-type": "application/x-ndjson"}
MiB = 1024 * 1024


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int, str]]:
    """A real uvicorn on 127.0.0.1 with the probe device: (host, port, admin token)."""
    import types

    from omoide.plugins import build_registry

    from .conftest import register_devices

    registry = build_registry([("asr", "fake"), ("memory_engine", "robust")])
    module = types.ModuleType("probe_devices")
    module.register_devices = register_devices  # type: ignore[attr-defined]
    registry.load_module("probe_devices", module)
    settings = settings_for(tmp_path_factory.mktemp("live"), registry,
                            devices=[{"use": "probe"}])
    app = create_app(settings, registry)
    with LocalServer(app, lifespan="on") as url:
        host, port = url.removeprefix("http://").split(":")
        yield host, int(port), admin_headers(app)["Authorization"]


def raw_request(host: str, port: int, head: str) -> socket.socket:
    sock = socket.create_connection((host, port), timeout=10)
    sock.sendall(head.encode())
    return sock


def read_status(sock: socket.socket) -> tuple[int, str]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    head = data.split(b"\r\n\r\n")[0].decode("latin-1")
    return int(head.split()[1]), head.lower()


@pytest.mark.parametrize("path", ["/probe/echo", "/v1/turns"])
def test_a_declared_300_mib_body_is_refused_before_it_is_read(
        live_server: tuple[str, int, str], path: str) -> None:
    host, port, authorization = live_server
    sock = raw_request(host, port, f"POST {path} HTTP/1.1\r\nHost: {host}\r\n"
                                   f"Authorization: {authorization}\r\n"
                                   "Content-Type: application/json\r\n"
                                   f"Content-Length: {300 * MiB}\r\n\r\n")
    sock.sendall(b"x" * 65536)   # a little of the body; the answer must not wait for more
    status, head = read_status(sock)
    sock.close()
    assert status == 413
    assert "connection: close" in head


def test_a_chunked_body_is_cut_off_while_it_streams(live_server: tuple[str, int, str]) -> None:
    host, port, _ = live_server
    sock = raw_request(host, port, f"POST /probe/echo HTTP/1.1\r\nHost: {host}\r\n"
                                   "Content-Type: application/json\r\n"
                                   "Transfer-Encoding: chunked\r\n\r\n")
    chunk = b"10000\r\n" + b"x" * 0x10000 + b"\r\n"
    sent = 0
    try:
        while sent < 300 * MiB:
            sock.sendall(chunk)
            sent += 0x10000
    except OSError:
        pass   # the server stopped reading and closed: what we want
    status, _ = read_status(sock)
    sock.close()
    assert status == 413
    assert sent < 64 * MiB, f"the server read {sent} bytes before refusing"


def test_a_body_within_the_limit_reaches_the_device(live_server: tuple[str, int, str]) -> None:
    import httpx

    host, port, _ = live_server
    response = httpx.post(f"http://{host}:{port}/probe/echo", content=b"x" * 1000)
    assert response.json() == {"bytes": 1000}


def test_a_turn_body_over_the_default_limit_is_refused(make_client: MakeClient) -> None:
    client = make_client(**SMALL)
    response = client.post("/v1/turns", json={"user": "alice", "text": "あ" * 1000},
                           headers=admin_headers(client.app))
    assert response.status_code == 413
    assert "max_body_bytes" in response.json()["error"]


def test_a_streamed_body_without_length_is_counted(make_client: MakeClient) -> None:
    client = make_client(**SMALL)
    body = iter([b'{"user": "alice", "text": "', b"x" * 4000, b'"}'])   # chunked, no length
    response = client.post("/v1/turns", content=body,
                           headers={**admin_headers(client.app),
                                    "content-type": "application/json"})
    assert response.status_code == 413
    assert client.app.state.omoide.traces.recent(None, 10) == []


def test_audio_turns_have_a_larger_limit_of_their_own(make_client: MakeClient) -> None:
    client = make_client(**SMALL)
    headers = {**admin_headers(client.app), "content-type": "audio/wav"}
    wav = write_wav(AudioClip(np.full(16000, 0.1, dtype=np.float32), 16000))  # 32 KB
    assert len(wav) > 1024
    ok = client.post("/v1/turns/audio", params={"user": "alice", "speak": "false"},
                     content=wav, headers=headers)
    assert ok.status_code == 200, ok.text
    big = write_wav(AudioClip(np.full(48000, 0.1, dtype=np.float32), 16000))   # 96 KB
    assert client.post("/v1/turns/audio", params={"user": "alice"}, content=big,
                       headers=headers).status_code == 413


def test_imports_have_a_limit_of_their_own(make_client: MakeClient) -> None:
    client = make_client(**SMALL)
    headers = {**admin_headers(client.app), **NDJSON}
    lines = "".join(f'{{"text": "あなたは{i}番目の本を読んだ。{"と" * 150}"}}\n'
                    for i in range(3))
    assert 1024 < len(lines.encode()) < 4096
    assert client.post("/v1/users/alice/memories/import", content=lines,
                       headers=headers).status_code == 200
    too_big = '{"text": "あなたは猫が好きだ。"}' + " " * 5000 + "\n"
    assert client.post("/v1/users/bob/memories/import", content=too_big,
                       headers=headers).status_code == 413


def test_an_import_with_more_items_than_allowed_imports_nothing(
        make_client: MakeClient) -> None:
    client = make_client(**SMALL)
    headers = admin_headers(client.app)
    lines = "".join(f'{{"text": "メモ{i}"}}\n' for i in range(4))
    response = client.post("/v1/users/alice/memories/import", content=lines,
                           headers={**headers, **NDJSON})
    assert response.status_code == 413 and "max_import_items" in response.json()["error"]
    assert client.get("/v1/users/alice/memories", headers=headers).json()["memories"] == []


# -- new user ids per source ------------------------------------------------------------------
def test_one_address_cannot_start_turns_for_endless_new_people(
        make_client: MakeClient) -> None:
    client = make_client(server={"limits": {"new_users_per_source": 2}})
    headers = admin_headers(client.app)
    for user in ("u1", "u2"):
        assert client.post("/v1/turns", json={"user": user, "text": "やあ"},
                           headers=headers).status_code == 200
    refused = client.post("/v1/turns", json={"user": "u3", "text": "やあ"}, headers=headers)
    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) > 0
    assert client.post("/v1/turns", json={"user": "u1", "text": "また来たよ"},
                       headers=headers).status_code == 200


def test_people_the_journal_knows_are_not_new_after_a_restart(
        tmp_path: Path, device_registry: PluginRegistry) -> None:
    settings = settings_for(tmp_path, device_registry,
                            server={"limits": {"new_users_per_source": 1}})
    for users in (["u1"], ["u1", "u2"]):   # the second server knows u1 from the journal
        with TestClient(create_app(settings, device_registry),
                        base_url="http://localhost") as client:
            wait_ready(client)
            headers = admin_headers(client.app)
            codes = [client.post("/v1/turns", json={"user": u, "text": "やあ"},
                                 headers=headers).status_code for u in users]
            assert codes == [200] * len(users)


def test_the_window_forgets_old_new_users() -> None:
    now = [0.0]
    limiter = NewUserLimiter(per_source=1, window_s=60, clock=lambda: now[0])
    assert limiter.admit("a", "10.0.0.1") is None
    assert limiter.admit("b", "10.0.0.1") == 60
    assert limiter.admit("b", "10.0.0.2") is None     # another address has its own count
    now[0] = 61
    assert limiter.admit("c", "10.0.0.1") is None


def test_an_ipv6_slash_64_counts_as_one_source() -> None:
    assert source_key("2001:db8:1:2::1") == source_key("2001:db8:1:2:ffff::9")
    assert source_key("2001:db8:1:3::1") != source_key("2001:db8:1:2::1")
    assert source_key("::ffff:10.0.0.1") == "10.0.0.1"


def test_a_zero_limit_turns_the_new_user_limit_off() -> None:
    limiter = NewUserLimiter(per_source=0, window_s=60)
    assert all(limiter.admit(f"u{i}", "10.0.0.1") is None for i in range(100))
