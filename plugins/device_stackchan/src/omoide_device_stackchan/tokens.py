"""Device tokens: HMAC-SHA256 over client id, device id and issue time, with expiry.

A token is ``base64url(HMAC_SHA256(secret, "v1|client|device|issued")) + "." + issued``
(seconds since the epoch), the shape xiaozhi servers use plus a version tag. The
device keeps it verbatim in NVS and sends it as ``Authorization: Bearer <token>``.
Checking needs no state beyond the secret; revocation is done by the pairing store
(a token issued before the device's current pairing is refused).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from omoide_device_stackchan.identifiers import normalize_device_id

__all__ = ["TokenCheck", "TokenSigner", "bearer_token", "load_or_create_secret",
           "normalize_device_id"]

CLOCK_SKEW_S = 300


@dataclass(frozen=True)
class TokenCheck:
    """Outcome of checking a token: ``ok``, and if not, why (for the log, not the device)."""

    ok: bool
    reason: str = ""
    issued_at: int = 0


class TokenSigner:
    """Issues and checks device tokens with one secret."""

    def __init__(self, secret: bytes, ttl_s: float) -> None:
        if len(secret) < 16:
            raise ValueError("token secret must be at least 16 bytes")
        self._secret = secret
        self.ttl_s = ttl_s

    def _mac(self, client_id: str, device_id: str, issued: int) -> str:
        msg = f"v1|{client_id}|{normalize_device_id(device_id)}|{issued}".encode()
        digest = hmac.new(self._secret, msg, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def issue(self, client_id: str, device_id: str, now: float | None = None) -> str:
        issued = int(time.time() if now is None else now)
        return f"{self._mac(client_id, device_id, issued)}.{issued}"

    def check(self, token: str | None, client_id: str, device_id: str,
              now: float | None = None) -> TokenCheck:
        if not token:
            return TokenCheck(False, "no token")
        mac, sep, issued_text = token.strip().rpartition(".")
        if not sep or not issued_text.isdigit():
            return TokenCheck(False, "malformed token")
        issued = int(issued_text)
        expected = self._mac(client_id, device_id, issued)
        if not hmac.compare_digest(mac.encode(), expected.encode()):
            return TokenCheck(False, "token signature does not match this client and device")
        current = time.time() if now is None else now
        if issued > current + CLOCK_SKEW_S:
            return TokenCheck(False, "token issued in the future")
        if current - issued > self.ttl_s:
            return TokenCheck(False, "token expired", issued)
        return TokenCheck(True, "", issued)


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
