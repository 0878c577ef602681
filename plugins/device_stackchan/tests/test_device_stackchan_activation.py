"""Activation as the firmware (``main/ota.cc``) and py-xiaozhi (``src/activation``) do it:
OTA hands out a code and a challenge, the robot polls ``/xiaozhi/ota/activate`` with its
signature, 202 until the owner enters the code, then 200 and a token at the next OTA."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from pathlib import Path

import httpx
import pytest

from omoide_device_stackchan.simulator import (
    PY_XIAOZHI,
    ProvisioningRefused,
    SimulatedStackChan,
)
from omoide_device_stackchan.testing import LiveServer, start_server

CHIP_KEY = b"factory-burned-key-0001"
SERIAL = "SN-0123456789ABCDEF"


async def waiting(server: LiveServer, **kw: object) -> SimulatedStackChan:
    """A robot that asked OTA and was told to activate."""
    robot = SimulatedStackChan(server.url, serial_number=SERIAL, chip_key=CHIP_KEY,
                               **kw)  # type: ignore[arg-type]
    with pytest.raises(ProvisioningRefused):
        await robot.provision()
    return robot


async def test_ota_gives_an_unpaired_robot_a_code_a_challenge_and_a_timeout(
        paired_server: LiveServer) -> None:
    robot = await waiting(paired_server)
    activation = robot.activation
    assert activation is not None
    assert len(activation["code"]) == 6 and activation["code"].isdigit()
    assert len(activation["challenge"]) >= 16
    assert activation["code"] in activation["message"]
    assert 0 < activation["timeout_ms"] <= 15 * 60 * 1000


async def test_activation_answers_202_until_the_code_is_entered_then_200(
        paired_server: LiveServer) -> None:
    robot = await waiting(paired_server)
    assert await robot.activate() == 202
    assert await robot.activate() == 202
    paired_server.service.pairings.pair_by_code(robot.activation["code"], "hanako")
    assert await robot.activate() == 200
    await robot.provision()                    # the next OTA call has the token
    assert robot.token


async def test_pairing_records_the_serial_number_and_the_signature(
        paired_server: LiveServer) -> None:
    robot = await waiting(paired_server)
    challenge = robot.activation["challenge"]
    assert await robot.activate() == 202
    pairing = paired_server.service.pairings.pair_by_code(robot.activation["code"], "hanako")
    assert pairing.serial_number == SERIAL
    assert pairing.activation_challenge == challenge
    assert pairing.activation_hmac == hmac.new(CHIP_KEY, challenge.encode(),
                                               hashlib.sha256).hexdigest()
    assert pairing.client_id == robot.client_id


async def test_py_xiaozhi_wraps_the_signature_in_payload_and_is_understood(
        paired_server: LiveServer) -> None:
    robot = await waiting(paired_server, habits=PY_XIAOZHI)
    assert "Payload" in robot.activation_body()
    assert await robot.activate() == 202
    pairing = paired_server.service.pairings.pair_by_code(robot.activation["code"], "taro")
    assert pairing.serial_number == SERIAL and pairing.activation_hmac


async def test_a_chip_without_serial_number_polls_with_an_empty_body(
        paired_server: LiveServer) -> None:
    robot = SimulatedStackChan(paired_server.url)
    with pytest.raises(ProvisioningRefused):
        await robot.provision()
    assert robot.activation_body() == {}
    assert await robot.activate() == 202
    paired_server.service.pairings.pair_by_code(robot.activation["code"], "hanako")
    assert await robot.activate() == 200


async def test_an_unknown_challenge_is_refused_with_404(paired_server: LiveServer) -> None:
    robot = await waiting(paired_server)
    assert await robot.activate(challenge="not-the-challenge-we-gave") == 404


async def test_a_robot_nobody_asked_to_activate_gets_404(paired_server: LiveServer) -> None:
    robot = SimulatedStackChan(paired_server.url, serial_number=SERIAL, chip_key=CHIP_KEY)
    assert await robot.activate(challenge="0" * 32) == 404


async def test_an_expired_code_is_refused_with_410_and_ota_gives_a_new_one(
        tmp_path: Path) -> None:
    server = await start_server(tmp_path, activation_ttl_minutes=0.001)   # 60 ms
    try:
        robot = await waiting(server)
        old = robot.activation["code"]
        await asyncio.sleep(0.2)
        assert await robot.activate() == 410
        with pytest.raises(ProvisioningRefused):
            await robot.provision()
        assert robot.activation["code"] != old
    finally:
        await server.stop()


async def test_another_serial_number_than_announced_is_refused_with_409(
        paired_server: LiveServer) -> None:
    robot = await waiting(paired_server)
    robot.serial_number = "SN-SOMEONE-ELSE"
    assert await robot.activate() == 409


async def test_a_malformed_activation_body_is_a_bad_request(paired_server: LiveServer) -> None:
    robot = await waiting(paired_server)
    async with httpx.AsyncClient() as client:
        for body in (b"{not json", b"[1]", b'{"algorithm": "md5"}', b'{"hmac": "xyz"}'):
            response = await client.post(f"{paired_server.url}/xiaozhi/ota/activate",
                                         headers=robot.http_headers(), content=body)
            assert response.status_code == 400, body


# -- CORS: browser clients read every device answer; the management API stays closed ---
ORIGIN = {"Origin": "http://page.example"}


async def test_every_ota_answer_allows_browser_clients(paired_server: LiveServer) -> None:
    url = f"{paired_server.url}/xiaozhi/ota/"
    ids = {"Device-Id": "aa:bb:cc:dd:ee:10", "Client-Id": "c-10"}
    async with httpx.AsyncClient() as client:
        answers = [
            await client.post(url, headers={**ORIGIN, **ids}, json={}),        # activation
            await client.get(url, headers={**ORIGIN, **ids}),
            await client.post(url, headers=ORIGIN, json={}),                   # 400
            await client.post(url + "activate", headers={**ORIGIN, **ids}, json={}),  # 202
            await client.post(url + "activate", headers=ORIGIN, content=b"{"),        # 400
            await client.get(url + "firmware/board/none.bin", headers=ORIGIN),        # 404
            await client.options(url, headers={
                **ORIGIN, "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type, device-id, client-id"}),
        ]
    assert [a.status_code for a in answers] == [200, 200, 400, 202, 400, 404, 204]
    for answer in answers:
        assert answer.headers["access-control-allow-origin"] == "*"
    allowed = answers[-1].headers["access-control-allow-headers"].lower()
    assert "device-id" in allowed and "client-id" in allowed
    assert "POST" in answers[-1].headers["access-control-allow-methods"]


async def test_the_management_api_answers_no_cors(paired_server: LiveServer) -> None:
    async with httpx.AsyncClient() as client:
        listing = await client.get(f"{paired_server.url}/v1/devices", headers=ORIGIN)
        preflight = await client.options(f"{paired_server.url}/v1/devices/pair", headers={
            **ORIGIN, "Access-Control-Request-Method": "POST"})
    assert listing.status_code == 200
    assert "access-control-allow-origin" not in listing.headers
    assert "access-control-allow-origin" not in preflight.headers
