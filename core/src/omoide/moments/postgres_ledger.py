"""The moments ledger in PostgreSQL, shared by every worker (``database.url``).

The same records and the same SQL as :class:`~omoide.moments.ledger.MomentLedger` (the
times kept as the same ISO text, so both order and count alike), in two tables of
migrations component ``moments`` on a small pool. Recording a moment is the claim: a
moment's key (its memory, its kind, and the day or year where it repeats) is the primary
key, and ``INSERT ... ON CONFLICT DO NOTHING RETURNING`` returns it to the one worker
whose row went in — that worker speaks, every other worker racing for the same due
moment gets nothing back and stays silent. A cancel is the same claim with another
state, so a moment cancelled on one worker is never said by another.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omoide.database.connection import LazyPool
from omoide.database.migrations import Migration
from omoide.moments.ledger import MomentLedger

COMPONENT = "moments"
MIGRATIONS = (
    Migration(1, "moments ledger and off switches", """
CREATE TABLE moments_ledger (
    key TEXT PRIMARY KEY,
    person TEXT NOT NULL,
    kind TEXT NOT NULL,
    state TEXT NOT NULL,
    at TEXT NOT NULL,
    local_day TEXT NOT NULL,
    how TEXT NOT NULL DEFAULT '',
    text TEXT NOT NULL DEFAULT '',
    reasons TEXT NOT NULL DEFAULT ''
);
CREATE INDEX moments_ledger_person_day ON moments_ledger (person, local_day);
CREATE TABLE moments_switched_off (
    person TEXT PRIMARY KEY,
    at TEXT NOT NULL
);
"""),
    Migration(2, "people's own quiet hours", """
CREATE TABLE moments_quiet_hours (
    person TEXT PRIMARY KEY,
    span TEXT NOT NULL,
    at TEXT NOT NULL
);
"""),
)


class PostgresMomentLedger(MomentLedger):
    """The ledger's methods on the shared database (see the module)."""

    MOMENTS = "moments_ledger"
    SWITCHED_OFF = "moments_switched_off"
    QUIET_HOURS = "moments_quiet_hours"

    def __init__(self, url: str, *, path: Path | None = None, pool_size: int = 2) -> None:
        super().__init__(path or Path("moments.sqlite3"))  # the file is never opened
        self.url = url
        self.pool_size = pool_size
        self._shared = LazyPool(url, COMPONENT, MIGRATIONS, size=pool_size, timeout_s=3.0,
                                name="omoide-moments")

    def _run(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        # the ledger's SQL is portable but for its placeholders (no literal ? in it)
        with self._shared.pool().connection() as conn:
            cursor = conn.execute(sql.replace("?", "%s"), tuple(params))
            return list(cursor.fetchall()) if cursor.description else []

    def close(self) -> None:
        self._shared.close()

    def import_file(self, path: Path) -> tuple[int, int, int]:
        """Copy a data dir's ledger file in (``omoide migrate``): every moment said or
        cancelled that is not here yet, every off switch and everyone's own quiet hours.
        Returns how many of each were copied now (a rerun copies nothing twice); no
        file: nothing."""
        if not Path(path).exists():
            return 0, 0, 0
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            said = _rows(db, "SELECT key, person, kind, state, at, local_day, how, text,"
                         " reasons FROM moments")
            off = _rows(db, "SELECT person, at FROM switched_off")
            quiet = _rows(db, "SELECT person, span, at FROM quiet_hours")
        finally:
            db.close()
        copied = sum(len(self._run(
            f"INSERT INTO {self.MOMENTS}(key, person, kind, state, at, local_day, how,"
            " text, reasons) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO"
            " NOTHING RETURNING key", row)) for row in said)
        switched = sum(len(self._run(
            f"INSERT INTO {self.SWITCHED_OFF}(person, at) VALUES (?, ?) ON CONFLICT"
            " (person) DO NOTHING RETURNING person", row)) for row in off)
        own = sum(len(self._run(
            f"INSERT INTO {self.QUIET_HOURS}(person, span, at) VALUES (?, ?, ?) ON CONFLICT"
            " (person) DO NOTHING RETURNING person", row)) for row in quiet)
        return copied, switched, own


def _rows(db: sqlite3.Connection, sql: str) -> list[tuple[Any, ...]]:
    """A table's rows; none when the file has no such table (a ledger never written
    to, or older than the table)."""
    try:
        return list(db.execute(sql).fetchall())
    except sqlite3.OperationalError:
        return []
