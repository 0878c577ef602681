"""The exchange journal: SQLite in WAL mode, written before anything else happens.

Every exchange is committed (``synchronous=FULL``) before the turn is considered
done with it. Extraction reads a user's unconsumed exchanges and marks them
consumed only after their facts are stored, so a crash, a chat outage or a quota
error delays extraction and never drops a conversation. Failed attempts are
counted and their last error kept for ``omoide memory pending``.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from omoide.types import Exchange

_SCHEMA = """
CREATE TABLE IF NOT EXISTS exchanges (
    id TEXT PRIMARY KEY,
    user TEXT NOT NULL,
    user_text TEXT NOT NULL,
    assistant_text TEXT NOT NULL,
    at TEXT NOT NULL,
    at_ts REAL NOT NULL,
    session_id TEXT,
    consumed_at TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT
);
CREATE INDEX IF NOT EXISTS exchanges_pending ON exchanges(user, consumed_at, at_ts);
CREATE TABLE IF NOT EXISTS users (user TEXT PRIMARY KEY, first_seen TEXT NOT NULL);
"""


@dataclass(frozen=True)
class PendingSummary:
    """One user's unconsumed exchanges, for ``omoide memory pending``."""

    user: str
    exchanges: int
    oldest: datetime
    newest: datetime
    attempts: int
    last_error: str | None


class Journal:
    """Durable exchange log. Methods are async; SQLite work runs on a thread."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    def open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.executescript(_SCHEMA)
        self._db = db

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def _run(self, sql: str, params: Sequence[object] = (), *, many: bool = False,
             ) -> list[tuple[object, ...]]:
        with self._lock:
            if self._db is None:
                raise RuntimeError(f"journal {self.path} is not open")
            if many:
                self._db.execute("BEGIN")
                try:
                    self._db.executemany(sql, params)  # type: ignore[arg-type]
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                return []
            return list(self._db.execute(sql, params).fetchall())

    async def append(self, ex: Exchange) -> None:
        """Commit one exchange durably (idempotent on the exchange id)."""
        def write() -> None:
            self._run("INSERT OR IGNORE INTO exchanges(id, user, user_text, assistant_text, at,"
                      " at_ts, session_id) VALUES (?,?,?,?,?,?,?)",
                      (ex.id, ex.user, ex.user_text, ex.assistant_text, ex.at.isoformat(),
                       ex.at.timestamp(), ex.session_id))
            self.note_user_sync(ex.user)
        await asyncio.to_thread(write)

    def note_user_sync(self, user: str) -> None:
        self._run("INSERT OR IGNORE INTO users(user, first_seen) VALUES (?, ?)",
                  (user, datetime.now().astimezone().isoformat()))

    async def note_user(self, user: str) -> None:
        await asyncio.to_thread(self.note_user_sync, user)

    async def users(self) -> list[str]:
        rows = await asyncio.to_thread(self._run, "SELECT user FROM users ORDER BY user")
        return [str(r[0]) for r in rows]

    async def pending(self, user: str, limit: int = 64) -> list[Exchange]:
        """Oldest unconsumed exchanges of ``user``."""
        rows = await asyncio.to_thread(
            self._run, "SELECT id, user, user_text, assistant_text, at, session_id FROM exchanges"
            " WHERE user=? AND consumed_at IS NULL ORDER BY at_ts LIMIT ?", (user, limit))
        return [Exchange(id=str(r[0]), user=str(r[1]), user_text=str(r[2]),
                         assistant_text=str(r[3]), at=datetime.fromisoformat(str(r[4])),
                         session_id=r[5] if r[5] is None else str(r[5])) for r in rows]

    async def pending_count(self, user: str) -> int:
        rows = await asyncio.to_thread(
            self._run, "SELECT COUNT(*) FROM exchanges WHERE user=? AND consumed_at IS NULL",
            (user,))
        return int(str(rows[0][0]))

    async def pending_summary(self, user: str | None = None) -> list[PendingSummary]:
        sql = ("SELECT user, COUNT(*), MIN(at), MAX(at), MAX(attempts),"
               " (SELECT last_error FROM exchanges e2 WHERE e2.user=e.user AND"
               "  e2.consumed_at IS NULL AND e2.last_error IS NOT NULL ORDER BY at_ts DESC"
               "  LIMIT 1)"
               " FROM exchanges e WHERE consumed_at IS NULL")
        params: tuple[object, ...] = ()
        if user is not None:
            sql += " AND user=?"
            params = (user,)
        rows = await asyncio.to_thread(self._run, sql + " GROUP BY user ORDER BY user", params)
        return [PendingSummary(str(r[0]), int(r[1]),  # type: ignore[call-overload]
                               datetime.fromisoformat(str(r[2])),
                               datetime.fromisoformat(str(r[3])),
                               int(r[4]), None if r[5] is None else str(r[5]))  # type: ignore[call-overload]
                for r in rows]

    async def mark_consumed(self, ids: Sequence[str]) -> None:
        now = datetime.now().astimezone().isoformat()
        await asyncio.to_thread(self._run, "UPDATE exchanges SET consumed_at=? WHERE id=?",
                                [(now, i) for i in ids], many=True)

    async def record_failure(self, ids: Sequence[str], error: str) -> None:
        await asyncio.to_thread(
            self._run, "UPDATE exchanges SET attempts=attempts+1, last_error=? WHERE id=?",
            [(error[:500], i) for i in ids], many=True)
