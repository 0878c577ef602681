"""Which robot belongs to which household: a small JSON file, written atomically.

A pairing binds a robot to a **household** (:class:`omoide.api.Household`): its members
(person ids) and who answers when no voice is recognised, a default person or a guest
(a guest's turns read and write no one's memory). Pairing makes a household of one,
the person paired, who is its default: that is how a robot was always bound to one
person, and a pairing file written before households (no ``members``) loads as exactly
that, with nothing to migrate. :meth:`PairingStore.update_household` adds and removes
members and sets the default (or guest); re-pairing a robot to one of its members keeps
its household. In the file the household is the pairing's ``user`` (the default person,
or while guests answer the member the robot was paired to), ``members`` (empty: just
``user``) and ``guest_default``.

A pairing also binds the robot to what it proved about itself when it was paired
(trust on first use):

- its **client id**, the UUID the firmware generates once and keeps in flash. The OTA
  endpoint hands a WebSocket token only to the paired device id *with this client id*;
  anyone else claiming the device id (a MAC is no secret) gets nothing;
- its **serial number** and **activation signature** (``hmac`` of the activation
  challenge, computed with a key burned into the chip), when the robot has them. They
  are recorded as evidence; the key itself is unknown to us, so the signature cannot be
  verified, but a robot that later presents another serial number is refused.

A robot that is not paired (or presents another client id, e.g. after a re-flash that
erased its flash) gets a **pending activation**: a six-digit code it shows on its screen
and a challenge it signs. ``omoide devices pair --code`` (or the console) turns the code
into a pairing, replacing an older one of the same device: that is how an owner
re-pairs a re-flashed robot. Pending activations are keyed by device id *and* client
id, so a stranger using a paired robot's device id gets a code of its own that nobody
will enter. They expire ``activation_ttl_s`` after the robot last asked.

Anyone can ask for a code, so the pool is bounded: at most ``max_pending`` codes, and
at most ``max_per_source`` per source address. A code whose robot is still asking (an
OTA request, or an activation poll with its challenge, within ``poll_timeout_s``: the
firmware polls every 3 s, py-xiaozhi every 5 s) is never pushed out to make room: a
code whose robot went quiet is, and when there is none a new code is refused
(:class:`PendingPoolFull`, 429 at OTA). So however many addresses ask for codes, a
robot that keeps polling keeps the code its owner is typing.

The server and ``omoide devices`` share the file: every change happens under an
exclusive ``flock`` on a sibling lock file and lands with ``os.replace``, and readers
reload when the file's mtime changes, so a pairing made from the CLI applies to a
running server at the robot's next request.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import fcntl
import json
import logging
import math
import os
import secrets
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from omoide.api import MAX_HOUSEHOLD_MEMBERS, Household, InvalidInput, validate_user_id
from omoide_device_stackchan.identifiers import normalize_device_id

log = logging.getLogger("omoide.device.stackchan")

FILE_NAME = "pairings.json"
ACTIVATION_TTL_S = 15 * 60
MAX_PENDING = 64
"""Pending activation codes kept at most (anyone can ask for one)."""
MAX_PENDING_PER_SOURCE = 4
POLL_TIMEOUT_S = 60.0
"""A pending code whose robot asked within this long is still wanted: never evicted."""
MAX_NAME_CHARS = 64


class PairingError(ValueError):
    """A pairing request that cannot be honoured (bad user id, unknown code...)."""


class UnknownCode(PairingError):
    """No robot is waiting with that activation code (never issued, used or expired)."""


class UnknownDevice(PairingError):
    """The device id names no pairing."""


class PendingPoolFull(PairingError):
    """No room for a new activation code: every code in the way (the pool's, or this
    source's) belongs to a robot that is still asking. Ask again after
    ``retry_after_s``."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


def _fields(cls: type[Any], raw: dict[str, Any]) -> dict[str, Any]:
    """The keys of ``raw`` that ``cls`` has (older or newer files may hold others)."""
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in raw.items() if k in names}


@dataclass(frozen=True)
class Pairing:
    """One robot bound to a household (see the module: ``user``, ``members`` and
    ``guest_default`` are its :attr:`household`)."""

    device_id: str
    user: str
    """The default person (or, while guests answer, the member it was paired to)."""
    paired_at: float
    revoked_at: float | None = None
    client_id: str | None = None
    """None only for a pairing made by device id: the first client id seen is bound."""
    last_seen: float | None = None
    name: str | None = None
    """A display name the owner gave the robot ("リビングのスタックチャン")."""
    serial_number: str | None = None
    activation_hmac: str | None = None
    activation_challenge: str | None = None
    firmware_version: str | None = None
    board: str | None = None
    application: str | None = None
    members: tuple[str, ...] = ()
    """The household's members in the order they joined; empty: ``user`` alone (every
    pairing made before households)."""
    guest_default: bool = False
    """True: a voice no one recognised is a guest, not ``user``."""

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    @property
    def household(self) -> Household:
        """Who the robot serves; a pairing from before households is a household of one."""
        members = self.members or (self.user,)
        return Household(members, None if self.guest_default else self.user)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Pairing:
        fields = _fields(cls, raw)
        fields["members"] = tuple(fields.get("members") or ())
        fields["guest_default"] = bool(fields.get("guest_default", False))
        return cls(**fields)


@dataclass(frozen=True)
class PendingActivation:
    """A robot waiting for its owner to enter the code it shows."""

    code: str
    device_id: str
    client_id: str | None
    requested_at: float
    expires_at: float = 0.0
    challenge: str = ""
    source: str = ""
    serial_number: str | None = None
    activation_hmac: str | None = None
    firmware_version: str | None = None
    board: str | None = None
    application: str | None = None
    repair_of: str | None = None
    """The user this device id is paired with already (a re-flashed robot, or someone
    else claiming its id): pairing the code replaces that pairing."""
    asked_at: float = 0.0
    """When its robot last asked: an OTA request, or an activation poll with this
    challenge (0 in files written before: the request's time)."""

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> PendingActivation:
        pending = cls(**_fields(cls, raw))
        if not pending.expires_at:   # written before expiry was stored
            pending = dataclasses.replace(pending, expires_at=pending.requested_at
                                          + ACTIVATION_TTL_S)
        if not pending.asked_at:
            pending = dataclasses.replace(pending, asked_at=pending.requested_at)
        return pending

    def expired(self, now: float) -> bool:
        return now >= self.expires_at

    def still_asked(self, now: float, poll_timeout_s: float) -> bool:
        """Whether its robot is still asking (within ``poll_timeout_s``, unexpired)."""
        return not self.expired(now) and now - self.asked_at < poll_timeout_s


class KeepDefault(enum.Enum):
    """:meth:`PairingStore.update_household` leaves the default person as it is."""

    KEEP = "keep"


KEEP_DEFAULT = KeepDefault.KEEP


def _kept_household(old: dict[str, Any], user: str) -> dict[str, Any]:
    """What a re-pairing to ``user`` keeps of the robot's former pairing ``old``: its
    household (members, guest or not) when ``user`` is one of its members (a re-flashed
    family robot stays the family's), nothing otherwise (a household of one)."""
    if not old:
        return {}
    household = Pairing.from_json(old).household
    if user not in household.members:
        return {}
    return {"members": household.members, "guest_default": household.guest_by_default}


def _changed_household(pairing: Pairing, add: list[str], remove: set[str],
                       default: str | KeepDefault | None) -> Household:
    """``pairing``'s household with ``add`` joined (and a new default person, who
    joins too), ``remove`` gone; raises :class:`PairingError` for a change that leaves
    no member or no default, or names someone both ways."""
    both = (set(add) | ({default} if isinstance(default, str) else set())) & remove
    if both:
        raise PairingError(f"{sorted(both)[0]!r} cannot be both added and removed")
    current = pairing.household
    members = [m for m in current.members if m not in remove]
    for joining in [*add, *([default] if isinstance(default, str) else [])]:
        if joining not in members:
            members.append(joining)
    person = current.default_person if isinstance(default, KeepDefault) else default
    if not members:
        raise PairingError("a household keeps at least one member")
    if len(members) > MAX_HOUSEHOLD_MEMBERS:
        raise PairingError(f"a household has at most {MAX_HOUSEHOLD_MEMBERS} members")
    if person is not None and person not in members:
        raise PairingError(f"{person!r} answers when no voice is recognised: choose another "
                           "default person (or guest) to remove them")
    try:
        return Household(tuple(members), person)
    except InvalidInput as exc:
        raise PairingError(str(exc)) from None


class ActivationState(enum.Enum):
    """Where a robot's ``POST /xiaozhi/ota/activate`` stands."""

    PENDING = "pending"            # the code is not entered yet: 202, ask again
    ACTIVATED = "activated"        # paired with this client id: 200
    EXPIRED = "expired"            # the code expired: 410, start over with OTA
    UNKNOWN = "unknown"            # no activation for this robot or challenge: 404
    MISMATCH = "mismatch"          # another serial number than announced: 409


@dataclass(frozen=True)
class DeviceInfo:
    """What a robot's OTA request said about its hardware and firmware."""

    serial_number: str | None = None
    firmware_version: str | None = None
    board: str | None = None
    application: str | None = None


def check_user(user: str) -> str:
    try:
        return validate_user_id(user.strip() if isinstance(user, str) else user)
    except InvalidInput as exc:
        raise PairingError(str(exc)) from None


def check_name(name: str | None) -> str | None:
    if name is None:
        return None
    name = name.strip()
    if not name:
        return None
    if len(name) > MAX_NAME_CHARS or any(not c.isprintable() for c in name):
        raise PairingError(f"name {name[:80]!r} must be 1-{MAX_NAME_CHARS} printable "
                           "characters")
    return name


class PairingStorage(Protocol):
    """Where a StackChan plugin keeps its pairings and pending activation codes: the
    methods its service, activation and management routes and ``omoide devices`` use.
    :class:`PairingStore` keeps them in a JSON file in the plugin's data folder (one
    server); :class:`omoide_device_stackchan.shared_pairing.PostgresPairingStore` in the
    shared database, so every worker knows every robot and every pending code."""

    activation_ttl_s: float
    max_pending: int
    max_per_source: int
    poll_timeout_s: float

    def close(self) -> None: ...
    def get(self, device_id: str) -> Pairing | None: ...
    def recent(self, device_id: str) -> Pairing | None: ...
    def pairings(self) -> list[Pairing]: ...
    def pending(self, now: float | None = None) -> list[PendingActivation]: ...
    def waiting(self, device_id: str, client_id: str,
                now: float | None = None) -> PendingActivation | None: ...
    def pair(self, device_id: str, user: str, client_id: str | None = None,
             name: str | None = None) -> Pairing: ...
    def pair_by_code(self, code: str, user: str, name: str | None = None) -> Pairing: ...
    def revoke(self, device_id: str) -> Pairing: ...
    def rename(self, device_id: str, name: str | None) -> Pairing: ...
    def update_household(self, device_id: str, *, add: tuple[str, ...] = (),
                         remove: tuple[str, ...] = (),
                         default: str | KeepDefault | None = KEEP_DEFAULT) -> Pairing: ...
    def bind_client(self, device_id: str, client_id: str) -> Pairing | None: ...
    def mark_seen(self, device_id: str, info: DeviceInfo | None = None) -> None: ...
    def request_activation(self, device_id: str, client_id: str | None, *,
                           source: str = "", info: DeviceInfo | None = None,
                           now: float | None = None) -> PendingActivation: ...
    def record_activation(self, device_id: str, client_id: str | None, *,
                          challenge: str | None, serial_number: str | None,
                          hmac: str | None, now: float | None = None) -> ActivationState: ...


class PairingStore:
    """Pairings and pending activation codes of one device plugin instance, in
    ``<directory>/pairings.json`` (a :class:`PairingStorage`). The rules live here;
    a subclass may keep the records elsewhere by overriding :meth:`_read`,
    :meth:`_pending_records`, :meth:`_locked` and :meth:`get`."""

    def __init__(self, directory: Path, *, activation_ttl_s: float = ACTIVATION_TTL_S,
                 max_pending: int = MAX_PENDING,
                 max_per_source: int = MAX_PENDING_PER_SOURCE,
                 poll_timeout_s: float = POLL_TIMEOUT_S) -> None:
        self.directory = Path(directory)
        self.path = self.directory / FILE_NAME
        self._lock_path = self.directory / (FILE_NAME + ".lock")
        self._cache: dict[str, Any] = {"devices": {}, "pending": {}}
        self._mtime: float | None = None
        self.activation_ttl_s = activation_ttl_s
        self.max_pending = max_pending
        self.max_per_source = max_per_source
        self.poll_timeout_s = poll_timeout_s

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
    def _locked(self, device: str | None = None) -> Iterator[dict[str, Any]]:
        """Read-modify-write under an exclusive lock; the yielded dict is written back.
        ``device``: the change reads and writes that device's pairing only (another
        storage may then lock less; the file is locked whole either way)."""
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

    def close(self) -> None:
        """Release what the store holds open (nothing for a file)."""

    def shared_secret(self) -> bytes | None:
        """The token secret kept with the pairings, when they are shared by several
        workers (None here: the plugin keeps its own in its data folder)."""
        return None

    # -- queries -----------------------------------------------------------------
    def get(self, device_id: str) -> Pairing | None:
        raw = self._read()["devices"].get(normalize_device_id(device_id))
        return Pairing.from_json(raw) if raw else None

    def recent(self, device_id: str) -> Pairing | None:
        """The pairing as lately known, for what is checked again and again while a
        robot is connected (still allowed? its household at each turn). Here: read now
        (the file is re-read only when it changed). Raises OSError when it cannot be
        read and nothing is known."""
        return self.get(device_id)

    def pairings(self) -> list[Pairing]:
        return sorted((Pairing.from_json(raw) for raw in self._read()["devices"].values()),
                      key=lambda p: p.paired_at)

    def _pending_records(self) -> dict[str, Any]:
        """The pending activations as stored, by code (expired ones too)."""
        return dict(self._read()["pending"])

    def pending(self, now: float | None = None) -> list[PendingActivation]:
        now = time.time() if now is None else now
        items = (PendingActivation.from_json(raw) for raw in self._pending_records().values())
        return sorted((p for p in items if not p.expired(now)), key=lambda p: p.requested_at)

    def waiting(self, device_id: str, client_id: str,
                now: float | None = None) -> PendingActivation | None:
        """The unexpired pending activation of this device and client id, if any."""
        device = normalize_device_id(device_id)
        return next((p for p in self.pending(now)
                     if p.device_id == device and p.client_id == client_id), None)

    # -- pairing -----------------------------------------------------------------
    def pair(self, device_id: str, user: str, client_id: str | None = None,
             name: str | None = None) -> Pairing:
        """Bind ``device_id`` to ``user`` by hand (re-pairing replaces the old binding
        and invalidates tokens issued before now). Without ``client_id`` the first
        client id the robot presents at OTA is bound (trust on first use)."""
        device = normalize_device_id(device_id)
        if not device:
            raise PairingError("device id is empty")
        user, name = check_user(user), check_name(name)
        with self._locked() as data:
            old = data["devices"].get(device) or {}
            pairing = dataclasses.replace(
                Pairing(device, user, time.time(), None, client_id, old.get("last_seen"),
                        name or old.get("name")), **_kept_household(old, user))
            data["devices"][device] = asdict(pairing)
            self._drop_pending_of(data, device)
        log.info("device %s paired with user %s", device, user)
        return pairing

    def pair_by_code(self, code: str, user: str, name: str | None = None) -> Pairing:
        """Pair the robot waiting with activation ``code`` (raises :class:`UnknownCode`).

        Replaces an earlier pairing of the same device id (a re-flashed robot): its
        tokens stop working and the robot's new client id is the one bound.
        """
        code = code.strip()
        user, name = check_user(user), check_name(name)
        now = time.time()
        with self._locked() as data:
            raw = data["pending"].get(code)
            pending = PendingActivation.from_json(raw) if raw else None
            if pending is None or pending.expired(now):
                raise UnknownCode(f"no robot is waiting with activation code {code!r}")
            old = data["devices"].get(pending.device_id) or {}
            pairing = Pairing(
                pending.device_id, user, now, None, pending.client_id, old.get("last_seen"),
                name or old.get("name"), pending.serial_number, pending.activation_hmac,
                pending.challenge or None, pending.firmware_version, pending.board,
                pending.application, **_kept_household(old, user))
            data["devices"][pairing.device_id] = asdict(pairing)
            self._drop_pending_of(data, pairing.device_id)
        if old.get("serial_number") and old["serial_number"] != pairing.serial_number:
            log.warning("device %s re-paired with another serial number than before",
                        pairing.device_id)
        log.info("device %s paired with user %s by activation code", pairing.device_id, user)
        return pairing

    @staticmethod
    def _drop_pending_of(data: dict[str, Any], device: str) -> None:
        for code, raw in list(data["pending"].items()):
            if raw["device_id"] == device:
                del data["pending"][code]

    def revoke(self, device_id: str) -> Pairing:
        device = normalize_device_id(device_id)
        with self._locked(device) as data:
            raw = data["devices"].get(device)
            if raw is None:
                raise UnknownDevice(f"device {device!r} is not paired")
            raw["revoked_at"] = time.time()
            pairing = Pairing.from_json(raw)
        log.info("device %s revoked", device)
        return pairing

    def rename(self, device_id: str, name: str | None) -> Pairing:
        """Give a paired robot a display name (None or blank removes it)."""
        device = normalize_device_id(device_id)
        name = check_name(name)
        with self._locked(device) as data:
            raw = data["devices"].get(device)
            if raw is None:
                raise UnknownDevice(f"device {device!r} is not paired")
            raw["name"] = name
            pairing = Pairing.from_json(raw)
        return pairing

    def update_household(self, device_id: str, *, add: tuple[str, ...] = (),
                         remove: tuple[str, ...] = (),
                         default: str | KeepDefault | None = KEEP_DEFAULT) -> Pairing:
        """Change who a paired robot serves: ``add`` and ``remove`` members, and set
        who answers when no voice is recognised (``default``: a person, who becomes a
        member if they are not; None: a guest). The default person can only be removed
        with another default (or guest) in the same change, and the last member not at
        all. Applies at the robot's next turn, also from the CLI to a running server."""
        device = normalize_device_id(device_id)
        joining = [check_user(p) for p in add]
        leaving = {check_user(p) for p in remove}
        if isinstance(default, str):
            default = check_user(default)
        with self._locked(device) as data:
            raw = data["devices"].get(device)
            if raw is None:
                raise UnknownDevice(f"device {device!r} is not paired")
            pairing = Pairing.from_json(raw)
            household = _changed_household(pairing, joining, leaving, default)
            raw["members"] = list(household.members)
            raw["guest_default"] = household.guest_by_default
            raw["user"] = household.default_person or (
                pairing.user if pairing.user in household.members else household.members[0])
            pairing = Pairing.from_json(raw)
        log.info("device %s serves %s (a voice no one recognised: %s)", device,
                 ", ".join(household.members), household.default_person or "a guest")
        return pairing

    def bind_client(self, device_id: str, client_id: str) -> Pairing | None:
        """Bind the first client id of a pairing made by device id (trust on first use);
        returns the pairing, or None when another client id was bound meanwhile."""
        device = normalize_device_id(device_id)
        with self._locked(device) as data:
            raw = data["devices"].get(device)
            if raw is None or (raw.get("client_id") not in (None, client_id)):
                return None
            raw["client_id"] = client_id
            pairing = Pairing.from_json(raw)
        log.info("device %s: bound its client id at first use", device)
        return pairing

    def mark_seen(self, device_id: str, info: DeviceInfo | None = None) -> None:
        """Note that a paired robot was heard from (and what firmware it runs)."""
        device = normalize_device_id(device_id)
        if self.get(device) is None:
            return
        with self._locked(device) as data:
            raw = data["devices"].get(device)
            if raw is None:
                return
            raw["last_seen"] = time.time()
            if info is not None:
                for key in ("firmware_version", "board", "application"):
                    value = getattr(info, key)
                    if value:
                        raw[key] = value
                if info.serial_number and not raw.get("serial_number"):
                    raw["serial_number"] = info.serial_number   # first use

    # -- activation --------------------------------------------------------------
    def request_activation(self, device_id: str, client_id: str | None, *,
                           source: str = "", info: DeviceInfo | None = None,
                           now: float | None = None) -> PendingActivation:
        """The pending activation of a robot that has to be paired: the same code and
        challenge while it keeps asking (each request extends its life), a new one
        otherwise. A new code needs room under ``max_per_source`` (for ``source``) and
        ``max_pending``: codes whose robots went quiet are dropped for it, the one asked
        for longest ago first; raises :class:`PendingPoolFull` when there are none."""
        device = normalize_device_id(device_id)
        now = time.time() if now is None else now
        info = info or DeviceInfo()
        with self._locked() as data:
            pending = data["pending"]
            for code, raw in list(pending.items()):
                if PendingActivation.from_json(raw).expired(now):
                    del pending[code]
            for raw in pending.values():
                if raw["device_id"] == device and raw.get("client_id") == client_id:
                    raw["expires_at"] = now + self.activation_ttl_s
                    raw["asked_at"] = now
                    raw["source"] = source or raw.get("source", "")
                    for key in ("serial_number", "firmware_version", "board", "application"):
                        if getattr(info, key) and not raw.get(key):
                            raw[key] = getattr(info, key)
                    return PendingActivation.from_json(raw)
            self._make_room(pending, source, now)
            code = f"{secrets.randbelow(10**6):06d}"
            while code in pending:
                code = f"{secrets.randbelow(10**6):06d}"
            paired = data["devices"].get(device)
            activation = PendingActivation(
                code, device, client_id, now, now + self.activation_ttl_s,
                secrets.token_hex(16), source, info.serial_number, None,
                info.firmware_version, info.board, info.application,
                paired["user"] if paired else None, now)
            pending[code] = asdict(activation)
        log.info("device %s asked to be paired (activation code %s%s)", device, code,
                 f"; it is paired with {activation.repair_of} under another client id"
                 if activation.repair_of else "")
        return activation

    def _make_room(self, pending: dict[str, Any], source: str, now: float) -> None:
        """Drop quiet codes until a new one from ``source`` fits both caps; raises
        :class:`PendingPoolFull` (nothing dropped in vain) when it cannot."""
        def codes_of(src: str | None) -> list[str]:
            return [c for c, r in pending.items()
                    if src is None or r.get("source", "") == src]

        for src, cap, what in ((source, self.max_per_source, f"from {source or '?'}"),
                               (None, self.max_pending, "in all")):
            excess = len(codes_of(src)) - cap + 1
            if excess <= 0:
                continue
            waiting = {c: PendingActivation.from_json(pending[c]) for c in codes_of(src)}
            quiet = sorted((c for c, p in waiting.items()
                            if not p.still_asked(now, self.poll_timeout_s)),
                           key=lambda c: waiting[c].asked_at)
            if len(quiet) < excess:
                soonest = min(p.asked_at for p in waiting.values()) + self.poll_timeout_s
                raise PendingPoolFull(
                    f"{len(waiting)} activation codes are waiting {what} and their robots "
                    "are still asking; no room for another",
                    max(1, math.ceil(soonest - now)))
            for code in quiet[:excess]:
                del pending[code]

    def record_activation(self, device_id: str, client_id: str | None, *,
                          challenge: str | None, serial_number: str | None,
                          hmac: str | None, now: float | None = None) -> ActivationState:
        """A robot's activation poll: record what it signed, and say where it stands."""
        device = normalize_device_id(device_id)
        now = time.time() if now is None else now
        mine = [(code, PendingActivation.from_json(raw))
                for code, raw in self._pending_records().items()
                if raw["device_id"] == device and raw.get("client_id") == client_id]
        if not mine:
            pairing = self.get(device)
            if pairing is None or not pairing.active or pairing.client_id != client_id:
                return ActivationState.UNKNOWN
            if challenge and pairing.activation_challenge \
                    and challenge != pairing.activation_challenge:
                return ActivationState.UNKNOWN
            if serial_number and pairing.serial_number \
                    and serial_number != pairing.serial_number:
                return ActivationState.MISMATCH
            if (serial_number and not pairing.serial_number) or \
                    (hmac and not pairing.activation_hmac):
                self._record_first_use(device, serial_number, hmac)
            return ActivationState.ACTIVATED
        code, pending = mine[0]
        if pending.expired(now):
            return ActivationState.EXPIRED
        if challenge and challenge != pending.challenge:
            return ActivationState.UNKNOWN
        if serial_number and pending.serial_number and serial_number != pending.serial_number:
            return ActivationState.MISMATCH
        with self._locked() as data:
            raw = data["pending"].get(code)
            if raw is None:          # paired (or evicted) in the meantime: ask again
                return ActivationState.PENDING
            raw["expires_at"] = now + self.activation_ttl_s
            raw["asked_at"] = now
            if serial_number:
                raw["serial_number"] = serial_number
            if hmac:
                raw["activation_hmac"] = hmac
        return ActivationState.PENDING

    def _record_first_use(self, device: str, serial_number: str | None,
                          hmac: str | None) -> None:
        with self._locked(device) as data:
            raw = data["devices"].get(device)
            if raw is None:
                return
            if serial_number and not raw.get("serial_number"):
                raw["serial_number"] = serial_number
            if hmac and not raw.get("activation_hmac"):
                raw["activation_hmac"] = hmac
