"""A robot's identity is its device id *and* the client id its firmware keeps, bound at
pairing: attacks on that binding, the owner's way back after a re-flash, rate limits,
and no token in the plugin's logs."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from omoide_device_stackchan.simulator import (
    WEB_PAGE,
    ProvisioningRefused,
    SimulatedStackChan,
)
from omoide_device_stackchan.testing import LiveServer, start_server


async def paired(server: LiveServer, user: str = "hanako", **kw: object) -> SimulatedStackChan:
    """A robot paired through its activation code, provisioned (it has its token)."""
    robot = SimulatedStackChan(server.url, **kw)  # type: ignore[arg-type]
    with pytest.raises(ProvisioningRefused):
        await robot.provision()
    server.service.pairings.pair_by_code(robot.activation["code"], user)
    await robot.provision()
    return robot


async def handshake_status(robot: SimulatedStackChan) -> int:
    try:
        async with connect(robot.handshake_url(), additional_headers=robot.handshake_headers(),
                           proxy=None):
            return 101
    except InvalidStatus as exc:
        return exc.response.status_code


async def test_a_paired_device_id_with_another_client_id_gets_no_token_that_opens(
        paired_server: LiveServer) -> None:
    robot = await paired(paired_server)
    impostor = SimulatedStackChan(paired_server.url, device_id=robot.device_id)
    with pytest.raises(ProvisioningRefused) as info:
        await impostor.provision()
    assert await handshake_status(impostor) == 401    # its token waits for its own code
    assert await handshake_status(robot) == 101
    waiting = {p.code: p for p in paired_server.service.pairings.pending()}
    assert waiting[info.value.activation["code"]].repair_of == "hanako"


async def test_a_token_does_not_work_with_another_client_id(paired_server: LiveServer) -> None:
    robot = await paired(paired_server)
    thief = SimulatedStackChan(paired_server.url, device_id=robot.device_id)
    thief.token = robot.token                 # sniffed
    assert await handshake_status(thief) == 401
    assert await handshake_status(robot) == 101


async def test_a_reflashed_robot_is_re_paired_by_its_new_code_and_the_old_token_dies(
        paired_server: LiveServer) -> None:
    robot = await paired(paired_server)
    old = SimulatedStackChan(paired_server.url, device_id=robot.device_id,
                             client_id=robot.client_id)
    old.token = robot.token
    reflashed = SimulatedStackChan(paired_server.url, device_id=robot.device_id)  # new UUID
    with pytest.raises(ProvisioningRefused):
        await reflashed.provision()
    paired_server.service.pairings.pair_by_code(reflashed.activation["code"], "hanako")
    await reflashed.provision()
    assert reflashed.token
    assert await handshake_status(reflashed) == 101
    assert await handshake_status(old) == 401


async def test_a_pairing_made_by_device_id_binds_the_first_client_id(
        paired_server: LiveServer) -> None:
    first = SimulatedStackChan(paired_server.url)
    paired_server.service.pairings.pair(first.device_id, "hanako")
    await first.provision()
    second = SimulatedStackChan(paired_server.url, device_id=first.device_id)
    with pytest.raises(ProvisioningRefused):
        await second.provision()
    assert paired_server.service.pairings.get(first.device_id).client_id == first.client_id


async def test_another_serial_number_than_the_paired_one_gets_no_token(
        paired_server: LiveServer) -> None:
    robot = await paired(paired_server, serial_number="SN-A", chip_key=b"k")
    robot.serial_number = "SN-B"
    with pytest.raises(ProvisioningRefused):
        await robot.provision()


async def test_64_made_up_ids_from_one_source_cannot_push_out_a_robots_code(
        tmp_path: Path) -> None:
    server = await start_server(tmp_path, ota_rate_limit="1000/minute")
    try:
        robot = SimulatedStackChan(server.url, local_address="127.0.0.2")
        with pytest.raises(ProvisioningRefused):
            await robot.provision()
        code = robot.activation["code"]
        async with httpx.AsyncClient() as client:       # the attacker, from 127.0.0.1
            for i in range(64):
                await client.post(f"{server.url}/xiaozhi/ota/", json={}, headers={
                    "Device-Id": f"02:00:00:00:00:{i:02x}", "Client-Id": f"fake-{i}"})
        pending = server.service.pairings.pending()
        assert code in {p.code for p in pending}
        assert sum(p.source == "127.0.0.1" for p in pending) == 4
        server.service.pairings.pair_by_code(code, "hanako")
        await robot.provision()
        assert robot.token
    finally:
        await server.stop()


async def test_too_many_ota_requests_from_one_source_get_429(tmp_path: Path) -> None:
    server = await start_server(tmp_path, ota_rate_limit="5/minute")
    try:
        async with httpx.AsyncClient() as client:
            statuses = [(await client.get(f"{server.url}/xiaozhi/ota/", headers={
                "Device-Id": "aa:bb:cc:dd:ee:20", "Client-Id": "c"})).status_code
                for _ in range(7)]
            refused = await client.get(f"{server.url}/xiaozhi/ota/", headers={
                "Device-Id": "aa:bb:cc:dd:ee:20", "Client-Id": "c"})
        other = SimulatedStackChan(server.url, local_address="127.0.0.2")
        with pytest.raises(ProvisioningRefused):    # another source is still served
            await other.provision()
    finally:
        await server.stop()
    assert statuses == [200] * 5 + [429] * 2
    assert int(refused.headers["retry-after"]) >= 1


@pytest.mark.parametrize(("header", "value"), [("Device-Id", "aa:bb\x1b[31m"),
                                               ("Device-Id", "x" * 65),
                                               ("Client-Id", "has space")])
async def test_malformed_ids_are_refused_before_they_reach_a_file_or_a_log(
        paired_server: LiveServer, header: str, value: str) -> None:
    headers = {"Device-Id": "aa:bb:cc:dd:ee:30", "Client-Id": "c-30", header: value}
    async with httpx.AsyncClient() as client:
        response = await client.post(f"{paired_server.url}/xiaozhi/ota/", headers=headers,
                                     json={})
    assert response.status_code == 400
    assert paired_server.service.pairings.pending() == []


async def test_no_token_reaches_the_plugins_log(paired_server: LiveServer,
                                               caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="omoide")
    robot = await paired(paired_server, habits=WEB_PAGE)    # the token goes in the URL
    assert "authorization=" in robot.handshake_url()
    await robot.connect()
    try:
        await robot.wake()
        await robot.type_text("こんにちは")
    finally:
        await robot.close()
    forged = SimulatedStackChan(paired_server.url, device_id=robot.device_id,
                                client_id=robot.client_id, habits=WEB_PAGE)
    forged.token = robot.token[:-3] + "999"                 # refused, and logged as refused
    assert await handshake_status(forged) == 401
    assert robot.token
    plugin_lines = [r.getMessage() for r in caplog.records if r.name.startswith("omoide")]
    assert any("refused WebSocket" in line for line in plugin_lines)
    secret_part = robot.token.split(".")[0]
    assert not any(secret_part in line for line in plugin_lines)
    assert not any(forged.token.split(".")[0] in line for line in plugin_lines)
