"""Pairings, pending activation codes and the token secret in the shared database, so
every ``omoide serve`` worker knows every robot (``database.url``, PostgreSQL).

The rules are :class:`~omoide_device_stackchan.pairing.PairingStore`'s, unchanged: this
store keeps the same records (a pairing, a pending activation, as their JSON) in rows
instead of one file, in three tables (:data:`MIGRATIONS`, component
``stackchan_pairings``), each keyed by the plugin's **namespace** (its data folder's
name, ``device_stackchan``: two StackChan entries in ``devices:`` keep apart, as their folders
do):

- ``stackchan_devices``: one row per paired robot;
- ``stackchan_pending``: one row per pending activation code. A code shown by worker A
  is confirmed on worker B (``POST /v1/devices/pair``, ``omoide devices pair``) and the
  robot, polling A or B with its challenge, is told it is activated;
- ``stackchan_secrets``: the secret device tokens are signed with, when the config
  gives none (``token_secret``): the first worker to start draws it, every other reads
  it, so a token issued by A opens a connection to B.

A change that reads and writes several records (a pairing by code drops the device's
pending codes; a new code makes room in the pool) holds the namespace's advisory lock
exclusively for its transaction, as the file store holds its ``flock``; a change to one
robot's pairing (seen, renamed, its household) holds it shared. Either reads the pending
codes it needs and only the pairings it asks for (each row locked), never every robot. Every
read is a query: a change made on one worker, or by ``omoide devices``, applies to the
others at the robot's next request.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omoide.api import Migration, migrated_pool
from omoide_device_stackchan.identifiers import normalize_device_id
from omoide_device_stackchan.pairing import (
    ACTIVATION_TTL_S,
    MAX_PENDING,
    MAX_PENDING_PER_SOURCE,
    POLL_TIMEOUT_S,
    Pairing,
    PairingStore,
)

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

COMPONENT = "stackchan_pairings"
MIGRATIONS = (
    Migration(1, "pairings, pending activation codes and the token secret", """
CREATE TABLE stackchan_devices (
    namespace TEXT NOT NULL,
    device_id TEXT NOT NULL,
    record JSONB NOT NULL,
    PRIMARY KEY (namespace, device_id)
);
CREATE TABLE stackchan_pending (
    namespace TEXT NOT NULL,
    code TEXT NOT NULL,
    record JSONB NOT NULL,
    PRIMARY KEY (namespace, code)
);
CREATE TABLE stackchan_secrets (
    namespace TEXT PRIMARY KEY,
    secret TEXT NOT NULL
);
"""),
)


RECENT_S = 1.0
"""How old a pairing :meth:`PostgresPairingStore.recent` answers with may be."""
WATCHED_S = 10.0
"""A robot checked within this long is re-read with the others (it is connected)."""


class PairingsUnreachable(OSError):
    """The database does not answer and nothing is known of the robot yet."""


def _lock_key(namespace: str) -> int:
    digest = hashlib.sha256(f"omoide-stackchan-pairings/{namespace}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _record(value: Any) -> dict[str, Any]:
    """A JSONB column as a dict (psycopg decodes it; a text copy is parsed)."""
    return dict(json.loads(value) if isinstance(value, str | bytes) else value)


class _DeviceRows(dict[str, Any]):
    """The pairings a change reads, each fetched (and its row locked) when the change
    first asks for it by device id: a change touches one or two robots, never all of
    them, however many are paired. :attr:`before` holds what was fetched."""

    def __init__(self, fetch: Callable[[str], dict[str, Any] | None]) -> None:
        super().__init__()
        self._fetch = fetch
        self._asked: set[str] = set()
        self.before: dict[str, Any] = {}

    def _load(self, device: str) -> None:
        if device in self._asked:
            return
        self._asked.add(device)
        row = self._fetch(device)
        if row is not None:
            self.before[device] = json.loads(json.dumps(row))
            super().__setitem__(device, row)

    def get(self, device: str, default: Any = None) -> Any:
        self._load(device)
        return super().get(device, default)

    def __getitem__(self, device: str) -> Any:
        self._load(device)
        return super().__getitem__(device)

    def __contains__(self, device: object) -> bool:
        if isinstance(device, str):
            self._load(device)
        return super().__contains__(device)

    def __setitem__(self, device: str, record: Any) -> None:
        self._load(device)
        super().__setitem__(device, record)


class PostgresPairingStore(PairingStore):
    """The pairings of one StackChan plugin instance on every worker (see the module)."""

    def __init__(self, url: str, namespace: str, *, activation_ttl_s: float = ACTIVATION_TTL_S,
                 max_pending: int = MAX_PENDING,
                 max_per_source: int = MAX_PENDING_PER_SOURCE,
                 poll_timeout_s: float = POLL_TIMEOUT_S, pool_size: int = 4) -> None:
        # ``directory`` is unused: nothing is kept in files.
        super().__init__(Path(namespace), activation_ttl_s=activation_ttl_s,
                         max_pending=max_pending, max_per_source=max_per_source,
                         poll_timeout_s=poll_timeout_s)
        self.url = url
        self.namespace = namespace
        self.pool_size = pool_size
        self._pool: ConnectionPool | None = None
        self._recent: dict[str, tuple[float, Pairing | None]] = {}
        self._recent_lock = threading.Lock()

    def _conn(self) -> ConnectionPool:
        if self._pool is None:
            self._pool = migrated_pool(self.url, COMPONENT, MIGRATIONS,
                                       size=self.pool_size, name="omoide-stackchan")
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def _rows(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        with self._conn().connection() as conn:
            cursor = conn.execute(sql, params)
            return cursor.fetchall() if cursor.description else []

    # -- reads ------------------------------------------------------------------------
    def _devices(self, conn: Any, device: str | None = None, *,
                 for_update: bool = False) -> dict[str, Any]:
        sql = "SELECT device_id, record FROM stackchan_devices WHERE namespace=%s"
        params: tuple[Any, ...] = (self.namespace,)
        if device is not None:
            sql, params = sql + " AND device_id=%s", (*params, device)
        rows = conn.execute(sql + (" FOR UPDATE" if for_update else ""), params).fetchall()
        return {str(d): _record(r) for d, r in rows}

    def _pending_in(self, conn: Any) -> dict[str, Any]:
        rows = conn.execute("SELECT code, record FROM stackchan_pending WHERE namespace=%s",
                            (self.namespace,)).fetchall()
        return {str(c): _record(r) for c, r in rows}

    def _read(self) -> dict[str, Any]:
        with self._conn().connection() as conn, conn.transaction():
            return {"devices": self._devices(conn), "pending": self._pending_in(conn)}

    def _pending_records(self) -> dict[str, Any]:
        with self._conn().connection() as conn:
            return self._pending_in(conn)

    def get(self, device_id: str) -> Pairing | None:
        device = normalize_device_id(device_id)
        rows = self._rows("SELECT record FROM stackchan_devices WHERE namespace=%s"
                          " AND device_id=%s", (self.namespace, device))
        return Pairing.from_json(_record(rows[0][0])) if rows else None

    def recent(self, device_id: str) -> Pairing | None:
        """The pairing as read at most :data:`RECENT_S` ago. Every connected robot is
        checked each second (still allowed? its household at a turn): the first check
        after that long re-reads every robot checked lately in one query, so a worker
        asks the database about once a second however many robots it holds. When the
        database does not answer, the last known pairing stands (a robot keeps talking
        through an outage); raises :class:`PairingsUnreachable` when none is known."""
        device = normalize_device_id(device_id)
        now = time.monotonic()
        with self._recent_lock:
            known = self._recent.get(device)
            if known is not None and now - known[0] < RECENT_S:
                return known[1]
            watched = [d for d, (at, _) in self._recent.items() if now - at < WATCHED_S]
            wanted = sorted({device, *watched})
            try:
                rows = self._rows("SELECT device_id, record FROM stackchan_devices"
                                  " WHERE namespace=%s AND device_id = ANY(%s)",
                                  (self.namespace, wanted))
            except Exception as exc:   # any failure of the database or its pool
                if known is not None:
                    return known[1]
                raise PairingsUnreachable(f"pairings unreachable: {exc}") from exc
            found = {str(d): Pairing.from_json(_record(r)) for d, r in rows}
            self._recent = {d: (now, found.get(d)) for d in wanted}
            return found.get(device)

    # -- writes -----------------------------------------------------------------------
    @contextlib.contextmanager
    def _locked(self, device: str | None = None) -> Iterator[dict[str, Any]]:
        """The records a change reads, in one transaction, written back when it ends
        (what it added or changed upserted, what it removed deleted). ``device``: that
        robot's pairing alone (its row locked; no pending codes read or written)."""
        from psycopg.types.json import Jsonb

        with self._conn().connection() as conn, conn.transaction():
            if device is None:
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key(self.namespace),))
                pending = self._pending_in(conn)
            else:
                conn.execute("SELECT pg_advisory_xact_lock_shared(%s)",
                             (_lock_key(self.namespace),))
                pending = {}
            devices = _DeviceRows(lambda d: self._devices(conn, d, for_update=True).get(d))
            data = {"devices": devices, "pending": json.loads(json.dumps(pending))}
            yield data
            self._write_back(conn, "stackchan_devices", "device_id", devices.before,
                             dict(devices), Jsonb)
            self._write_back(conn, "stackchan_pending", "code", pending,
                             data["pending"], Jsonb)
        with self._recent_lock:   # this worker's own change shows at once
            self._recent.clear()

    def _write_back(self, conn: Any, table: str, key: str, old: dict[str, Any],
                    new: dict[str, Any], jsonb: Any) -> None:
        gone = [k for k in old if k not in new]
        if gone:
            conn.execute(f"DELETE FROM {table} WHERE namespace=%s AND {key} = ANY(%s)",
                         (self.namespace, gone))
        for k, record in new.items():
            if old.get(k) != record:
                conn.execute(f"INSERT INTO {table} (namespace, {key}, record)"
                             " VALUES (%s, %s, %s) ON CONFLICT (namespace, " + key + ")"
                             " DO UPDATE SET record = EXCLUDED.record",
                             (self.namespace, k, jsonb(record)))

    # -- the token secret ---------------------------------------------------------------
    def shared_secret(self) -> bytes:
        """The secret every worker signs device tokens with (drawn once, by the first)."""
        self._rows("INSERT INTO stackchan_secrets (namespace, secret) VALUES (%s, %s)"
                   " ON CONFLICT (namespace) DO NOTHING",
                   (self.namespace, secrets.token_urlsafe(32)))
        rows = self._rows("SELECT secret FROM stackchan_secrets WHERE namespace=%s",
                          (self.namespace,))
        return str(rows[0][0]).encode()

    def import_file(self, files: PairingStore) -> tuple[int, int]:
        """Copy a data dir's ``pairings.json`` in (pairings and pending codes not there
        yet); returns how many of each were copied."""
        data = files._read()
        with self._locked() as current:
            pairings = [d for d in data["devices"] if d not in current["devices"]]
            codes = [c for c in data["pending"] if c not in current["pending"]]
            for d in pairings:
                current["devices"][d] = data["devices"][d]
            for c in codes:
                current["pending"][c] = data["pending"][c]
        return len(pairings), len(codes)
