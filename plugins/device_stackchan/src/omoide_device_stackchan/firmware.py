"""Firmware updates: a directory of ESP32 images per board type, offered at OTA.

The owner drops images into ``<firmware_dir>/<board type>/`` (the board type is the
OTA request's ``board.type``, e.g. ``m5stack-stackchan``; any file name ending in
``.bin``). Each image's version and project name are read from the application
descriptor inside it, the same bytes the firmware checks before flashing, so a file
name can't lie about either. A robot is offered the newest image of its board type
whose project matches its ``application.name`` and whose version is newer than the
one it runs; a robot already on that version is offered nothing.

Image layout (ESP-IDF): a 24-byte image header, an 8-byte segment header, then
``esp_app_desc_t``: magic ``0xABCD5432``, secure version, 8 reserved bytes,
``version[32]``, ``project_name[32]``, ...
"""

from __future__ import annotations

import logging
import re
import struct
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("omoide.device.stackchan")

APP_DESC_OFFSET = 24 + 8
APP_DESC_MAGIC = 0xABCD5432
_APP_DESC = struct.Struct("<II8s32s32s")
IMAGE_MAGIC = 0xE9
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class FirmwareError(ValueError):
    """A file that is not an ESP application image (or is cut short)."""


@dataclass(frozen=True)
class FirmwareImage:
    board: str
    path: Path
    version: str
    project: str

    @property
    def file_name(self) -> str:
        return self.path.name


def version_key(version: str) -> tuple[int, ...]:
    """Numeric parts of a version (``2.2.4`` -> (2, 2, 4)); trailing zeros don't count."""
    parts = [int(p) for p in re.findall(r"\d+", version)]
    while parts and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def is_newer(candidate: str, current: str) -> bool:
    return version_key(candidate) > version_key(current)


def _c_string(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace").strip()


def read_app_description(path: Path) -> tuple[str, str]:
    """(version, project name) of the ESP application image at ``path``."""
    with path.open("rb") as f:
        head = f.read(APP_DESC_OFFSET + _APP_DESC.size)
    if len(head) < APP_DESC_OFFSET + _APP_DESC.size or head[0] != IMAGE_MAGIC:
        raise FirmwareError(f"{path.name} is not an ESP32 application image")
    magic, _secure, _reserved, version, project = _APP_DESC.unpack_from(head, APP_DESC_OFFSET)
    if magic != APP_DESC_MAGIC:
        raise FirmwareError(f"{path.name} has no application descriptor")
    return _c_string(version), _c_string(project)


def safe_name(value: str) -> str | None:
    """``value`` if it can name a board folder or an image file, else None."""
    return value if _NAME.fullmatch(value) else None


class FirmwareLibrary:
    """The images under one directory, read when asked (OTA calls are rare)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def images(self, board: str) -> list[FirmwareImage]:
        """Every readable image of ``board``, newest first."""
        if safe_name(board) is None:
            return []
        folder = self.directory / board
        found: list[FirmwareImage] = []
        for path in sorted(folder.glob("*.bin")) if folder.is_dir() else []:
            try:
                version, project = read_app_description(path)
            except (OSError, FirmwareError) as exc:
                log.warning("firmware %s skipped: %s", path, exc)
                continue
            found.append(FirmwareImage(board, path, version, project))
        return sorted(found, key=lambda i: version_key(i.version), reverse=True)

    def update_for(self, board: str, application: str | None,
                   current_version: str) -> FirmwareImage | None:
        """The image to offer a robot, or None when it runs the newest already."""
        for image in self.images(board):
            if application and image.project != application:
                continue
            return image if is_newer(image.version, current_version) else None
        return None

    def path_of(self, board: str, file_name: str) -> Path | None:
        """The image file a download URL names, if it exists in the library."""
        if safe_name(board) is None or safe_name(file_name) is None \
                or not file_name.endswith(".bin"):
            return None
        path = self.directory / board / file_name
        return path if path.is_file() else None
