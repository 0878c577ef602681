"""The owner's JSON API under /v1/devices: list, pair a waiting code, rename, revoke."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from omoide_device_stackchan.device import StackChan
from omoide_device_stackchan.simulator import ProvisioningRefused, SimulatedStackChan
from omoide_device_stackchan.testing import LiveServer


async def api(server: LiveServer, method: str, path: str, **kw: Any) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        return await client.request(method, f"{server.url}/v1/devices{path}", **kw)


async def waiting_robot(server: LiveServer) -> SimulatedStackChan:
    robot = SimulatedStackChan(server.url, serial_number="SN-42", chip_key=b"key",
                               firmware_version="2.2.4")
    with pytest.raises(ProvisioningRefused):
        await robot.provision()
    await robot.activate()
    return robot


def test_the_device_endpoints_are_public_and_the_api_is_not() -> None:
    assert StackChan.public_paths == ("/xiaozhi/",)
    assert not "/v1/devices".startswith(StackChan.public_paths)


async def test_a_waiting_robot_is_listed_with_its_code_and_what_it_runs(
        paired_server: LiveServer) -> None:
    robot = await waiting_robot(paired_server)
    listing = (await api(paired_server, "GET", "")).json()
    assert listing["devices"] == []
    [waiting] = listing["pending"]
    assert waiting["code"] == robot.activation["code"]
    assert waiting["device_id"] == robot.device_id and waiting["client_id"] == robot.client_id
    assert waiting["serial_number"] == "SN-42" and waiting["signed"] is True
    assert waiting["firmware"] == {"version": "2.2.4", "board": "m5stack-stackchan",
                                   "application": "xiaozhi"}
    assert waiting["repair_of"] is None


async def test_pairing_a_code_to_a_person_lists_the_robot_with_its_identity(
        paired_server: LiveServer) -> None:
    robot = await waiting_robot(paired_server)
    answer = await api(paired_server, "POST", "/pair", json={
        "code": robot.activation["code"], "user": "hanako", "name": "リビング"})
    assert answer.status_code == 201
    assert await robot.activate() == 200
    await robot.provision()
    await robot.connect()
    try:
        listing = (await api(paired_server, "GET", "")).json()
    finally:
        await robot.close()
    [device] = listing["devices"]
    assert listing["pending"] == []
    assert (device["user"], device["name"], device["state"]) == ("hanako", "リビング", "active")
    assert device["online"] is True and device["last_seen"]
    assert device["client_id"] == robot.client_id and device["serial_number"] == "SN-42"
    assert device["signed"] is True
    assert device["firmware"]["version"] == "2.2.4"
    assert device["firmware"]["board"] == "m5stack-stackchan"
    shown = (await api(paired_server, "GET", f"/{robot.device_id}")).json()["device"]
    assert shown["online"] is False                   # it has left since
    assert shown["last_seen"] >= device["last_seen"]


async def test_pairing_an_unknown_code_is_404_and_a_bad_person_400(
        paired_server: LiveServer) -> None:
    robot = await waiting_robot(paired_server)
    unknown = await api(paired_server, "POST", "/pair", json={"code": "000000",
                                                             "user": "hanako"})
    bad_user = await api(paired_server, "POST", "/pair", json={
        "code": robot.activation["code"], "user": "../../etc"})
    extra = await api(paired_server, "POST", "/pair", json={
        "code": robot.activation["code"], "user": "hanako", "admin": True})
    assert (unknown.status_code, bad_user.status_code, extra.status_code) == (404, 400, 422)
    assert "user id" in bad_user.json()["error"]
    assert len((await api(paired_server, "GET", "")).json()["pending"]) == 1


async def test_rename_sets_and_clears_the_display_name(paired_server: LiveServer) -> None:
    paired_server.service.pairings.pair("aa:bb:cc:dd:ee:40", "hanako")
    named = await api(paired_server, "PATCH", "/aa:bb:cc:dd:ee:40", json={"name": "寝室"})
    cleared = await api(paired_server, "PATCH", "/aa:bb:cc:dd:ee:40", json={"name": None})
    missing = await api(paired_server, "PATCH", "/aa:bb:cc:dd:ee:41", json={"name": "x"})
    assert named.json()["device"]["name"] == "寝室"
    assert cleared.json()["device"]["name"] is None
    assert missing.status_code == 404


async def test_revoke_disconnects_the_robot_at_once_and_lists_it_revoked(
        paired_server: LiveServer) -> None:
    robot = SimulatedStackChan(paired_server.url)
    paired_server.service.pairings.pair(robot.device_id, "hanako")
    await robot.provision()
    await robot.connect()
    try:
        answer = await api(paired_server, "POST", f"/{robot.device_id}/revoke")
        assert answer.status_code == 200
        assert await robot.wait_closed(timeout=5) == 1008
    finally:
        await robot.close()
    device = answer.json()["device"]
    assert device["state"] == "revoked" and device["revoked_at"]
    assert (await api(paired_server, "POST", "/aa:00:00:00:00:00/revoke")).status_code == 404
