"""The exchange journal: SQLite in WAL mode, written before anything else happens.

Every exchange is committed (``synchronous=FULL``) before the turn is considered done
with it. Extraction works in batches recorded here too
(:mod:`omoide.memory.journal.extraction_batches`):

1. the chat model's facts for a batch are committed with the ids of its exchanges
   (state ``answered``; the exchanges are then *claimed* by the batch);
2. the dedup decisions for every fact — with the deterministic ids of the memories to
   store — are committed before the store is touched (state ``planned``);
3. once the store holds the plan, the batch is marked ``done`` and its exchanges
   consumed in one transaction.

A crash anywhere leaves a batch that is replayed on start (:meth:`open_batches`);
replaying a plan writes the same records again, so each fact is stored exactly once.

An exchange whose extraction keeps failing on its own is *quarantined* (a dead letter,
with the reason) so it never blocks the next one; ``omoide memory retry`` releases it,
``omoide memory skip`` sets it aside for good. Nothing is ever deleted from the journal.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sqlite3
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from omoide.components.extractor import Fact
from omoide.memory.journal.extraction_batches import (
    ExtractionBatch,
    PlannedFact,
    facts_from_json,
    facts_to_json,
    plan_from_json,
    plan_to_json,
)
from omoide.memory.journal.row_checksum import (
    BATCH_COLUMNS,
    DAMAGED_REASON,
    batch_is_intact,
    exchange_checksum,
    fill_missing_checksums,
    row_is_intact,
    tolerant_text,
)
from omoide.private_files import connect_private
from omoide.types import Exchange

T = TypeVar("T")
log = logging.getLogger("omoide.memory.journal")

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
CREATE TABLE IF NOT EXISTS extraction_batches (
    id TEXT PRIMARY KEY,
    user TEXT NOT NULL,
    exchange_ids TEXT NOT NULL,
    said_at TEXT NOT NULL,
    facts TEXT NOT NULL,
    plan TEXT,
    state TEXT NOT NULL,
    created_at TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT
);
CREATE INDEX IF NOT EXISTS extraction_batches_open ON extraction_batches(user, state);
"""
# Columns added after the first release; added to older journals when they are opened.
_ADDED_COLUMNS = {"batch_id": "TEXT", "quarantined_at": "TEXT", "skipped_at": "TEXT",
                  "checksum": "TEXT"}
_ADDED_BATCH_COLUMNS = {"checksum": "TEXT", "plan_checksum": "TEXT"}
OPEN_STATES = ("answered", "planned")
# The row's checksum comes last but one: _exchange reads the first six, _intact checks.
_EXCHANGE_COLUMNS = "id, user, user_text, assistant_text, at, session_id, checksum"


class ExchangesTaken(Exception):
    """Exchanges of a new batch were claimed or consumed by another extraction."""


@dataclass(frozen=True)
class PendingSummary:
    """One user's exchanges waiting for extraction, for ``omoide memory pending``.

    ``exchanges`` counts those still to extract (including any an interrupted batch
    holds); ``quarantined`` those set aside after failing (see :class:`DeadLetter`).
    """

    user: str
    exchanges: int
    oldest: datetime | None
    newest: datetime | None
    attempts: int
    last_error: str | None
    quarantined: int = 0


@dataclass(frozen=True)
class DeadLetter:
    """A quarantined exchange: extraction failed on it alone too often (or could never
    work, such as a time outside the calendar), so it no longer blocks the next one."""

    exchange_id: str
    user: str
    at: str
    user_text: str
    attempts: int
    reason: str
    quarantined_at: str


@dataclass(frozen=True)
class PendingExchange:
    """An exchange waiting for extraction and how often extraction failed on it alone."""

    exchange: Exchange
    attempts: int


def _now() -> str:
    return datetime.now().astimezone().isoformat()


def _intact(rows: Sequence[Sequence[object]]) -> tuple[list[Sequence[object]], list[str]]:
    """``rows`` (read with :data:`_EXCHANGE_COLUMNS`) split into those that match their
    checksum and the ids of those that do not (each logged)."""
    good: list[Sequence[object]] = []
    damaged: list[str] = []
    for r in rows:
        if row_is_intact(r[:6], r[6]):
            good.append(r)
        else:
            damaged.append(str(r[0]))
            log.error("journal: exchange %s of %s does not match its checksum (changed"
                      " outside omoide); it is not used. `omoide memory verify` lists"
                      " every such row", r[0], r[1])
    return good, damaged


def _batch_intact(r: Sequence[object]) -> bool:
    """Whether a batch row read by ``Journal._batches`` matches its checksums (logged
    when it does not: the batch is then never replayed nor repaired from)."""
    if batch_is_intact(r[:6], r[9], r[10]):
        return True
    log.error("journal: extraction batch %s of %s does not match its checksum (changed"
              " outside omoide); it is not used. `omoide memory verify` lists every such"
              " row", r[0], r[1])
    return False


def _exchange(r: Sequence[object]) -> Exchange:
    return Exchange(id=str(r[0]), user=str(r[1]), user_text=str(r[2]),
                    assistant_text=str(r[3]), at=datetime.fromisoformat(str(r[4])),
                    session_id=None if r[5] is None else str(r[5]))


# -- rows as records: one reading for the SQLite and the PostgreSQL journal ---------------
def batch_from_row(r: Sequence[object]) -> ExtractionBatch:
    """A batch row: id, user, exchange ids, said at, facts, plan, state, attempts, last
    error (what follows is not read)."""
    return ExtractionBatch(
        id=str(r[0]), user=str(r[1]), exchange_ids=tuple(json.loads(str(r[2]))),
        said_at=datetime.fromisoformat(str(r[3])), facts=facts_from_json(str(r[4])),
        state=str(r[6]), plan=None if r[5] is None else plan_from_json(str(r[5]), str(r[1])),
        attempts=int(str(r[7])), last_error=None if r[8] is None else str(r[8]))


def summary_from_row(r: Sequence[object]) -> PendingSummary:
    """A row of the pending summary: user, to extract, oldest, newest, most attempts,
    quarantined, last error."""
    def when(v: object) -> datetime | None:
        return None if v is None else datetime.fromisoformat(str(v))

    return PendingSummary(str(r[0]), int(str(r[1] or 0)), when(r[2]), when(r[3]),
                          int(str(r[4] or 0)), None if r[6] is None else str(r[6]),
                          int(str(r[5] or 0)))


def dead_letter_from_row(r: Sequence[object]) -> DeadLetter:
    """A row of id, user, at, user text, attempts, last error, quarantined at."""
    return DeadLetter(str(r[0]), str(r[1]), str(r[2]), str(r[3]), int(str(r[4])),
                      str(r[5] or ""), str(r[6]))


def _placeholders(n: int) -> str:
    return ",".join("?" * n)


class Journal:
    """Durable exchange log. Methods are async; SQLite work runs on a thread."""

    file_backed = True
    """The journal is the file at :attr:`path` (the data guard checks it at start)."""

    def __init__(self, path: Path, *, busy_timeout_s: float = 5.0) -> None:
        self.path = Path(path)
        self.busy_timeout_s = busy_timeout_s
        """How long a write waits for another process's lock before it fails."""
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    @property
    def is_open(self) -> bool:
        return self._db is not None

    def open(self) -> None:
        # 0600 from its creation (its -wal/-shm with it), whatever the umask
        db = connect_private(self.path, check_same_thread=False, isolation_level=None,
                             timeout=self.busy_timeout_s)
        db.text_factory = tolerant_text
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.executescript(_SCHEMA)
            have = {str(r[1]) for r in db.execute("PRAGMA table_info(exchanges)")}
            for column, sql_type in _ADDED_COLUMNS.items():
                if column not in have:
                    db.execute(f"ALTER TABLE exchanges ADD COLUMN {column} {sql_type}")
            have = {str(r[1]) for r in db.execute("PRAGMA table_info(extraction_batches)")}
            for column, sql_type in _ADDED_BATCH_COLUMNS.items():
                if column not in have:
                    db.execute(f"ALTER TABLE extraction_batches ADD COLUMN {column} {sql_type}")
            self._checksum_older_rows(db)
        except BaseException:
            db.close()
            raise
        self._db = db

    @staticmethod
    def _checksum_older_rows(db: sqlite3.Connection) -> None:
        """Rows written before checksums (or restored without one) get one now."""
        db.execute("BEGIN IMMEDIATE")
        try:
            filled = fill_missing_checksums(db)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        if filled:
            log.info("journal: %d exchanges written before row checksums got one", filled)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def reopen(self) -> None:
        """Close and open again (after a failure that may have left the connection
        unusable)."""
        self.close()
        self.open()

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            raise RuntimeError(f"journal {self.path} is not open")
        return self._db

    def _run(self, sql: str, params: Sequence[object] = (), *, many: bool = False,
             ) -> list[tuple[object, ...]]:
        if many:
            def write(db: sqlite3.Connection) -> None:
                db.executemany(sql, params)  # type: ignore[arg-type]
            self._transaction(write)
            return []
        with self._lock:
            return list(self._conn().execute(sql, params).fetchall())

    def _transaction(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` in one write transaction (all of it is committed, or none)."""
        with self._lock:
            db = self._conn()
            db.execute("BEGIN IMMEDIATE")
            try:
                result = work(db)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            return result

    async def _thread(self, work: Callable[[], T]) -> T:
        return await asyncio.to_thread(work)

    # -- exchanges -----------------------------------------------------------------
    async def append(self, ex: Exchange) -> None:
        """Commit one exchange durably (idempotent on the exchange id)."""
        await self._thread(lambda: self.append_sync(ex))

    def append_sync(self, ex: Exchange) -> None:
        def write(db: sqlite3.Connection) -> None:
            values = (ex.id, ex.user, ex.user_text, ex.assistant_text, ex.at.isoformat(),
                      ex.session_id)
            db.execute("INSERT OR IGNORE INTO exchanges(id, user, user_text, assistant_text,"
                       " at, session_id, at_ts, checksum) VALUES (?,?,?,?,?,?,?,?)",
                       (*values, ex.at.timestamp(), exchange_checksum(values)))
            db.execute("INSERT OR IGNORE INTO users(user, first_seen) VALUES (?, ?)",
                       (ex.user, _now()))
        self._transaction(write)

    def note_user_sync(self, user: str) -> None:
        self._run("INSERT OR IGNORE INTO users(user, first_seen) VALUES (?, ?)",
                  (user, _now()))

    async def note_user(self, user: str) -> None:
        await self._thread(lambda: self.note_user_sync(user))

    async def users(self) -> list[str]:
        rows = await self._thread(lambda: self._run("SELECT user FROM users ORDER BY user"))
        return [str(r[0]) for r in rows]

    def count_exchanges_sync(self) -> int:
        return int(str(self._run("SELECT COUNT(*) FROM exchanges")[0][0]))

    async def count_exchanges(self) -> int:
        return await self._thread(self.count_exchanges_sync)

    async def exchanges(self, ids: Sequence[str]) -> list[Exchange]:
        """The exchanges with these ids, oldest first (a row that no longer matches its
        checksum is left out)."""
        if not ids:
            return []
        rows = await self._thread(lambda: self._run(
            f"SELECT {_EXCHANGE_COLUMNS} FROM exchanges WHERE id IN ({_placeholders(len(ids))})"
            " ORDER BY at_ts", list(ids)))
        return [_exchange(r) for r in _intact(rows)[0]]

    _WAITING = "consumed_at IS NULL AND quarantined_at IS NULL AND batch_id IS NULL"

    @contextlib.asynccontextmanager
    async def leases_kept(self, user: str | None = None) -> AsyncIterator[None]:
        """Nothing to keep: one process owns this journal, and leases nothing."""
        yield

    async def pending(self, user: str, limit: int = 64) -> list[Exchange]:
        """Oldest exchanges of ``user`` waiting for extraction (not in a batch, not
        quarantined)."""
        return [p.exchange for p in await self.pending_work(user, limit)]

    async def pending_work(self, user: str, limit: int = 256) -> list[PendingExchange]:
        """Like :meth:`pending`, with each exchange's failed attempts on its own. A row
        that no longer matches its checksum is quarantined with the reason, never
        extracted."""
        rows = await self._thread(lambda: self._run(
            f"SELECT {_EXCHANGE_COLUMNS}, attempts FROM exchanges WHERE user=? AND"
            f" {self._WAITING} ORDER BY at_ts LIMIT ?", (user, limit)))
        good, damaged = _intact(rows)
        if damaged:
            await self.quarantine(damaged, DAMAGED_REASON)
        return [PendingExchange(_exchange(r), int(str(r[7]))) for r in good]

    async def pending_count(self, user: str) -> int:
        rows = await self._thread(lambda: self._run(
            f"SELECT COUNT(*) FROM exchanges WHERE user=? AND {self._WAITING}", (user,)))
        return int(str(rows[0][0]))

    async def pending_summary(self, user: str | None = None, *,
                              users: Sequence[str] | None = None) -> list[PendingSummary]:
        """Per user: exchanges still to extract (waiting or held by an unfinished batch)
        and quarantined ones; users with neither are left out. ``user`` or ``users``
        (a page of the console's people) read only those."""
        where = ""
        params: tuple[str, ...] = ()
        if user is not None:
            where, params = "WHERE user=?", (user,)
        elif users is not None:
            where, params = f"WHERE user IN ({_placeholders(len(users))})", tuple(users)
        sql = (
            "SELECT user,"
            " SUM(consumed_at IS NULL AND quarantined_at IS NULL),"
            " MIN(CASE WHEN consumed_at IS NULL AND quarantined_at IS NULL THEN at END),"
            " MAX(CASE WHEN consumed_at IS NULL AND quarantined_at IS NULL THEN at END),"
            " MAX(CASE WHEN consumed_at IS NULL AND quarantined_at IS NULL THEN attempts"
            "  ELSE 0 END),"
            " SUM(consumed_at IS NULL AND quarantined_at IS NOT NULL),"
            " (SELECT last_error FROM exchanges e2 WHERE e2.user=e.user AND"
            "  e2.consumed_at IS NULL AND e2.quarantined_at IS NULL AND"
            "  e2.last_error IS NOT NULL ORDER BY at_ts DESC LIMIT 1)"
            f" FROM exchanges e {where} GROUP BY user"
            " HAVING SUM(consumed_at IS NULL) > 0 ORDER BY user")
        rows = await self._thread(lambda: self._run(sql, params))
        return [summary_from_row(r) for r in rows]

    async def note_error(self, ids: Sequence[str], error: str) -> None:
        """Keep ``error`` as the exchanges' last error without counting an attempt
        (a batch failed, or the chat service is down: not these exchanges' fault)."""
        await self._thread(lambda: self._run(
            "UPDATE exchanges SET last_error=? WHERE id=?",
            [(error[:500], i) for i in ids], many=True))

    async def record_failure(self, ids: Sequence[str], error: str) -> dict[str, int]:
        """Count a failed attempt on each exchange; returns their attempt counts."""
        def write(db: sqlite3.Connection) -> dict[str, int]:
            db.executemany("UPDATE exchanges SET attempts=attempts+1, last_error=? WHERE id=?",
                           [(error[:500], i) for i in ids])
            rows = db.execute(f"SELECT id, attempts FROM exchanges WHERE id IN"
                              f" ({_placeholders(len(ids))})", list(ids)).fetchall()
            return {str(r[0]): int(r[1]) for r in rows}
        return await self._thread(lambda: self._transaction(write))

    async def quarantine(self, ids: Sequence[str], reason: str) -> None:
        """Set exchanges aside with ``reason``; extraction skips them until released."""
        now = _now()
        await self._thread(lambda: self._run(
            "UPDATE exchanges SET quarantined_at=?, last_error=? WHERE id=? AND"
            " consumed_at IS NULL", [(now, reason[:500], i) for i in ids], many=True))

    async def dead_letters(self, user: str | None = None) -> list[DeadLetter]:
        """Quarantined exchanges (of ``user``, or everyone's), oldest first."""
        where, params = ("AND user=?", (user,)) if user is not None else ("", ())
        rows = await self._thread(lambda: self._run(
            "SELECT id, user, at, user_text, attempts, last_error, quarantined_at"
            " FROM exchanges WHERE quarantined_at IS NOT NULL AND consumed_at IS NULL"
            f" {where} ORDER BY user, at_ts", params))
        return [dead_letter_from_row(r) for r in rows]

    def _select_dead(self, db: sqlite3.Connection, user: str,
                     ids: Sequence[str] | None) -> list[str]:
        sql = ("SELECT id FROM exchanges WHERE user=? AND quarantined_at IS NOT NULL AND"
               " consumed_at IS NULL")
        params: list[object] = [user]
        if ids is not None:
            sql += f" AND id IN ({_placeholders(len(ids))})"
            params += list(ids)
        return [str(r[0]) for r in db.execute(sql, params).fetchall()]

    async def release(self, user: str, ids: Sequence[str] | None = None) -> list[str]:
        """Take ``user``'s quarantined exchanges (all, or those in ``ids``) out of
        quarantine with their attempts reset; returns the ids released."""
        def write(db: sqlite3.Connection) -> list[str]:
            found = self._select_dead(db, user, ids)
            db.executemany("UPDATE exchanges SET quarantined_at=NULL, attempts=0 WHERE id=?",
                           [(i,) for i in found])
            return found
        return await self._thread(lambda: self._transaction(write))

    async def skip(self, user: str, ids: Sequence[str] | None = None) -> list[str]:
        """Set ``user``'s exchanges aside for good: with ``ids``, those of them still
        waiting or quarantined; without, every quarantined one. They stay in the journal
        (marked skipped), never extracted. Returns the ids skipped."""
        def write(db: sqlite3.Connection) -> list[str]:
            if ids is None:
                found = self._select_dead(db, user, None)
            else:
                found = [str(r[0]) for r in db.execute(
                    f"SELECT id FROM exchanges WHERE user=? AND consumed_at IS NULL AND"
                    f" batch_id IS NULL AND id IN ({_placeholders(len(ids))})",
                    [user, *ids]).fetchall()]
            now = _now()
            db.executemany("UPDATE exchanges SET consumed_at=?, skipped_at=? WHERE id=?",
                           [(now, now, i) for i in found])
            return found
        return await self._thread(lambda: self._transaction(write))

    # -- extraction batches ----------------------------------------------------------
    async def open_batch(self, user: str, exchanges: Sequence[Exchange],
                         facts: Sequence[Fact]) -> ExtractionBatch:
        """Record the chat model's ``facts`` for ``exchanges`` (state ``answered``) and
        claim the exchanges for the batch, in one transaction. Raises
        :class:`ExchangesTaken` (recording nothing) when another process claimed or
        consumed one of them meanwhile."""
        batch = ExtractionBatch(
            id=str(uuid.uuid4()), user=user, exchange_ids=tuple(e.id for e in exchanges),
            said_at=max(e.at for e in exchanges), facts=tuple(facts), state="answered")

        def write(db: sqlite3.Connection) -> None:
            covered = (batch.id, user, json.dumps(list(batch.exchange_ids)),
                       batch.said_at.isoformat(), facts_to_json(batch.facts))
            db.execute("INSERT INTO extraction_batches(id, user, exchange_ids, said_at, facts,"
                       " state, created_at, checksum) VALUES (?,?,?,?,?,?,?,?)",
                       (*covered, batch.state, _now(), exchange_checksum(covered)))
            claimed = 0
            for i in batch.exchange_ids:
                claimed += db.execute(
                    "UPDATE exchanges SET batch_id=? WHERE id=? AND batch_id IS NULL AND"
                    " consumed_at IS NULL AND quarantined_at IS NULL", (batch.id, i)).rowcount
            if claimed != len(batch.exchange_ids):
                raise ExchangesTaken(f"{len(batch.exchange_ids) - claimed} of the exchanges"
                                     " were taken by another extraction meanwhile")
        await self._thread(lambda: self._transaction(write))
        return batch

    async def save_plan(self, batch: ExtractionBatch, plan: Sequence[PlannedFact],
                        ) -> ExtractionBatch:
        """Record the dedup decisions of ``batch`` (state ``planned``)."""
        text = plan_to_json(plan)

        def write(db: sqlite3.Connection) -> None:
            db.execute("UPDATE extraction_batches SET plan=?, plan_checksum=?,"
                       " state='planned' WHERE id=?",
                       (text, exchange_checksum((batch.id, text)), batch.id))
        await self._thread(lambda: self._transaction(write))
        return batch.planned(tuple(plan))

    async def finish_batch(self, batch: ExtractionBatch) -> None:
        """Mark ``batch`` done and its exchanges consumed, in one transaction."""
        now = _now()

        def write(db: sqlite3.Connection) -> None:
            db.execute("UPDATE extraction_batches SET state='done' WHERE id=?", (batch.id,))
            db.executemany("UPDATE exchanges SET consumed_at=? WHERE id=? AND batch_id=?",
                           [(now, i, batch.id) for i in batch.exchange_ids])
        await self._thread(lambda: self._transaction(write))

    async def batch_failed(self, batch: ExtractionBatch, error: str) -> int:
        """Count a failed attempt to complete ``batch``; returns its attempts."""
        def write(db: sqlite3.Connection) -> int:
            db.execute("UPDATE extraction_batches SET attempts=attempts+1, last_error=?"
                       " WHERE id=?", (error[:500], batch.id))
            db.executemany("UPDATE exchanges SET last_error=? WHERE id=?",
                           [(error[:500], i) for i in batch.exchange_ids])
            row = db.execute("SELECT attempts FROM extraction_batches WHERE id=?",
                             (batch.id,)).fetchone()
            return int(row[0]) if row else 0
        return await self._thread(lambda: self._transaction(write))

    async def abandon_batch(self, batch: ExtractionBatch, error: str) -> None:
        """Give up on completing ``batch``: its exchanges wait for extraction again
        (what it stored, if anything, is recognised by dedup as theirs)."""
        def write(db: sqlite3.Connection) -> None:
            db.execute("UPDATE extraction_batches SET state='abandoned', last_error=?"
                       " WHERE id=?", (error[:500], batch.id))
            db.executemany("UPDATE exchanges SET batch_id=NULL WHERE id=? AND batch_id=?",
                           [(i, batch.id) for i in batch.exchange_ids])
        await self._thread(lambda: self._transaction(write))

    async def open_batches(self, user: str | None = None) -> list[ExtractionBatch]:
        """Batches a crash or a failure left unfinished (of ``user``, or all), oldest
        first."""
        return await self._batches(f"state IN {OPEN_STATES}", user)

    async def batches(self, user: str) -> list[ExtractionBatch]:
        """Every batch of ``user`` (done ones keep what the chat model answered)."""
        return await self._batches("1=1", user)

    async def activity_rows(self, user: str | None, after: str | None, limit: int | None,
                            ) -> list[tuple[object, ...]]:
        """Per person: id, first seen, newest exchange's time, exchange count (the
        console reads these through its own read-only connection instead:
        :mod:`.activity`)."""
        where, params = "WHERE 1=1", []
        if user is not None:
            where, params = where + " AND u.user=?", [user]
        if after is not None:
            where, params = where + " AND u.user>?", [*params, after]
        page = f" LIMIT {int(limit)}" if limit is not None else ""
        return await self._thread(lambda: self._run(
            "SELECT u.user, u.first_seen, (SELECT e.at FROM exchanges e WHERE"
            " e.user=u.user AND e.user_text != '' ORDER BY e.at_ts DESC LIMIT 1),"
            " (SELECT COUNT(*) FROM"
            f" exchanges e WHERE e.user=u.user) FROM users u {where} ORDER BY u.user{page}",
            params))

    async def _batches(self, condition: str, user: str | None) -> list[ExtractionBatch]:
        sql = (f"SELECT {', '.join(BATCH_COLUMNS)}, plan, state, attempts,"
               " last_error, checksum, plan_checksum FROM extraction_batches"
               f" WHERE {condition}")
        params: tuple[object, ...] = ()
        if user is not None:
            sql += " AND user=?"
            params = (user,)
        rows = await self._thread(lambda: self._run(sql + " ORDER BY created_at, rowid",
                                                    params))
        return [batch_from_row(r) for r in rows if _batch_intact(r)]

    # -- health and recovery ---------------------------------------------------------
    def probe_sync(self) -> None:
        """A real write (raises when the journal cannot take one: locked, full, damaged)."""
        def write(db: sqlite3.Connection) -> None:
            db.execute("CREATE TABLE IF NOT EXISTS probes (id INTEGER PRIMARY KEY, at TEXT)")
            db.execute("INSERT OR REPLACE INTO probes(id, at) VALUES (1, ?)", (_now(),))
        self._transaction(write)

    def restore_rows(self, columns: Sequence[str], rows: Sequence[Sequence[object]]) -> int:
        """Insert exchange rows read from a damaged journal (``columns`` names them);
        returns how many were new."""
        names = ", ".join(columns)

        def write(db: sqlite3.Connection) -> int:
            before = db.total_changes
            db.executemany(f"INSERT OR IGNORE INTO exchanges({names}) VALUES"
                           f" ({_placeholders(len(columns))})", rows)
            added = db.total_changes - before
            fill_missing_checksums(db)
            db.execute("INSERT OR IGNORE INTO users(user, first_seen)"
                       " SELECT DISTINCT user, ? FROM exchanges", (_now(),))
            return added
        return self._transaction(write)
