"""Reliability (issue 27, points 5 and 7): activation codes and the robot's first bytes.

- A robot waiting to be paired keeps its activation code while it keeps polling with its
  challenge, however many addresses ask for codes meanwhile: beyond the pool's cap new
  codes are refused (429 with Retry-After), never a polling robot's pushed out; one
  address still holds at most ``max_pending_per_source`` codes.
- OTA and activation bodies nested 30,000 deep are a 400 and one log line, not a 500
  and a traceback.
- The WebSocket's text-message cap (64 KiB) applies from the first message: a 900 KB
  text frame before ``hello`` closes the connection (1009) without being parsed.

The server is :func:`omoide.server.app.create_app` with the real StackChan plugin under
a real uvicorn on 127.0.0.1 (test doubles for the models: fake ASR/chat/TTS, hash
embedder, in-memory store). Other source addresses are real: loopback accepts any
127.x.y.z, and each simulated robot binds its own.
"""

from __future__ import annotations

import json
import logging
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
from omoide.testing.auth import admin_headers
from omoide.testing.http import LocalServer

pytest.importorskip("omoide_device_stackchan")

from omoide_device_stackchan.pairing import PairingError, PairingStore
from omoide_device_stackchan.simulator import (
    ProvisioningRefused,
    SimulatedStackChan,
)

POOL = 16
"""The pool's cap in this server's config (the default is 64; the rule is the same)."""
CONFIG = f"""
vad: {{use: fake}}
asr: {{use: fake}}
embed: {{use: fake}}
store: {{use: fake}}
chat: {{use: fake}}
tts: {{use: fake}}
devices: [{{use: stackchan, max_pending: {POOL}, max_pending_per_source: 4}}]
"""
SERIAL = "SN-0123456789ABCDEF"
CHIP_KEY = b"factory-burned-key-0001"


@dataclass
class Server:
    url: str
    app: Any

    def pair(self, code: str, user: str) -> httpx.Response:
        return httpx.post(f"{self.url}/v1/devices/pair", json={"code": code, "user": user},
                          headers=admin_headers(self.app), timeout=30)

    def pending_codes(self) -> set[str]:
        answer = httpx.get(f"{self.url}/v1/devices", headers=admin_headers(self.app),
                           timeout=30)
        return {p["code"] for p in answer.json()["pending"]}


def running(data_dir: Path, config: str) -> Iterator[Server]:
    data = yaml.safe_load(config) | {"server": {"data_dir": str(data_dir)}}
    envelope = parse_envelope(data)
    registry = build_registry(wanted_components(envelope))
    app = create_app(validate_components(envelope, registry), registry)
    with LocalServer(app, lifespan="on") as url:
        while httpx.get(f"{url}/healthz").json()["status"] == "starting":
            pass
        yield Server(url, app)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Robots must be paired; the pool holds 16 codes, 4 per address."""
    yield from running(tmp_path_factory.mktemp("codes"), CONFIG)


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Any robot gets a token at OTA (``pairing_required: false``)."""
    yield from running(tmp_path_factory.mktemp("open"),
                       CONFIG.replace("max_pending: 16", "pairing_required: false"))


def robot(server: Server, address: str, **kw: Any) -> SimulatedStackChan:
    return SimulatedStackChan(server.url, local_address=address, serial_number=SERIAL,
                              chip_key=CHIP_KEY, **kw)


async def ask_for_code(robot: SimulatedStackChan) -> int:
    """One OTA request of a robot that is not paired: its HTTP status."""
    try:
        await robot.provision()
    except ProvisioningRefused:
        return 200
    except httpx.HTTPStatusError as exc:
        return exc.response.status_code
    raise AssertionError("an unpaired robot got a token")


# -- the pending-code pool ----------------------------------------------------------------
async def test_a_polling_robots_code_survives_codes_asked_from_many_addresses(
        server: Server) -> None:
    waiting = robot(server, "127.0.0.10")
    assert await ask_for_code(waiting) == 200
    assert await waiting.activate() == 202               # polling with its challenge
    code = waiting.activation["code"]

    statuses = [await ask_for_code(robot(server, f"127.0.1.{i}")) for i in range(1, 41)]

    assert statuses.count(200) <= POOL - 1 and 429 in statuses
    assert code in server.pending_codes()
    assert await waiting.activate() == 202                # still waiting, not 404
    assert server.pair(code, "hanako").status_code == 201
    assert await waiting.activate() == 200


async def test_the_refusal_says_when_to_ask_again(server: Server) -> None:
    flood = [robot(server, f"127.0.3.{i}") for i in range(1, 41)]
    answers = []
    for r in flood:
        async with httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(
                local_address=r.local_address)) as client:
            answers.append(await client.post(f"{server.url}/xiaozhi/ota/",
                                             headers=r.http_headers(), json=r.system_info()))
    refused = [a for a in answers if a.status_code == 429]
    assert refused, [a.status_code for a in answers]
    assert int(refused[0].headers["retry-after"]) >= 1
    assert "activation" not in refused[0].json()


def test_one_address_holds_at_most_four_codes_then_is_refused(tmp_path: Path) -> None:
    store = PairingStore(tmp_path, max_pending=64, max_per_source=4)
    codes, refused = [], 0
    for i in range(8):
        try:
            codes.append(store.request_activation(f"d-{i}", "c", source="10.0.0.9").code)
        except PairingError:
            refused += 1
    assert (len(codes), refused) == (4, 4)
    assert {p.code for p in store.pending()} == set(codes)   # none of them pushed out


def test_a_code_whose_robot_stopped_asking_makes_room_and_a_polling_one_stays(
        tmp_path: Path) -> None:
    store = PairingStore(tmp_path, max_pending=4, max_per_source=4)
    polling = store.request_activation("d-poll", "c", source="10.0.0.1", now=999.0)
    stale = [store.request_activation(f"d-{i}", "c", source="10.0.0.1", now=1000.0)
             for i in range(2)]
    store.request_activation("d-other", "c", source="10.0.0.2", now=1001.0)
    store.record_activation("d-poll", "c", challenge=polling.challenge, serial_number=None,
                            hmac=None, now=1050.0)

    newcomer = store.request_activation("d-new", "c", source="10.0.0.3", now=1070.0)

    codes = {p.code for p in store.pending(now=1070.0)}
    assert polling.code in codes and newcomer.code in codes
    assert len(codes & {s.code for s in stale}) == 1         # the oldest stale one went


# -- what the robot's first bytes may cost -------------------------------------------------
class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def lines(self, level: int = logging.WARNING) -> list[str]:
        out: list[str] = []
        for record in self.records:
            if record.levelno >= level:
                out.extend(self.format(record).splitlines())
        return out


@pytest.fixture
def logged() -> Iterator[Records]:
    handler = Records()
    handler.setFormatter(logging.Formatter("%(name)s %(message)s"))
    loggers = [logging.getLogger(), logging.getLogger("uvicorn")]
    for logger in loggers:
        logger.addHandler(handler)
    yield handler
    for logger in loggers:
        logger.removeHandler(handler)


@pytest.mark.parametrize("path", ["/xiaozhi/ota/", "/xiaozhi/ota/activate"])
def test_a_30000_deep_json_body_is_a_400_and_one_log_line(server: Server, path: str,
                                                          logged: Records) -> None:
    body = b"[" * 30_000 + b"]" * 30_000
    headers = {"Device-Id": "02:00:00:aa:bb:cc", "Client-Id": "c-deep",
               "Content-Type": "application/json"}
    transport = httpx.HTTPTransport(local_address="127.0.4.1")
    with httpx.Client(transport=transport, timeout=30) as client:
        answer = client.post(server.url + path, content=body, headers=headers)
    assert answer.status_code == 400, answer.text
    assert "deep" in answer.json()["error"]
    assert len(logged.lines()) == 1, logged.lines()
    assert not any(r.exc_info for r in logged.records)


async def test_a_900_kb_text_frame_before_hello_closes_the_connection_unparsed(
        open_server: Server, logged: Records) -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    paired = robot(open_server, "127.0.5.1")
    await paired.provision()
    frame = json.dumps({"type": "hello", "padding": "x" * 900_000})
    async with connect(paired.handshake_url(), additional_headers=paired.handshake_headers(),
                       compression=None, proxy=None, max_size=2**20) as ws:
        await ws.send(frame)
        with pytest.raises(ConnectionClosed):
            while True:
                reply = await ws.recv()
                assert '"hello"' not in str(reply), "the oversize hello was parsed"
    assert ws.close_code == 1009
    assert any("too big" in line for line in logged.lines())
