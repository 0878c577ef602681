"""A robot is paired to a household: its members and who answers when no voice is
recognised (a default person, or a guest). A pairing of one person is a household of
one, also when it was written before households existed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from omoide.api import Household
from omoide_device_stackchan.pairing import FILE_NAME, PairingError, PairingStore, UnknownDevice
from omoide_device_stackchan.testing import LiveServer

ROBOT = "aa:bb:cc:00:00:01"

OLD_FILE = {
    "devices": {ROBOT: {
        "device_id": ROBOT, "user": "hanako", "paired_at": 1780000000.0, "revoked_at": None,
        "client_id": "c0ffee00-0000-4000-8000-000000000001", "last_seen": 1780000100.0,
        "name": "リビング", "serial_number": "SN-1", "activation_hmac": "ab12",
        "activation_challenge": "ch", "firmware_version": "2.2.4",
        "board": "m5stack-stackchan", "application": "xiaozhi"}},
    "pending": {}}


def old_store(directory: Path) -> PairingStore:
    """A pairing file as omoide wrote it before households."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / FILE_NAME).write_text(json.dumps(OLD_FILE), encoding="utf-8")
    return PairingStore(directory)


def test_a_pairing_file_from_before_households_loads_as_a_household_of_one(
        tmp_path: Path) -> None:
    pairing = old_store(tmp_path).get(ROBOT)
    assert pairing is not None
    assert pairing.household == Household(("hanako",), "hanako")
    assert (pairing.user, pairing.name, pairing.serial_number) == ("hanako", "リビング",
                                                                   "SN-1")


def test_changing_an_old_pairings_household_keeps_everything_else(tmp_path: Path) -> None:
    store = old_store(tmp_path)
    store.update_household(ROBOT, add=("taro",))
    raw = json.loads((tmp_path / FILE_NAME).read_text(encoding="utf-8"))["devices"][ROBOT]
    assert raw["members"] == ["hanako", "taro"] and raw["guest_default"] is False
    assert {k: raw[k] for k in OLD_FILE["devices"][ROBOT]} == OLD_FILE["devices"][ROBOT]
    assert (tmp_path / FILE_NAME).stat().st_mode & 0o077 == 0


def test_members_join_and_the_default_can_be_a_guest(tmp_path: Path) -> None:
    store = PairingStore(tmp_path)
    store.pair(ROBOT, "hanako")
    assert store.update_household(ROBOT, add=("taro", "jiro")).household == \
        Household(("hanako", "taro", "jiro"), "hanako")
    guest = store.update_household(ROBOT, default=None)
    assert guest.household.default_person is None and guest.user == "hanako"
    assert PairingStore(tmp_path).get(ROBOT).household.guest_by_default  # type: ignore[union-attr]
    taro = store.update_household(ROBOT, default="taro", remove=("jiro",))
    assert taro.household == Household(("hanako", "taro"), "taro") and taro.user == "taro"


def test_a_new_default_person_joins_the_household(tmp_path: Path) -> None:
    store = PairingStore(tmp_path)
    store.pair(ROBOT, "hanako")
    assert store.update_household(ROBOT, default="taro").household == \
        Household(("hanako", "taro"), "taro")


def test_the_default_person_leaves_only_with_another_default(tmp_path: Path) -> None:
    store = PairingStore(tmp_path)
    store.pair(ROBOT, "hanako")
    store.update_household(ROBOT, add=("taro",))
    with pytest.raises(PairingError, match="answers when no voice is recognised"):
        store.update_household(ROBOT, remove=("hanako",))
    moved = store.update_household(ROBOT, remove=("hanako",), default="taro")
    assert moved.household == Household(("taro",), "taro")


@pytest.mark.parametrize("change", [
    {"remove": ("hanako",), "default": None},           # no one left
    {"add": ("taro",), "remove": ("taro",)},            # both ways
    {"add": ("../etc",)},                               # not a person id
    {"add": tuple(f"p{i}" for i in range(16))},         # more than 16
])
def test_a_change_that_makes_no_household_is_refused_and_nothing_written(
        tmp_path: Path, change: dict[str, Any]) -> None:
    store = PairingStore(tmp_path)
    store.pair(ROBOT, "hanako")
    before = (tmp_path / FILE_NAME).read_bytes()
    with pytest.raises(PairingError):
        store.update_household(ROBOT, **change)
    assert (tmp_path / FILE_NAME).read_bytes() == before


def test_changing_the_household_of_an_unpaired_robot_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UnknownDevice):
        PairingStore(tmp_path).update_household(ROBOT, add=("taro",))


def test_re_pairing_to_a_member_keeps_the_household_and_to_anyone_else_does_not(
        tmp_path: Path) -> None:
    store = PairingStore(tmp_path)
    store.pair(ROBOT, "hanako")
    store.update_household(ROBOT, add=("taro",), default=None)
    assert store.pair(ROBOT, "taro").household == Household(("hanako", "taro"), None)
    assert store.pair(ROBOT, "saburo").household == Household(("saburo",), "saburo")


# -- the owner's API -----------------------------------------------------------------
async def api(server: LiveServer, method: str, path: str, **kw: Any) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        return await client.request(method, f"{server.url}/v1/devices{path}", **kw)


async def test_the_api_lists_each_robots_household(paired_server: LiveServer) -> None:
    paired_server.service.pairings.pair(ROBOT, "hanako")
    [device] = (await api(paired_server, "GET", "")).json()["devices"]
    assert device["user"] == "hanako"
    assert device["household"] == {"members": ["hanako"], "default_person": "hanako",
                                   "guest": False}


async def test_the_api_adds_members_and_sets_a_guest(paired_server: LiveServer) -> None:
    paired_server.service.pairings.pair(ROBOT, "hanako")
    added = await api(paired_server, "PATCH", f"/{ROBOT}/household", json={"add": ["taro"]})
    assert added.status_code == 200
    assert added.json()["device"]["household"]["default_person"] == "hanako"  # unchanged
    guest = await api(paired_server, "PATCH", f"/{ROBOT}/household",
                      json={"default_person": None})
    assert guest.json()["device"]["household"] == {
        "members": ["hanako", "taro"], "default_person": None, "guest": True}
    shown = (await api(paired_server, "GET", f"/{ROBOT}")).json()["device"]
    assert shown["household"]["guest"] is True


async def test_the_api_refuses_a_bad_household_400_and_an_unknown_robot_404(
        paired_server: LiveServer) -> None:
    paired_server.service.pairings.pair(ROBOT, "hanako")
    paired_server.service.pairings.update_household(ROBOT, add=("taro",))
    bad = await api(paired_server, "PATCH", f"/{ROBOT}/household",
                    json={"remove": ["hanako"]})
    unknown = await api(paired_server, "PATCH", "/aa:bb:cc:00:00:99/household",
                        json={"add": ["taro"]})
    extra = await api(paired_server, "PATCH", f"/{ROBOT}/household", json={"owner": "x"})
    assert (bad.status_code, unknown.status_code, extra.status_code) == (400, 404, 422)
    assert "answers when no voice is recognised" in bad.json()["error"]


# -- the CLI -------------------------------------------------------------------------
def omoide_devices(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "omoide.cli", "devices", *args,
                           "--config", str(config)], capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "omoide.yaml"
    path.write_text(f"server: {{data_dir: {tmp_path / 'data'}}}\nasr: {{use: fake}}\n"
                    "embed: {use: fake}\nstore: {use: fake}\nchat: {use: fake}\n"
                    "tts: {use: fake}\ndevices: [{use: stackchan}]\n", encoding="utf-8")
    return path


def test_the_cli_changes_and_shows_a_household(config: Path) -> None:
    assert omoide_devices(config, "pair", ROBOT, "--user", "hanako").returncode == 0
    changed = omoide_devices(config, "household", ROBOT, "--add", "taro", "--guest")
    assert changed.returncode == 0, changed.stderr
    assert changed.stdout.splitlines() == [
        f"{ROBOT} serves hanako, taro",
        "a voice no one recognised: a guest (no one's memory is read or written)"]
    listed = omoide_devices(config, "list")
    assert "HOUSEHOLD" in listed.stdout and "hanako, taro (guests)" in listed.stdout
    [paired] = json.loads(omoide_devices(config, "list", "--json").stdout)["paired"]
    assert paired["household"] == {"members": ["hanako", "taro"], "default_person": None}
    refused = omoide_devices(config, "household", ROBOT, "--remove", "hanako",
                             "--remove", "taro")
    assert refused.returncode == 1 and "at least one member" in refused.stderr
