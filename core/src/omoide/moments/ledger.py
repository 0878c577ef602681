"""The ledger: which moments were said or cancelled, and who turned moments off.

One small SQLite file in the data folder (``moments.sqlite3``: WAL, ``synchronous=FULL``,
private to its owner as everything in the data folder is), written when a moment is
delivered, before anything else is said: a restart, or a second worker reading the same
file, never says a moment twice, and a moment not recorded is still due. Kept behind
this class's few methods (:meth:`record_delivered`, :meth:`delivered`, :meth:`cancel`,
:meth:`entries`, :meth:`set_off`, :meth:`set_quiet_hours`). What a person sets for
themselves from the console or the CLI lives here too (their off switch, their own
quiet hours), so every worker reads the same.

With ``database.url`` the same records live in PostgreSQL, shared by every worker
(:class:`omoide.moments.postgres_ledger.PostgresMomentLedger`, the same SQL on a pool;
:func:`omoide.moments.ledgers.open_ledger` picks one). Recording a moment is the claim
either way: the ``INSERT ... ON CONFLICT DO NOTHING`` of the first worker returns the
key, every other worker's returns nothing and it stays silent.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from omoide.moments.model import Moment

_SCHEMA = """
CREATE TABLE IF NOT EXISTS moments (
    key TEXT PRIMARY KEY,
    person TEXT NOT NULL,
    kind TEXT NOT NULL,
    state TEXT NOT NULL,          -- delivered | cancelled
    at TEXT NOT NULL,             -- ISO time it was delivered or cancelled
    local_day TEXT NOT NULL,      -- the person's local day it happened (daily limit)
    how TEXT NOT NULL DEFAULT '', -- pushed | opener | by whom it was cancelled
    text TEXT NOT NULL DEFAULT '',
    reasons TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS moments_person_day ON moments(person, local_day);
CREATE TABLE IF NOT EXISTS switched_off (
    person TEXT PRIMARY KEY,
    at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS quiet_hours (
    person TEXT PRIMARY KEY,
    span TEXT NOT NULL,           -- HH:MM-HH:MM, the person's own
    at TEXT NOT NULL
);
"""


@dataclass(frozen=True)
class LedgerEntry:
    key: str
    person: str
    kind: str
    state: str
    at: datetime
    how: str
    text: str
    reasons: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "person": self.person, "kind": self.kind,
                "state": self.state, "at": self.at.isoformat(), "how": self.how,
                "text": self.text, "reasons": list(self.reasons)}


class MomentLedger:
    """Delivered and cancelled moments, and people who switched moments off."""

    MOMENTS = "moments"
    SWITCHED_OFF = "switched_off"
    QUIET_HOURS = "quiet_hours"
    """The tables' names (the PostgreSQL ledger's are prefixed)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fresh = not self.path.exists()
            db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None,
                                 timeout=10)
            if fresh:
                os.chmod(self.path, 0o600)
            _write_ahead(db)
            db.execute("PRAGMA synchronous=FULL")
            db.executescript(_SCHEMA)
            self._db = db
        return self._db

    def _run(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return list(self._conn().execute(sql, params).fetchall())

    async def _sql(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        """Run ``sql`` (``{moments}``, ``{off}`` and ``{quiet}`` name the tables, ``?``
        the parameters) off the event loop."""
        sql = sql.replace("{moments}", self.MOMENTS).replace("{off}", self.SWITCHED_OFF) \
            .replace("{quiet}", self.QUIET_HOURS)
        return await asyncio.to_thread(self._run, sql, params)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    # -- the interface -----------------------------------------------------------------
    async def record_delivered(self, moment: Moment, at: datetime, local_day: str,
                               how: str, text: str) -> bool:
        """Record ``moment`` as said; False when it was already said or cancelled (by
        this process or another): then it must not be said."""
        rows = await self._sql(
            "INSERT INTO {moments}(key, person, kind, state, at, local_day, how, text, reasons)"
            " VALUES (?, ?, ?, 'delivered', ?, ?, ?, ?, ?) ON CONFLICT(key) DO NOTHING"
            " RETURNING key",
            (moment.key, moment.person, moment.kind.value, at.isoformat(), local_day, how,
             text, " ".join(moment.reasons)))
        return bool(rows)

    async def delivered(self, key: str) -> bool:
        """Whether the moment ``key`` was said or cancelled (either way: not again)."""
        return bool(await self._sql("SELECT 1 FROM {moments} WHERE key = ?", (key,)))

    async def settled_keys(self, person: str) -> set[str]:
        rows = await self._sql("SELECT key FROM {moments} WHERE person = ?", (person,))
        return {r[0] for r in rows}

    async def delivered_on(self, person: str, local_day: str) -> int:
        rows = await self._sql("SELECT count(*) FROM {moments} WHERE person = ? AND "
                               "local_day = ? AND state = 'delivered'", (person, local_day))
        return int(rows[0][0])

    async def cancel(self, moment: Moment, at: datetime, by: str) -> bool:
        """Never say ``moment``; False when it was already said or cancelled."""
        rows = await self._sql(
            "INSERT INTO {moments}(key, person, kind, state, at, local_day, how, reasons)"
            " VALUES (?, ?, ?, 'cancelled', ?, '', ?, ?) ON CONFLICT(key) DO NOTHING"
            " RETURNING key",
            (moment.key, moment.person, moment.kind.value, at.isoformat(), by,
             " ".join(moment.reasons)))
        return bool(rows)

    async def entries(self, person: str | None = None, limit: int = 100) -> list[LedgerEntry]:
        """Recorded moments, newest first (of ``person``)."""
        where, params = ("WHERE person = ?", [person]) if person else ("", [])
        rows = await self._sql(
            "SELECT key, person, kind, state, at, how, text, reasons FROM {moments} "
            f"{where} ORDER BY at DESC LIMIT ?", (*params, limit))
        return [LedgerEntry(r[0], r[1], r[2], r[3], datetime.fromisoformat(r[4]), r[5], r[6],
                            tuple(r[7].split())) for r in rows]

    async def set_off(self, person: str, off: bool, at: datetime) -> None:
        """Switch moments off (or back on) for ``person``."""
        if off:
            await self._sql("INSERT INTO {off}(person, at) VALUES (?, ?) "
                            "ON CONFLICT(person) DO NOTHING", (person, at.isoformat()))
        else:
            await self._sql("DELETE FROM {off} WHERE person = ?", (person,))

    async def is_off(self, person: str) -> bool:
        return bool(await self._sql("SELECT 1 FROM {off} WHERE person = ?", (person,)))

    async def unrecord(self, key: str) -> None:
        """Take back a delivery that nobody heard (the robot went away): still due."""
        await self._sql("DELETE FROM {moments} WHERE key = ? AND state = 'delivered'", (key,))

    async def last_delivered_at(self, person: str) -> datetime | None:
        """When a moment was last said to ``person``."""
        rows = await self._sql("SELECT at FROM {moments} WHERE person = ? AND state = "
                               "'delivered'", (person,))
        return max((datetime.fromisoformat(r[0]) for r in rows), default=None)

    async def set_quiet_hours(self, person: str, span: str | None, at: datetime) -> None:
        """``person``'s own quiet hours (``"21:00-06:30"``); None: back to the config's."""
        if span is None:
            await self._sql("DELETE FROM {quiet} WHERE person = ?", (person,))
            return
        await self._sql("INSERT INTO {quiet}(person, span, at) VALUES (?, ?, ?) "
                        "ON CONFLICT(person) DO UPDATE SET span = excluded.span, "
                        "at = excluded.at", (person, span, at.isoformat()))

    async def quiet_hours_of(self, person: str) -> str | None:
        """The quiet hours ``person`` set for themselves, or None."""
        rows = await self._sql("SELECT span FROM {quiet} WHERE person = ?", (person,))
        return str(rows[0][0]) if rows else None


def _write_ahead(db: sqlite3.Connection, attempts: int = 100) -> None:
    """Switch ``db`` to WAL. The switch needs the file to itself, and SQLite's busy
    timeout does not wait for it: several workers opening one ledger at once are told
    "database is locked", so the switch is tried again a little later (10 s at most)."""
    for attempt in range(attempts):
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(0.1)
