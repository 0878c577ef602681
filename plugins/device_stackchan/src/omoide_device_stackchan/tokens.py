"""Device tokens: HMAC-SHA256 over client id, device id and issue time, with expiry.

A token is ``base64url(HMAC_SHA256(secret, "v1|client|device|issued")) + "." + issued``
(seconds since the epoch), the shape xiaozhi servers use plus a version tag. The
device keeps it verbatim in NVS and sends it as ``Authorization: Bearer <token>``.
Checking needs no state beyond the secret; revocation is done by the pairing store
(a token issued before the device's current pairing is refused).

An **activation token** goes out with an activation code (clients such as py-xiaozhi
take the ``websocket`` of that same OTA answer and connect with it once their code is
entered, without asking OTA again). It also signs the activation's challenge:
``base64url(HMAC_SHA256(secret, "act1|client|device|challenge|issued")) + "." + issued
+ "." + challenge``. The signature proves who it was issued to; whether it is good *now*
is the pairing store's call: only while the device's pairing is the one made from that
very activation (same client id, same challenge, not revoked). So it is refused before
the code is entered, and for good once the device is paired again any other way.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from omoide_device_stackchan.identifiers import normalize_device_id

__all__ = ["TokenCheck", "TokenSigner", "bearer_token", "load_or_create_secret",
           "normalize_device_id"]

CLOCK_SKEW_S = 300
CHALLENGE = re.compile(r"[A-Za-z0-9_-]{8,128}")
"""What an activation challenge may look like inside a token (ours are 32 hex digits)."""


@dataclass(frozen=True)
class TokenCheck:
    """Outcome of checking a token: ``ok``, and if not, why (for the log, not the device)."""

    ok: bool
    reason: str = ""
    issued_at: int = 0
    activation: str | None = None
    """The challenge of the activation an activation token is bound to (None for a
    plain token): the token is good only for the pairing made from that activation."""


class TokenSigner:
    """Issues and checks device tokens with one secret."""

    def __init__(self, secret: bytes, ttl_s: float) -> None:
        if len(secret) < 16:
            raise ValueError("token secret must be at least 16 bytes")
        self._secret = secret
        self.ttl_s = ttl_s

    def _mac(self, client_id: str, device_id: str, issued: int,
             challenge: str | None = None) -> str:
        device = normalize_device_id(device_id)
        msg = (f"v1|{client_id}|{device}|{issued}" if challenge is None
               else f"act1|{client_id}|{device}|{challenge}|{issued}").encode()
        digest = hmac.new(self._secret, msg, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def issue(self, client_id: str, device_id: str, now: float | None = None) -> str:
        issued = int(time.time() if now is None else now)
        return f"{self._mac(client_id, device_id, issued)}.{issued}"

    def issue_for_activation(self, client_id: str, device_id: str, challenge: str,
                             now: float | None = None) -> str:
        """A token bound to the pending activation with ``challenge`` (see the module
        doc): it only becomes good once that activation's code is paired."""
        if not CHALLENGE.fullmatch(challenge):
            raise ValueError("activation challenge must be 8-128 letters, digits, - or _")
        issued = int(time.time() if now is None else now)
        return f"{self._mac(client_id, device_id, issued, challenge)}.{issued}.{challenge}"

    def check(self, token: str | None, client_id: str, device_id: str,
              now: float | None = None) -> TokenCheck:
        """Whether ``token`` was signed by us for this client and device and is not
        expired. For an activation token ``activation`` names its challenge; the
        caller must still check the pairing is the one made from that activation."""
        if not token:
            return TokenCheck(False, "no token")
        parts = token.strip().split(".")
        if len(parts) not in (2, 3) or not parts[1].isdigit() \
                or (len(parts) == 3 and not CHALLENGE.fullmatch(parts[2])):
            return TokenCheck(False, "malformed token")
        mac, issued = parts[0], int(parts[1])
        challenge = parts[2] if len(parts) == 3 else None
        expected = self._mac(client_id, device_id, issued, challenge)
        if not hmac.compare_digest(mac.encode(), expected.encode()):
            return TokenCheck(False, "token signature does not match this client and device")
        current = time.time() if now is None else now
        if issued > current + CLOCK_SKEW_S:
            return TokenCheck(False, "token issued in the future")
        if current - issued > self.ttl_s:
            return TokenCheck(False, "token expired", issued)
        return TokenCheck(True, "", issued, challenge)


def bearer_token(header: str | None) -> str | None:
    """The token of an ``Authorization`` value: ``Bearer <token>`` or a bare token."""
    if not header:
        return None
    value = header.strip()
    scheme, sep, rest = value.partition(" ")
    if sep and scheme.lower() == "bearer":
        return rest.strip() or None
    return value or None


def load_or_create_secret(path: Path) -> bytes:
    """The secret kept at ``path``, created (32 random bytes, mode 0600) on first use."""
    try:
        data = path.read_bytes().strip()
        if len(data) >= 32:
            return data
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    value = secrets.token_hex(32).encode()
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(value)
    try:
        # Another process may have won the race; keep whichever landed first.
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
    return path.read_bytes().strip()
