"""Provisioning and admission: OTA answers, tokens on the handshake, pairing, revocation."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from omoide_device_stackchan.simulator import ProvisioningRefused, SimulatedStackChan
from omoide_device_stackchan.testing import LiveServer


async def handshake_status(server: LiveServer, headers: dict[str, str],
                           query: str = "") -> int:
    """101 when the WebSocket opens, else the HTTP status of the refusal."""
    try:
        async with connect(f"ws://127.0.0.1:{server.port}/xiaozhi/v1/{query}",
                           additional_headers=headers, proxy=None):
            return 101
    except InvalidStatus as exc:
        return exc.response.status_code


async def test_ota_answers_with_server_time_websocket_and_the_devices_own_firmware(
        server: LiveServer) -> None:
    robot = SimulatedStackChan(server.url)
    before = int(time.time() * 1000)
    data = await robot.provision()
    assert before <= data["server_time"]["timestamp"] <= int(time.time() * 1000)
    assert data["server_time"]["timezone_offset"] == 540         # Asia/Tokyo
    assert data["firmware"] == {"version": "2.2.4", "url": ""}  # never an upgrade
    assert data["websocket"]["url"] == f"ws://127.0.0.1:{server.port}/xiaozhi/v1/"
    assert data["websocket"]["version"] == 1
    assert data["websocket"]["token"]


async def test_ota_by_get_uses_headers_only(server: LiveServer) -> None:
    async with httpx.AsyncClient() as client:
        response = await client.get(f"{server.url}/xiaozhi/ota/", headers={
            "Device-Id": "aa:bb:cc:dd:ee:01", "Client-Id": "c-1",
            "User-Agent": "m5stack-stackchan/2.2.4"})
    assert response.status_code == 200
    assert response.json()["firmware"]["version"] == "2.2.4"
    assert "token" in response.json()["websocket"]


async def test_ota_without_device_id_is_a_bad_request(server: LiveServer) -> None:
    async with httpx.AsyncClient() as client:
        response = await client.get(f"{server.url}/xiaozhi/ota/")
    assert response.status_code == 400


async def test_public_url_sets_the_websocket_url(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from omoide_device_stackchan.testing import start_server
    srv = await start_server(tmp_path, pairing_required=False,
                             public_url="https://robot.example.org")
    try:
        data = await SimulatedStackChan(srv.url).provision()
    finally:
        await srv.stop()
    assert data["websocket"]["url"] == "wss://robot.example.org/xiaozhi/v1/"


async def test_unknown_device_gets_an_activation_code_and_a_token_that_waits_for_it(
        paired_server: LiveServer) -> None:
    robot = SimulatedStackChan(paired_server.url)
    with pytest.raises(ProvisioningRefused) as info:
        await robot.provision()
    code = info.value.activation["code"]
    assert len(code) == 6 and code in info.value.activation["message"]
    assert robot.ws_url == f"ws://127.0.0.1:{paired_server.port}/xiaozhi/v1/"
    assert robot.token is not None
    assert await handshake_status(paired_server, robot.handshake_headers()) == 401


async def test_pairing_by_code_lets_the_device_in_as_its_user(
        paired_server: LiveServer) -> None:
    robot = SimulatedStackChan(paired_server.url)
    with pytest.raises(ProvisioningRefused) as info:
        await robot.provision()
    paired_server.service.pairings.pair_by_code(info.value.activation["code"], "hanako")
    await robot.provision()
    await robot.connect()
    try:
        reply = await robot.type_text("こんにちは")
    finally:
        await robot.close()
    assert reply.complete
    assert paired_server.host.requests[0].user == "hanako"
    assert paired_server.host.requests[0].device == robot.device_id


async def test_unpaired_device_is_refused_with_401(paired_server: LiveServer) -> None:
    token = paired_server.service.issue_token("aa:bb:cc:dd:ee:02", "c-2")
    status = await handshake_status(paired_server, {
        "Device-Id": "aa:bb:cc:dd:ee:02", "Client-Id": "c-2",
        "Authorization": f"Bearer {token}"})
    assert status == 401


async def test_missing_or_forged_token_is_refused_with_401(paired_server: LiveServer) -> None:
    paired_server.service.pairings.pair("aa:bb:cc:dd:ee:03", "hanako")
    base = {"Device-Id": "aa:bb:cc:dd:ee:03", "Client-Id": "c-3"}
    assert await handshake_status(paired_server, base) == 401
    forged = {**base, "Authorization": f"Bearer AAAA.{int(time.time())}"}
    assert await handshake_status(paired_server, forged) == 401


async def test_revoked_device_is_refused_and_logged(paired_server: LiveServer,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    paired_server.service.pairings.pair("aa:bb:cc:dd:ee:04", "hanako")
    token = paired_server.service.issue_token("aa:bb:cc:dd:ee:04", "c-4")
    headers = {"Device-Id": "aa:bb:cc:dd:ee:04", "Client-Id": "c-4",
               "Authorization": f"Bearer {token}"}
    assert await handshake_status(paired_server, headers) == 101
    paired_server.service.pairings.revoke("aa:bb:cc:dd:ee:04")
    assert await handshake_status(paired_server, headers) == 401
    assert any("device was revoked" in r.getMessage() for r in caplog.records)


async def test_token_issued_before_a_re_pairing_is_refused(paired_server: LiveServer) -> None:
    pairings = paired_server.service.pairings
    pairings.pair("aa:bb:cc:dd:ee:05", "hanako")
    old = paired_server.service.signer.issue("c-5", "aa:bb:cc:dd:ee:05",
                                             now=time.time() - 10)
    headers = {"Device-Id": "aa:bb:cc:dd:ee:05", "Client-Id": "c-5",
               "Authorization": f"Bearer {old}"}
    assert await handshake_status(paired_server, headers) == 401


async def test_query_parameters_work_for_browser_clients(server: LiveServer) -> None:
    token = server.service.issue_token("aa:bb:cc:dd:ee:06", "c-6")
    query = f"?device-id=aa:bb:cc:dd:ee:06&client-id=c-6&authorization=Bearer%20{token}"
    assert await handshake_status(server, {}, query) == 101


async def test_unsupported_protocol_version_is_refused(server: LiveServer) -> None:
    token = server.service.issue_token("aa:bb:cc:dd:ee:07", "c-7")
    status = await handshake_status(server, {
        "Device-Id": "aa:bb:cc:dd:ee:07", "Client-Id": "c-7", "Protocol-Version": "9",
        "Authorization": f"Bearer {token}"})
    assert status == 400


async def test_open_mode_gives_each_unpaired_device_its_own_user(server: LiveServer) -> None:
    robots = [SimulatedStackChan(server.url) for _ in range(2)]
    for robot in robots:
        await robot.provision()
        await robot.connect()
    try:
        await asyncio.gather(*(r.type_text("やあ") for r in robots))
    finally:
        for robot in robots:
            await robot.close()
    users = {r.user for r in server.host.requests}
    assert len(users) == 2
    assert all(u.startswith("device-") for u in users)


async def test_a_second_connection_of_one_device_replaces_the_first(server: LiveServer) -> None:
    first = SimulatedStackChan(server.url, device_id="aa:bb:cc:dd:ee:08")
    await first.provision()
    await first.connect()
    second = SimulatedStackChan(server.url, device_id="aa:bb:cc:dd:ee:08",
                                client_id=first.client_id)
    second.token = first.token
    await second.connect()
    try:
        assert await first.wait_closed(timeout=5) == 1000
        assert (await second.type_text("まだいる？")).complete
    finally:
        await first.close()
        await second.close()


async def test_revoking_a_connected_device_closes_it_with_a_policy_code(
        paired_server: LiveServer) -> None:
    robot = SimulatedStackChan(paired_server.url)
    paired_server.service.pairings.pair(robot.device_id, "hanako")
    await robot.provision()
    await robot.connect()
    try:
        paired_server.service.pairings.revoke(robot.device_id)
        assert await robot.wait_closed(timeout=5) == 1008
    finally:
        await robot.close()
    assert paired_server.host.ended == ["hanako"]
