"""Binary WebSocket framing of the xiaozhi protocol, versions 1, 2 and 3.

The device picks the version with its ``Protocol-Version`` handshake header; both
directions then use it for binary messages. All header fields are network byte order.

- v1: the message is one raw Opus packet.
- v2: 16-byte header ``u16 version, u16 type, u32 reserved, u32 timestamp_ms,
  u32 payload_size``, then the payload.
- v3: 4-byte header ``u8 type, u8 reserved, u16 payload_size``, then the payload.

``type`` is 0 for Opus audio and 1 for JSON.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

SUPPORTED_VERSIONS = (1, 2, 3)
TYPE_OPUS = 0
TYPE_JSON = 1

_V2 = struct.Struct(">HHIII")
_V3 = struct.Struct(">BBH")


class FramingError(ValueError):
    """A binary message does not follow the negotiated framing."""


@dataclass(frozen=True)
class BinaryMessage:
    """One decoded binary message: its type (``TYPE_OPUS``/``TYPE_JSON``) and payload."""

    type: int
    payload: bytes
    timestamp_ms: int = 0


def parse_version(value: str | None) -> int:
    """The framing version from a ``Protocol-Version`` header (absent means 1)."""
    if value is None or value.strip() == "":
        return 1
    try:
        version = int(value.strip())
    except ValueError:
        raise FramingError(f"Protocol-Version {value!r} is not a number") from None
    if version not in SUPPORTED_VERSIONS:
        raise FramingError(f"Protocol-Version {version} is not supported (1, 2 or 3)")
    return version


def encode(version: int, payload: bytes, *, type: int = TYPE_OPUS,
           timestamp_ms: int = 0) -> bytes:
    """Wrap ``payload`` in the header of framing ``version``."""
    if version == 1:
        if type != TYPE_OPUS:
            raise FramingError("framing v1 carries only Opus")
        return payload
    if version == 2:
        return _V2.pack(2, type, 0, timestamp_ms & 0xFFFFFFFF, len(payload)) + payload
    if version == 3:
        if len(payload) > 0xFFFF:
            raise FramingError(f"payload of {len(payload)} bytes does not fit framing v3")
        return _V3.pack(type, 0, len(payload)) + payload
    raise FramingError(f"unknown framing version {version}")


def decode(version: int, data: bytes) -> BinaryMessage:
    """Split one binary WebSocket message of framing ``version`` into type and payload.

    Raises :class:`FramingError` when the header is short, names another version or
    an unknown type, or its payload size disagrees with the message length.
    """
    if version == 1:
        return BinaryMessage(TYPE_OPUS, data)
    if version == 2:
        if len(data) < _V2.size:
            raise FramingError(f"v2 message of {len(data)} bytes is shorter than its header")
        ver, typ, _reserved, ts, size = _V2.unpack_from(data)
        if ver != 2:
            raise FramingError(f"v2 header says version {ver}")
        body = data[_V2.size:]
    elif version == 3:
        if len(data) < _V3.size:
            raise FramingError(f"v3 message of {len(data)} bytes is shorter than its header")
        typ, _reserved, size = _V3.unpack_from(data)
        ts = 0
        body = data[_V3.size:]
    else:
        raise FramingError(f"unknown framing version {version}")
    if typ not in (TYPE_OPUS, TYPE_JSON):
        raise FramingError(f"unknown binary message type {typ}")
    if size != len(body):
        raise FramingError(f"header announces {size} payload bytes, message has {len(body)}")
    return BinaryMessage(typ, body, ts)
