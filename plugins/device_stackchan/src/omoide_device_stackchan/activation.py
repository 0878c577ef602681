"""The body of ``POST /xiaozhi/ota/activate``: what a robot signed with its chip's key.

Two shapes are in use, both with ``Activation-Version: 2``:

- the firmware (``main/ota.cc`` ``GetActivationPayload``) posts the object itself:
  ``{"algorithm": "hmac-sha256", "serial_number", "challenge", "hmac"}``, or ``{}``
  when it has no serial number (and then no key to sign with);
- py-xiaozhi (``src/activation/client.py``) wraps it: ``{"Payload": {...}}``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from omoide_device_stackchan.identifiers import BadIdentifier, check_hmac, check_serial_number

MAX_CHALLENGE_CHARS = 128


@dataclass(frozen=True)
class ActivationRequest:
    challenge: str | None = None
    serial_number: str | None = None
    hmac: str | None = None


def parse_activation(body: bytes) -> ActivationRequest:
    """Read an activation body (empty means ``{}``); raises ValueError when malformed."""
    if not body.strip():
        return ActivationRequest()
    try:
        data = json.loads(body)
    except ValueError:
        raise ValueError("activation body is not JSON") from None
    if not isinstance(data, dict):
        raise ValueError("activation body must be a JSON object")
    payload = data.get("Payload", data)
    if not isinstance(payload, dict):
        raise ValueError("activation Payload must be a JSON object")
    algorithm = payload.get("algorithm")
    if algorithm not in (None, "hmac-sha256"):
        raise ValueError(f"unsupported activation algorithm {str(algorithm)[:40]!r}")
    challenge = payload.get("challenge")
    if challenge is not None and (not isinstance(challenge, str)
                                  or len(challenge) > MAX_CHALLENGE_CHARS):
        raise ValueError("activation challenge must be a short string")
    serial, hmac = payload.get("serial_number"), payload.get("hmac")
    for name, value in (("serial_number", serial), ("hmac", hmac)):
        if value is not None and not isinstance(value, str):
            raise ValueError(f"activation {name} must be a string")
    try:
        return ActivationRequest(
            challenge or None,
            check_serial_number(serial) if serial else None,
            # A chip without HMAC support sends an empty signature.
            check_hmac(hmac) if hmac else None)
    except BadIdentifier as exc:
        raise ValueError(str(exc)) from None
