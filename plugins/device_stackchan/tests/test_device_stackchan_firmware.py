"""Firmware updates from ``firmware_dir``: images per board type, read from their own
application descriptor, offered only to robots on an older version, served by omoide."""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from omoide_device_stackchan.firmware import (
    FirmwareError,
    FirmwareLibrary,
    is_newer,
    read_app_description,
)
from omoide_device_stackchan.simulator import SimulatedStackChan
from omoide_device_stackchan.testing import LiveServer, start_server

BOARD = "m5stack-stackchan"


def esp_image(version: str, project: str = "xiaozhi", body: bytes = b"\x00" * 4096) -> bytes:
    """A minimal ESP-IDF application image: image header, segment header, app descriptor."""
    header = bytes([0xE9, 1, 2, 0x20]) + b"\x00" * 20
    segment = struct.pack("<II", 0x3C000020, 256)
    desc = struct.pack("<II8s32s32s", 0xABCD5432, 0, b"\x00" * 8, version.encode(),
                       project.encode())
    return header + segment + desc + b"\x00" * 160 + body


@pytest.fixture
async def firmware_server(tmp_path: Path) -> AsyncIterator[LiveServer]:
    folder = tmp_path / "firmware" / BOARD
    folder.mkdir(parents=True)
    (folder / "stackchan-2.2.5.bin").write_bytes(esp_image("2.2.5"))
    (folder / "older.bin").write_bytes(esp_image("2.1.0"))
    (folder / "other-app.bin").write_bytes(esp_image("9.9.9", project="someone-else"))
    (folder / "notes.bin").write_bytes(b"not an image")
    server = await start_server(tmp_path / "srv", pairing_required=False,
                                firmware_dir=str(tmp_path / "firmware"))
    try:
        yield server
    finally:
        await server.stop()


def test_the_version_and_project_come_from_inside_the_image(tmp_path: Path) -> None:
    path = tmp_path / "misnamed-1.0.0.bin"
    path.write_bytes(esp_image("2.3.1", "xiaozhi"))
    assert read_app_description(path) == ("2.3.1", "xiaozhi")
    (tmp_path / "junk.bin").write_bytes(b"\xe9" + b"\x00" * 300)
    with pytest.raises(FirmwareError):
        read_app_description(tmp_path / "junk.bin")


@pytest.mark.parametrize(("candidate", "current", "newer"), [
    ("2.2.5", "2.2.4", True), ("2.2.4", "2.2.4", False), ("2.2.4", "2.2.10", False),
    ("2.3", "2.2.9", True), ("2.2.4.0", "2.2.4", False), ("v2.2.5", "2.2.4", True)])
def test_versions_compare_by_their_numbers(candidate: str, current: str, newer: bool) -> None:
    assert is_newer(candidate, current) is newer


async def test_a_robot_on_an_older_version_is_offered_the_newest_image(
        firmware_server: LiveServer) -> None:
    data = await SimulatedStackChan(firmware_server.url, firmware_version="2.2.4").provision()
    firmware = data["firmware"]
    assert firmware["version"] == "2.2.5"
    assert firmware["url"] == (f"{firmware_server.url}/xiaozhi/ota/firmware/{BOARD}/"
                               "stackchan-2.2.5.bin")
    async with httpx.AsyncClient() as client:
        image = await client.get(firmware["url"])
    assert image.status_code == 200
    assert image.content == esp_image("2.2.5")
    assert int(image.headers["content-length"]) == len(image.content)   # the firmware needs it
    assert image.headers["access-control-allow-origin"] == "*"


async def test_a_robot_on_that_version_already_gets_no_url(firmware_server: LiveServer) -> None:
    data = await SimulatedStackChan(firmware_server.url, firmware_version="2.2.5").provision()
    assert data["firmware"] == {"version": "2.2.5", "url": ""}


async def test_another_application_or_board_is_offered_nothing(
        firmware_server: LiveServer) -> None:
    other_app = await SimulatedStackChan(firmware_server.url, firmware_version="1.0.0",
                                         application="someone-else").provision()
    other_board = await SimulatedStackChan(firmware_server.url, firmware_version="1.0.0",
                                           board="esp-box-3").provision()
    assert other_app["firmware"]["version"] == "9.9.9"      # its own project's image
    assert other_board["firmware"] == {"version": "1.0.0", "url": ""}


@pytest.mark.parametrize("path", ["..%2F..%2Fetc/passwd", f"{BOARD}/..%2Fsecret.bin",
                                  f"{BOARD}/notes.txt", f"{BOARD}/missing.bin"])
async def test_only_images_in_the_library_are_served(firmware_server: LiveServer,
                                                     path: str) -> None:
    async with httpx.AsyncClient() as client:
        response = await client.get(f"{firmware_server.url}/xiaozhi/ota/firmware/{path}")
    assert response.status_code == 404


async def test_without_a_firmware_dir_no_update_is_offered(tmp_path: Path) -> None:
    server = await start_server(tmp_path, pairing_required=False)
    try:
        data = await SimulatedStackChan(server.url, firmware_version="0.0.1").provision()
    finally:
        await server.stop()
    assert data["firmware"] == {"version": "0.0.1", "url": ""}


def test_unreadable_images_are_skipped_not_fatal(tmp_path: Path) -> None:
    folder = tmp_path / BOARD
    folder.mkdir()
    (folder / "a.bin").write_bytes(b"garbage")
    (folder / "b.bin").write_bytes(esp_image("3.0.0"))
    library = FirmwareLibrary(tmp_path)
    assert [i.version for i in library.images(BOARD)] == ["3.0.0"]
    assert library.images("../etc") == []
