"""Which device belongs to which user: a small JSON file, written atomically.

Pairing binds a device id (the robot's MAC) to the user whose memories it uses.
The server and ``omoide devices`` share the file: every change happens under an
exclusive ``flock`` on a sibling lock file and lands with ``os.replace``, and readers
reload when the file's mtime changes, so a pairing made from the CLI applies to a
running server at the next connection.

An unknown device that asks for provisioning gets a pending six-digit activation
code (shown on its screen); ``omoide devices pair --code`` turns it into a pairing.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import secrets
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from omoide_device_stackchan.tokens import normalize_device_id

log = logging.getLogger("omoide.device.stackchan")

FILE_NAME = "pairings.json"
ACTIVATION_TTL_S = 24 * 3600
MAX_PENDING = 64
"""Pending activation codes kept at most (anyone can ask for one; the oldest go first)."""


class PairingError(ValueError):
    """A pairing request that cannot be honoured (bad user id, unknown code...)."""


@dataclass(frozen=True)
class Pairing:
    device_id: str
    user: str
    paired_at: float
    revoked_at: float | None = None
    client_id: str | None = None
    last_seen: float | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


@dataclass(frozen=True)
class PendingActivation:
    code: str
    device_id: str
    client_id: str | None
    requested_at: float


def check_user_id(user: str) -> str:
    user = user.strip()
    if not user or len(user) > 64 or any(ord(c) < 32 or c in "/\\" for c in user):
        raise PairingError(f"user id {user!r} must be 1-64 characters without '/' or controls")
    return user


class PairingStore:
    """Pairings and pending activation codes of one device plugin instance."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.path = self.directory / FILE_NAME
        self._lock_path = self.directory / (FILE_NAME + ".lock")
        self._cache: dict[str, Any] = {"devices": {}, "pending": {}}
        self._mtime: float | None = None

    # -- file handling -----------------------------------------------------------
    def _read(self) -> dict[str, Any]:
        try:
            mtime = self.path.stat().st_mtime_ns
        except FileNotFoundError:
            self._cache, self._mtime = {"devices": {}, "pending": {}}, None
            return self._cache
        if mtime != self._mtime:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                # Keep serving the last good copy rather than locking every device out.
                log.error("cannot read %s (%s); using the last good copy", self.path, exc)
                return self._cache
            data.setdefault("devices", {})
            data.setdefault("pending", {})
            self._cache, self._mtime = data, mtime
        return self._cache

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        """Read-modify-write under an exclusive lock; the yielded dict is written back."""
        self.directory.mkdir(parents=True, exist_ok=True)
        with open(self._lock_path, "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                self._mtime = None  # always re-read under the lock
                data = json.loads(json.dumps(self._read()))
                yield data
                self._write(data)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _write(self, data: dict[str, Any]) -> None:
        fd, tmp = tempfile.mkstemp(prefix=".pairings.", dir=self.directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, ensure_ascii=False, indent=1, sort_keys=True)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        self._cache, self._mtime = data, self.path.stat().st_mtime_ns

    # -- queries -----------------------------------------------------------------
    def get(self, device_id: str) -> Pairing | None:
        raw = self._read()["devices"].get(normalize_device_id(device_id))
        return Pairing(**raw) if raw else None

    def pairings(self) -> list[Pairing]:
        return sorted((Pairing(**raw) for raw in self._read()["devices"].values()),
                      key=lambda p: p.paired_at)

    def pending(self, now: float | None = None) -> list[PendingActivation]:
        now = time.time() if now is None else now
        return sorted((PendingActivation(**raw) for raw in self._read()["pending"].values()
                       if now - raw["requested_at"] < ACTIVATION_TTL_S),
                      key=lambda p: p.requested_at)

    # -- changes -----------------------------------------------------------------
    def pair(self, device_id: str, user: str, client_id: str | None = None) -> Pairing:
        """Bind ``device_id`` to ``user`` (re-pairing replaces the old binding and
        invalidates tokens issued before now)."""
        device = normalize_device_id(device_id)
        if not device:
            raise PairingError("device id is empty")
        user = check_user_id(user)
        with self._locked() as data:
            pairing = Pairing(device, user, time.time(), None, client_id)
            data["devices"][device] = asdict(pairing)
            for code, raw in list(data["pending"].items()):
                if raw["device_id"] == device:
                    del data["pending"][code]
        log.info("device %s paired with user %s", device, user)
        return pairing

    def pair_by_code(self, code: str, user: str) -> Pairing:
        code = code.strip()
        now = time.time()
        with self._locked() as data:
            raw = data["pending"].get(code)
            if raw is None or now - raw["requested_at"] >= ACTIVATION_TTL_S:
                raise PairingError(f"no device is waiting with activation code {code!r}")
            pairing = Pairing(raw["device_id"], check_user_id(user), now, None,
                              raw.get("client_id"))
            data["devices"][pairing.device_id] = asdict(pairing)
            del data["pending"][code]
        log.info("device %s paired with user %s by activation code", pairing.device_id, user)
        return pairing

    def revoke(self, device_id: str) -> Pairing:
        device = normalize_device_id(device_id)
        with self._locked() as data:
            raw = data["devices"].get(device)
            if raw is None:
                raise PairingError(f"device {device!r} is not paired")
            raw["revoked_at"] = time.time()
            pairing = Pairing(**raw)
        log.info("device %s revoked", device)
        return pairing

    def request_activation(self, device_id: str, client_id: str | None) -> PendingActivation:
        """The pending activation code of an unpaired device (the same one while it waits)."""
        device = normalize_device_id(device_id)
        now = time.time()
        with self._locked() as data:
            pending = data["pending"]
            for code, raw in list(pending.items()):
                if now - raw["requested_at"] >= ACTIVATION_TTL_S:
                    del pending[code]
                elif raw["device_id"] == device:
                    return PendingActivation(**raw)
            for stale in sorted(pending, key=lambda c: pending[c]["requested_at"])[
                    :max(0, len(pending) - MAX_PENDING + 1)]:
                del pending[stale]
            code = f"{secrets.randbelow(10**6):06d}"
            while code in pending:
                code = f"{secrets.randbelow(10**6):06d}"
            activation = PendingActivation(code, device, client_id, now)
            pending[code] = asdict(activation)
        log.info("device %s asked to be paired; activation code %s", device, code)
        return activation

    def mark_seen(self, device_id: str) -> None:
        device = normalize_device_id(device_id)
        if device not in self._read()["devices"]:
            return
        with self._locked() as data:
            if device in data["devices"]:
                data["devices"][device]["last_seen"] = time.time()
