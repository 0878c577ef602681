"""Reliability (issue 27, point 6 and part of 7): browser sessions and the health route.

Before, ``POST /v1/session`` took any number of sign-ins and the session table dropped
its oldest entry beyond 10,000, so any person's token could sign everyone out (see
``session_flood.py`` for the measurement). Now:

- a token keeps at most 10 sessions, its own oldest going first, never anyone else's;
- sign-ins are limited per token (20 a minute) and per source address (30 a minute,
  failed ones included): 429 with ``Retry-After``;
- ``HEAD /healthz`` answers 200 like ``GET``, as the README documents;
- those four numbers are the defaults of ``server.limits`` settings (sessions_per_token,
  sign_ins_per_token, sign_ins_per_source, max_sessions) and a server follows others.

The server is :func:`omoide.server.app.create_app` under a real uvicorn on 127.0.0.1
(test doubles for every model); each test signs in from its own source address
(loopback accepts any 127.x.y.z).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from omoide.config import parse_envelope, validate_components, wanted_components
from omoide.plugins import build_registry
from omoide.server.app import create_app
from omoide.server.auth import SessionStore
from omoide.server.tokens import TokenStore
from omoide.testing.auth import token_store
from omoide.testing.http import LocalServer

CONFIG = """
vad: {use: fake}
asr: {use: fake}
embed: {use: fake}
store: {use: fake}
chat: {use: fake}
tts: {use: fake}
"""


@dataclass
class Server:
    url: str
    app: Any

    def token(self, user: str) -> str:
        token, _ = token_store(self.app).create_person_token(user)
        return token

    def client(self, address: str) -> httpx.Client:
        """A browser on ``address``."""
        return httpx.Client(base_url=self.url, timeout=30,
                            transport=httpx.HTTPTransport(local_address=address))

    def sign_in(self, browser: httpx.Client, token: str) -> httpx.Response:
        browser.cookies.clear()
        return browser.post("/v1/session", json={"token": token},
                            headers={"origin": self.url})

    def signed_in_as(self, cookie: str) -> str | None:
        with httpx.Client(base_url=self.url, cookies={"omoide_session": cookie}) as c:
            answer = c.get("/v1/session").json()
        return answer.get("user") if answer["signed_in"] else None


def _serve(data_dir: Path, limits: dict[str, int] | None = None) -> Iterator[Server]:
    data = yaml.safe_load(CONFIG) | {
        "server": {"data_dir": str(data_dir), "limits": limits or {}}}
    envelope = parse_envelope(data)
    registry = build_registry(wanted_components(envelope))
    app = create_app(validate_components(envelope, registry), registry)
    with LocalServer(app, lifespan="on") as url:
        yield Server(url, app)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from _serve(tmp_path_factory.mktemp("sessions"))


@pytest.fixture(scope="module")
def small_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server told to keep 2 sessions a token, 3 in all, and allow 4 sign-ins a minute
    per token and 5 per address."""
    yield from _serve(tmp_path_factory.mktemp("small"), {
        "sessions_per_token": 2, "max_sessions": 3, "sign_ins_per_token": 4,
        "sign_ins_per_source": 5})


def test_a_token_signing_in_again_and_again_never_signs_out_another_person(
        tmp_path: Path) -> None:
    tokens = TokenStore(tmp_path)
    alice_token, _ = tokens.create_person_token("alice")
    bob_token, _ = tokens.create_person_token("bob")
    alice, bob = tokens.identify(alice_token), tokens.identify(bob_token)
    assert alice is not None and bob is not None
    sessions = SessionStore(tokens, 3600, capacity=100)
    alices = sessions.create(alice)

    for _ in range(1000):
        sessions.create(bob)

    assert sessions.lookup(alices) == alice


def test_a_token_keeps_ten_sessions_its_own_oldest_going_first(server: Server) -> None:
    alice_token, bob_token = server.token("alice1"), server.token("bob1")
    with server.client("127.0.6.1") as browser:
        alice = server.sign_in(browser, alice_token).cookies["omoide_session"]
        bobs = [server.sign_in(browser, bob_token).cookies["omoide_session"]
                for _ in range(11)]
    assert server.signed_in_as(alice) == "alice1"
    assert server.signed_in_as(bobs[0]) is None                # his own oldest went
    assert all(server.signed_in_as(c) == "bob1" for c in bobs[1:])


def test_sign_ins_of_one_token_are_limited_with_retry_after(server: Server) -> None:
    token = server.token("bob2")
    answers = []
    for i in range(25):                     # from five addresses: the token's limit bites
        with server.client(f"127.0.7.{i % 5 + 1}") as browser:
            answers.append(server.sign_in(browser, token))
    codes = [a.status_code for a in answers]
    assert codes[:20] == [200] * 20 and set(codes[20:]) == {429}, codes
    assert int(answers[-1].headers["retry-after"]) >= 1
    assert "set-cookie" not in answers[-1].headers
    with server.client("127.0.7.9") as other:            # another person is unaffected
        assert server.sign_in(other, server.token("alice2")).status_code == 200


def test_sign_ins_from_one_address_are_limited_failed_ones_included(server: Server) -> None:
    with server.client("127.0.8.1") as browser:
        codes = [server.sign_in(browser, f"omoide_user_guess{i:04d}").status_code
                 for i in range(30)]
        refused = server.sign_in(browser, server.token("carol"))
    assert set(codes) == {401}
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    with server.client("127.0.8.2") as elsewhere:
        assert server.sign_in(elsewhere, server.token("carol2")).status_code == 200


def test_head_healthz_answers_200_like_get(server: Server) -> None:
    head = httpx.head(f"{server.url}/healthz")
    get = httpx.get(f"{server.url}/healthz")
    assert head.status_code == get.status_code == 200
    assert head.content == b""
    assert head.headers["content-type"] == get.headers["content-type"]


def test_the_session_limits_are_the_servers_settings(small_server: Server) -> None:
    server = small_server
    bob = server.token("bob9")
    with server.client("127.0.9.1") as browser:
        cookies = [server.sign_in(browser, bob).cookies["omoide_session"] for _ in range(3)]
    assert [server.signed_in_as(c) for c in cookies] == [None, "bob9", "bob9"]
    with server.client("127.0.9.2") as browser:
        assert server.sign_in(browser, server.token("alice9")).status_code == 200
        full = server.sign_in(browser, server.token("carol9"))     # 3 sessions in all
    assert full.status_code == 503, full.text
    with server.client("127.0.9.3") as browser:     # his own oldest makes room
        assert server.sign_in(browser, bob).status_code == 200
        assert server.sign_in(browser, bob).status_code == 429    # his 5th in a minute


def test_the_sign_in_rate_per_address_is_the_servers_setting(small_server: Server) -> None:
    with small_server.client("127.0.10.1") as browser:
        codes = [small_server.sign_in(browser, f"omoide_user_guess{i:04d}").status_code
                 for i in range(6)]
    assert codes == [401] * 5 + [429]
