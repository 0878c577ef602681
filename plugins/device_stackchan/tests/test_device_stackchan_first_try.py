"""Stock clients connect on the first try.

py-xiaozhi keeps the ``websocket`` of the OTA answer that carried its activation code,
polls activation until 200 and connects with that token, without asking OTA again. So
that answer carries a token bound to the device, the client id and that very activation:
refused until the owner enters the code, good from then on, and never again once the
pairing is revoked or replaced. And py-xiaozhi is "listening" again right after every
``tts stop``, the goodbye's included: the idle close waits ``close_grace_s`` for it.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from omoide.testing.doubles import FakeVAD
from omoide_device_stackchan.service import pairing_store_for
from omoide_device_stackchan.simulated_client import SimulatedStackChanClient
from omoide_device_stackchan.simulator import (
    PY_XIAOZHI,
    ProvisioningRefused,
    SimulatedStackChan,
)
from omoide_device_stackchan.testing import LiveServer, speech_like, start_server
from omoide_device_stackchan.tokens import TokenSigner

SERIAL = "SN-PYXIAOZHI-0001"


async def shows_its_code(server: LiveServer, **kw: object) -> SimulatedStackChan:
    """A py-xiaozhi that asked OTA once and shows the activation code it got."""
    robot = SimulatedStackChan(server.url, habits=PY_XIAOZHI, serial_number=SERIAL,
                               chip_key=b"chip-key", speed=4.0,
                               **kw)  # type: ignore[arg-type]
    with pytest.raises(ProvisioningRefused):
        await robot.provision()
    return robot


async def pair_from_the_console(server: LiveServer, code: str, user: str) -> None:
    """What the owner does in the console: POST /v1/devices/pair."""
    async with httpx.AsyncClient() as client:
        answer = await client.post(f"{server.url}/v1/devices/pair",
                                   json={"code": code, "user": user})
    assert answer.status_code == 201, answer.text


async def handshake(robot: SimulatedStackChan) -> tuple[int, str]:
    """(101, "") when the WebSocket opens, else the refusal's status and body."""
    try:
        async with connect(robot.handshake_url(), additional_headers=robot.handshake_headers(),
                           proxy=None):
            return 101, ""
    except InvalidStatus as exc:
        return exc.response.status_code, exc.response.body.decode(errors="replace")


def same_robot(robot: SimulatedStackChan, **kw: object) -> SimulatedStackChan:
    """Another client presenting ``robot``'s token (sniffed, or replayed later)."""
    other = SimulatedStackChan(robot.base_url, **{  # type: ignore[arg-type]
        "device_id": robot.device_id, "client_id": robot.client_id, **kw})
    other.token, other.ws_url = robot.token, robot.ws_url
    return other


# -- activation v2, then talk, with no restart -----------------------------------------
async def test_py_xiaozhi_goes_from_its_code_to_a_voice_turn_without_a_restart(
        tmp_path: Path) -> None:
    server = await start_server(tmp_path, FakeVAD(FakeVAD.Config(min_silence_ms=300)))
    try:
        robot = await shows_its_code(server)
        assert robot.token and robot.ws_url          # not `url: null, "Bearer None"`
        assert await robot.activate() == 202
        await pair_from_the_console(server, robot.activation["code"], "hanako")
        await robot.finish_activation()              # polls until 200, no OTA
        await robot.connect()
        reply = await robot.say(speech_like(0.8), mode="auto", timeout=20)
        await robot.close()
    finally:
        await server.stop()
    assert robot.ota_requests == 1
    assert reply.complete and reply.transcript == "こんにちは" and reply.frames
    assert server.host.requests[0].user == "hanako"
    assert server.host.requests[0].device == robot.device_id


async def test_the_demo_client_with_py_xiaozhi_habits_pairs_and_talks(
        paired_server: LiveServer) -> None:
    client = SimulatedStackChanClient(paired_server.url, management_headers={},
                                      speed=4.0, habits=PY_XIAOZHI)
    lines = await client.provision("taro")
    await client.connect()
    try:
        reply = await client.say(speech_like(0.8), timeout=20)
    finally:
        await client.close()
    assert "activation code" in lines[0]
    assert client.robot.ota_requests == 1
    assert reply.complete and paired_server.host.requests[0].user == "taro"


async def test_a_code_paired_from_the_command_line_opens_the_same_token(
        paired_server: LiveServer) -> None:
    robot = await shows_its_code(paired_server)
    # `omoide devices pair --code` writes the pairing file from another process
    cli_store = pairing_store_for(paired_server.service.data_dir)
    cli_store.pair_by_code(robot.activation["code"], "hanako")
    assert await robot.wait_until_activated() == 200
    assert await handshake(robot) == (101, "")


# -- the token that comes with the code ------------------------------------------------
async def test_before_the_code_is_entered_the_token_is_refused_and_says_why(
        paired_server: LiveServer) -> None:
    robot = await shows_its_code(paired_server)
    status, body = await handshake(robot)
    assert status == 401 and "activation code not entered yet" in body


async def test_it_stays_the_same_while_the_robot_keeps_asking_and_all_copies_open(
        paired_server: LiveServer) -> None:
    robot = await shows_its_code(paired_server)
    first = same_robot(robot)
    with pytest.raises(ProvisioningRefused):
        await robot.provision()                    # asks again: same code, same binding
    paired_server.service.pairings.pair_by_code(robot.activation["code"], "hanako")
    assert await handshake(robot) == (101, "")
    assert await handshake(first) == (101, "")


async def test_it_does_not_work_for_another_client_id_or_device(
        paired_server: LiveServer) -> None:
    robot = await shows_its_code(paired_server)
    paired_server.service.pairings.pair_by_code(robot.activation["code"], "hanako")
    other_client = same_robot(robot, client_id="another-client-uuid")
    other_device = same_robot(robot, device_id="02:00:00:99:99:99")
    assert (await handshake(other_client))[0] == 401
    assert (await handshake(other_device))[0] == 401
    assert await handshake(robot) == (101, "")


async def test_a_strangers_code_for_a_paired_robot_opens_nothing_until_entered(
        paired_server: LiveServer) -> None:
    robot = await shows_its_code(paired_server)
    paired_server.service.pairings.pair_by_code(robot.activation["code"], "hanako")
    stranger = await shows_its_code(paired_server, device_id=robot.device_id)
    assert (await handshake(stranger))[0] == 401
    assert await handshake(robot) == (101, "")     # the owner's robot is untouched


async def test_revocation_wins(paired_server: LiveServer) -> None:
    robot = await shows_its_code(paired_server)
    paired_server.service.pairings.pair_by_code(robot.activation["code"], "hanako")
    paired_server.service.pairings.revoke(robot.device_id)
    assert (await handshake(robot))[0] == 401


async def test_after_revoking_and_pairing_again_the_old_activation_token_is_dead(
        paired_server: LiveServer, caplog: pytest.LogCaptureFixture) -> None:
    robot = await shows_its_code(paired_server)
    pairings = paired_server.service.pairings
    pairings.pair_by_code(robot.activation["code"], "hanako")
    old = same_robot(robot)
    pairings.revoke(robot.device_id)
    with pytest.raises(ProvisioningRefused):
        await robot.provision()                     # a new code, a new binding
    pairings.pair_by_code(robot.activation["code"], "hanako")
    assert await handshake(robot) == (101, "")
    assert (await handshake(old))[0] == 401
    assert any("not the one paired" in r.getMessage() for r in caplog.records)


async def test_pairing_by_device_id_by_hand_does_not_open_an_activation_token(
        paired_server: LiveServer) -> None:
    robot = await shows_its_code(paired_server)
    paired_server.service.pairings.pair(robot.device_id, "hanako", client_id=robot.client_id)
    assert (await handshake(robot))[0] == 401
    await robot.provision()                         # a plain token from OTA works
    assert await handshake(robot) == (101, "")


def test_the_activation_it_is_bound_to_cannot_be_swapped() -> None:
    signer = TokenSigner(b"s" * 32, 3600)
    token = signer.issue_for_activation("client", "aa:bb:cc:dd:ee:ff", "c" * 32)
    check = signer.check(token, "client", "AA:BB:CC:DD:EE:FF")
    assert check.ok and check.activation == "c" * 32
    swapped = token.rpartition(".")[0] + "." + "d" * 32
    assert not signer.check(swapped, "client", "aa:bb:cc:dd:ee:ff").ok
    plain = token.rpartition(".")[0]              # the same signature as a plain token
    assert not signer.check(plain, "client", "aa:bb:cc:dd:ee:ff").ok
    assert not signer.check(token + ".x", "client", "aa:bb:cc:dd:ee:ff").ok


# -- the goodbye and py-xiaozhi's listening ------------------------------------------
async def goodbye_then_linger(tmp_path: Path, grace_s: float, linger_s: float
                              ) -> tuple[SimulatedStackChan, bool, int | None, float]:
    server = await start_server(tmp_path, FakeVAD(FakeVAD.Config(min_silence_ms=300)),
                                pairing_required=False, close_after_silence_s=0.5,
                                close_grace_s=grace_s)
    robot = SimulatedStackChan(server.url, habits=PY_XIAOZHI, speed=4.0)
    try:
        await robot.provision()
        await robot.connect()
        await robot.start_listening("auto")
        goodbye = await robot.collect(timeout=10)    # tts stop: listening again at once
        assert goodbye.complete and goodbye.face == "sleepy"
        stayed_open = await robot.linger(linger_s)
        code = await robot.wait_closed(timeout=10)
        open_for = time.perf_counter() - (goodbye.tts_stop_at or 0.0)
        await robot.close()
    finally:
        await server.stop()
    return robot, stayed_open, code, open_for


async def test_the_idle_close_leaves_py_xiaozhi_its_moment_of_listening(
        tmp_path: Path) -> None:
    robot, stayed_open, code, open_for = await goodbye_then_linger(tmp_path, 1.5, 1.0)
    assert stayed_open and not robot.dropped_while_listening
    assert code == 1000
    relisten = [m for m in robot.sent if m.get("type") == "listen"]
    assert relisten[-1]["state"] == "start"      # it went back to listening, and was let
    print(f"socket open {open_for:.2f}s after the goodbye's tts stop (grace 1.5 s)")


async def test_without_the_grace_the_close_catches_it_listening(tmp_path: Path) -> None:
    robot, stayed_open, code, _ = await goodbye_then_linger(tmp_path, 0.0, 5.0)
    assert not stayed_open and robot.dropped_while_listening
    assert code == 1000
