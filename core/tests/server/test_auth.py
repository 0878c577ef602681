"""Who may call what: tokens, per-person scope, browser sessions, device paths."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from omoide.errors import OmoideError
from omoide.plugins import PluginRegistry
from omoide.server.app import create_app
from omoide.testing.auth import admin_headers, person_headers, token_store

from .conftest import settings_for

MakeClient = Callable[..., TestClient]
PROBE = {"devices": [{"use": "probe"}]}
OWN_ORIGIN = {"origin": "http://localhost"}
JSON = {"content-type": "application/json"}

MANAGEMENT_ROUTES = [
    ("POST", "/v1/turns"), ("POST", "/v1/turns/audio?user=alice"), ("GET", "/v1/traces"),
    ("GET", "/v1/users/alice/memories"), ("GET", "/v1/users/alice/memories/export"),
    ("POST", "/v1/users/alice/memories/import"), ("GET", "/v1/users/alice/memories/m1"),
    ("DELETE", "/v1/users/alice/memories/m1"), ("GET", "/v1/memory/pending"),
    ("POST", "/v1/memory/extract"), ("GET", "/docs"), ("GET", "/openapi.json"),
    ("GET", "/v1/devices/probe"), ("GET", "/v1/route-added-later"),
]


@pytest.fixture
def client(make_client: MakeClient) -> TestClient:
    return make_client(**PROBE)


@pytest.mark.parametrize(("method", "path"), MANAGEMENT_ROUTES)
def test_every_management_route_needs_a_token(client: TestClient, method: str,
                                              path: str) -> None:
    response = client.request(method, path)
    assert response.status_code == 401
    assert "error" in response.json()
    assert response.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize("path", ["/healthz", "/", "/favicon.ico", "/v1/session",
                                  "/probe/hello"])
def test_the_public_routes_answer_without_a_token(client: TestClient, path: str) -> None:
    assert client.get(path).status_code in (200, 204)


def test_a_wrong_token_is_refused(client: TestClient) -> None:
    response = client.get("/v1/traces", headers={"authorization": "Bearer omoide_admin_x"})
    assert response.status_code == 401
    assert client.get("/v1/traces", headers={"authorization": "Basic YTpi"}).status_code == 401


def test_the_admin_token_may_call_every_route_for_every_person(client: TestClient) -> None:
    admin = admin_headers(client.app)
    for user in ("alice", "bob"):
        assert client.post("/v1/turns", json={"user": user, "text": "やあ"},
                           headers=admin).status_code == 200
        assert client.get(f"/v1/users/{user}/memories", headers=admin).status_code == 200
    traces = client.get("/v1/traces", headers=admin).json()["traces"]
    assert {t["user"] for t in traces} == {"alice", "bob"}
    assert client.get("/v1/devices/probe", headers=admin).status_code == 200
    assert client.get("/openapi.json", headers=admin).status_code == 200


def test_a_person_token_sees_only_that_person(client: TestClient) -> None:
    admin = admin_headers(client.app)
    client.post("/v1/turns", json={"user": "bob", "text": "秘密だよ"}, headers=admin)
    alice = person_headers(client.app, "alice")
    assert client.post("/v1/turns", json={"user": "alice", "text": "やあ"},
                       headers=alice).status_code == 200
    assert client.get("/v1/users/alice/memories", headers=alice).status_code == 200
    assert [t["user"] for t in client.get("/v1/traces", headers=alice).json()["traces"]] \
        == ["alice"]
    assert {p["user"] for p in client.get("/v1/memory/pending",
                                          headers=alice).json()["pending"]} == {"alice"}


@pytest.mark.parametrize(("method", "path", "body"), [
    ("GET", "/v1/users/bob/memories", None),
    ("GET", "/v1/users/bob/memories/export", None),
    ("DELETE", "/v1/users/bob/memories/m1", None),
    ("POST", "/v1/turns", {"user": "bob", "text": "やあ"}),
    ("GET", "/v1/traces?user=bob", None),
    ("GET", "/v1/memory/pending?user=bob", None),
    ("POST", "/v1/memory/extract", {"user": "alice"}),
    ("GET", "/v1/devices/probe", None),
    ("GET", "/openapi.json", None),
])
def test_a_person_token_is_refused_for_anyone_else_and_for_admin_routes(
        client: TestClient, method: str, path: str, body: dict[str, str] | None) -> None:
    alice = person_headers(client.app, "alice")
    response = client.request(method, path, json=body, headers=alice)
    assert response.status_code == 403, response.text


def test_rotating_the_admin_token_refuses_the_old_one_at_once(client: TestClient) -> None:
    old = admin_headers(client.app)
    assert client.get("/v1/traces", headers=old).status_code == 200
    token_store(client.app.state.omoide.settings).rotate_admin_token()   # as the CLI does
    assert client.get("/v1/traces", headers=old).status_code == 401
    assert client.get("/v1/traces", headers=admin_headers(client.app)).status_code == 200


def test_revoking_a_person_token_refuses_it_at_once(client: TestClient) -> None:
    alice = person_headers(client.app, "alice")
    assert client.get("/v1/users/alice/memories", headers=alice).status_code == 200
    token_store(client.app.state.omoide.settings).revoke(user="alice")
    assert client.get("/v1/users/alice/memories", headers=alice).status_code == 401


def test_loopback_needs_a_token_by_default(make_client: MakeClient) -> None:
    local = make_client(client=("127.0.0.1", 40000))
    assert local.get("/v1/traces").status_code == 401


def test_loopback_is_the_admin_when_the_setting_says_so(make_client: MakeClient) -> None:
    exempt = {"server": {"auth": {"loopback_exempt": True}}}
    assert make_client(client=("127.0.0.1", 40000), **exempt).get(
        "/v1/traces").status_code == 200
    assert make_client(client=("::1", 40000), **exempt).get("/v1/traces").status_code == 200
    assert make_client(client=("192.168.1.20", 40000), **exempt).get(
        "/v1/traces").status_code == 401


# -- Host and Origin (DNS rebinding, cross-site requests) ---------------------------------
@pytest.mark.parametrize("host", ["evil.example", "evil.example:8003", "localhost.evil.example",
                                  "", "127.0.0.1@evil.example"])
def test_an_unknown_host_header_is_refused_even_with_the_admin_token(
        client: TestClient, host: str) -> None:
    response = client.get("/v1/users/alice/memories",
                          headers={**admin_headers(client.app), "host": host})
    assert response.status_code == 421
    assert "error" in response.json()


def test_a_repeated_host_header_is_refused(client: TestClient) -> None:
    import asyncio

    import httpx

    transport = httpx.ASGITransport(app=client.app)

    async def call() -> int:
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
            request = c.build_request("GET", "/v1/traces", headers=admin_headers(client.app))
            request.headers = httpx.Headers([("host", "evil.example"),
                                             *request.headers.multi_items()])
            return (await c.send(request)).status_code

    assert asyncio.run(call()) == 421


@pytest.mark.parametrize("host", ["localhost", "localhost:8003", "robot.localhost",
                                  "127.0.0.1:8003", "192.168.1.20", "[::1]:8003",
                                  "omoide.example.org", "box.home.example"])
def test_own_names_and_ip_literals_are_accepted_as_host(make_client: MakeClient,
                                                        host: str) -> None:
    client = make_client(server={"public_url": "https://omoide.example.org",
                                 "auth": {"allowed_hosts": [".home.example"]}})
    response = client.get("/v1/traces", headers={**admin_headers(client.app), "host": host})
    assert response.status_code == 200


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://localhost:9999",
                                    "https://localhost.evil.example"])
def test_a_foreign_origin_is_refused_even_with_the_admin_token(client: TestClient,
                                                               origin: str) -> None:
    response = client.get("/v1/users/alice/memories",
                          headers={**admin_headers(client.app), "origin": origin})
    assert response.status_code == 403


def test_the_own_and_configured_origins_are_accepted(make_client: MakeClient) -> None:
    client = make_client(server={"auth": {"allowed_origins": ["https://console.example"]}})
    for origin in ("http://localhost", "https://console.example"):
        assert client.get("/v1/traces", headers={**admin_headers(client.app),
                                                 "origin": origin}).status_code == 200


def test_the_management_api_answers_no_cors(client: TestClient) -> None:
    preflight = client.options("/v1/users/alice/memories/import",
                               headers={"origin": "http://evil.example",
                                        "access-control-request-method": "POST"})
    assert "access-control-allow-origin" not in preflight.headers
    own = client.get("/v1/traces", headers={**admin_headers(client.app), **OWN_ORIGIN})
    assert not any(h.startswith("access-control-") for h in own.headers)


def test_device_paths_skip_the_host_check_and_the_token(client: TestClient) -> None:
    response = client.get("/probe/hello", headers={"host": "stackchan.lan",
                                                   "origin": "http://anything.example"})
    assert response.status_code == 200


# -- JSON-only writes ------------------------------------------------------------------
@pytest.mark.parametrize(("path", "content_type"), [
    ("/v1/users/alice/memories/import", "text/plain"),
    ("/v1/users/alice/memories/import", "application/x-www-form-urlencoded"),
    ("/v1/turns", "text/plain"),
    ("/v1/turns", "multipart/form-data; boundary=x"),
    ("/v1/memory/extract", None),
    ("/v1/turns/audio?user=alice", "text/plain"),
])
def test_writes_accept_only_their_json_or_audio_types(client: TestClient, path: str,
                                                      content_type: str | None) -> None:
    headers = admin_headers(client.app)
    if content_type is not None:
        headers["content-type"] = content_type
    response = client.post(path, content=b'{"user": "alice", "text": "x"}', headers=headers)
    assert response.status_code == 415
    assert client.app.state.omoide.traces.recent(None, 10) == []


def test_an_import_as_json_lines_is_accepted(client: TestClient) -> None:
    response = client.post("/v1/users/alice/memories/import",
                           content='{"text": "あなたは猫が好きだ。"}\n',
                           headers={**admin_headers(client.app),
                                    "content-type": "application/x-ndjson"})
    assert response.status_code == 200 and response.json()["imported"] == 1


# -- browser sessions ------------------------------------------------------------------
def sign_in(client: TestClient, token_headers: dict[str, str]) -> dict[str, str]:
    token = token_headers["Authorization"].removeprefix("Bearer ")
    response = client.post("/v1/session", json={"token": token}, headers=OWN_ORIGIN)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def test_signing_in_sets_an_httponly_samesite_strict_cookie(client: TestClient) -> None:
    token = admin_headers(client.app)["Authorization"].removeprefix("Bearer ")
    response = client.post("/v1/session", json={"token": token}, headers=OWN_ORIGIN)
    cookie = response.headers["set-cookie"].lower()
    assert cookie.startswith("omoide_session=")
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
    assert token not in response.text


def test_a_session_reads_without_a_token_and_knows_who_it_is(client: TestClient) -> None:
    assert client.get("/v1/session").json() == {"signed_in": False}
    sign_in(client, person_headers(client.app, "alice"))
    assert client.get("/v1/session").json() == {"signed_in": True, "role": "person",
                                                "user": "alice", "via": "session"}
    assert client.get("/v1/users/alice/memories").status_code == 200
    assert client.get("/v1/users/bob/memories").status_code == 403


def test_a_session_write_without_this_servers_origin_is_refused(client: TestClient) -> None:
    sign_in(client, admin_headers(client.app))
    assert client.delete("/v1/users/alice/memories/m1").status_code == 403
    assert client.delete("/v1/users/alice/memories/m1", headers=OWN_ORIGIN).status_code == 404
    assert client.delete("/v1/users/alice/memories/m1",
                         headers={"sec-fetch-site": "same-origin"}).status_code == 404


def test_a_wrong_token_gets_no_session(client: TestClient) -> None:
    response = client.post("/v1/session", json={"token": "omoide_admin_nope"},
                           headers=OWN_ORIGIN)
    assert response.status_code == 401 and "set-cookie" not in response.headers


def test_rotating_the_token_ends_its_sessions(client: TestClient) -> None:
    sign_in(client, admin_headers(client.app))
    assert client.get("/v1/traces").status_code == 200
    token_store(client.app).rotate_admin_token()
    assert client.get("/v1/traces").status_code == 401


def test_signing_out_ends_the_session(client: TestClient) -> None:
    sign_in(client, admin_headers(client.app))
    assert client.delete("/v1/session", headers=OWN_ORIGIN).json()["ended"] is True
    client.cookies.clear()
    assert client.get("/v1/traces").status_code == 401


def test_a_cross_site_sign_in_is_refused(client: TestClient) -> None:
    token = admin_headers(client.app)["Authorization"].removeprefix("Bearer ")
    evil = client.post("/v1/session", json={"token": token},
                       headers={"origin": "http://evil.example"})
    form = client.post("/v1/session", content=f"token={token}",
                       headers={"content-type": "application/x-www-form-urlencoded"})
    assert evil.status_code == 403 and form.status_code == 415


# -- WebSockets and devices ---------------------------------------------------------------
def test_a_websocket_to_a_management_path_needs_a_token(client: TestClient) -> None:
    from starlette.websockets import WebSocketDisconnect

    with pytest.raises(WebSocketDisconnect), client.websocket_connect(
            "ws://localhost/v1/devices/probe/live"):
        pass
    with client.websocket_connect("ws://localhost/v1/devices/probe/live",
                                  headers=admin_headers(client.app)) as ws:
        assert ws.receive_text() == "hi"


def test_a_device_may_not_declare_omoides_own_routes_public(
        tmp_path: object, device_registry: PluginRegistry) -> None:
    settings = settings_for(tmp_path, device_registry,  # type: ignore[arg-type]
                            devices=[{"use": "overreach"}])
    with pytest.raises(OmoideError, match="/v1/"):
        create_app(settings, device_registry)


def test_the_admin_token_file_is_private(client: TestClient) -> None:
    store = token_store(client.app)
    assert store.admin_path.stat().st_mode & 0o777 == 0o600
    assert store.dir.stat().st_mode & 0o777 == 0o700
