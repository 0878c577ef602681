"""What a robot says it is: device id, client id, serial number, activation signature.

Every one of these arrives in a header or a JSON body anyone can write, and each ends
up in the pairing file, in log lines and in the console. So each has one rule, checked
where it enters; a value that breaks it is refused (HTTP 400, or 401 on the
WebSocket handshake) instead of being stored or logged raw.

- device id: the robot's MAC address (``aa:bb:cc:dd:ee:ff``) or another short name a
  client picked (browser clients let the user type one): 1-64 of ``A-Z a-z 0-9 : . _ -``,
  compared lower-case;
- client id: the UUID the firmware generates once and keeps in flash (a re-flash that
  erases flash makes a new one): 1-128 of ``A-Z a-z 0-9 : . _ - @``;
- serial number: burned into the chip's eFuse at the factory (devices without one send
  none): 1-64 printable ASCII characters;
- activation signature: ``hmac`` of the activation challenge, 64 hex digits.
"""

from __future__ import annotations

import re

_DEVICE_ID = re.compile(r"[A-Za-z0-9:._-]{1,64}")
_CLIENT_ID = re.compile(r"[A-Za-z0-9:._@-]{1,128}")
_SERIAL = re.compile(r"[\x21-\x7e]{1,64}")
_HMAC = re.compile(r"[0-9a-fA-F]{64}")


class BadIdentifier(ValueError):
    """An identifier that breaks its rule; the message shows it with ``repr``."""


def normalize_device_id(device_id: str) -> str:
    """Device ids are MAC addresses; compare them lower-case and trimmed."""
    return device_id.strip().lower()


def check_device_id(value: str) -> str:
    """The normalised device id, or :class:`BadIdentifier`."""
    device = normalize_device_id(value)
    if not _DEVICE_ID.fullmatch(device):
        raise BadIdentifier(f"device id {value[:80]!r} must be 1-64 of A-Z a-z 0-9 : . _ -")
    return device


def check_client_id(value: str) -> str:
    client = value.strip()
    if not _CLIENT_ID.fullmatch(client):
        raise BadIdentifier(f"client id {value[:80]!r} must be 1-128 of A-Z a-z 0-9 : . _ - @")
    return client


def check_serial_number(value: str) -> str:
    # The firmware sends all 32 eFuse bytes; a short serial is padded with NULs.
    serial = value.strip().rstrip("\x00")
    if not _SERIAL.fullmatch(serial):
        raise BadIdentifier(f"serial number {value[:80]!r} must be 1-64 printable ASCII "
                            "characters")
    return serial


def check_hmac(value: str) -> str:
    if not _HMAC.fullmatch(value.strip()):
        raise BadIdentifier("hmac must be 64 hex digits (HMAC-SHA256)")
    return value.strip().lower()
