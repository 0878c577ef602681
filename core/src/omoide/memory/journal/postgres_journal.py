"""The exchange journal on PostgreSQL, shared by several workers (``database.url``).

The same records and states as the SQLite journal (:mod:`.exchange_log`), the same
checksums, and what several workers need to extract each exchange **once**:

- :meth:`PostgresJournal.pending_work` *leases* the exchanges it returns to this worker
  (``SELECT ... FOR UPDATE SKIP LOCKED``, then ``lease_owner``/``lease_until``): two
  workers asking at once get disjoint exchanges; an exchange leased by a worker that
  died is offered again once its lease expires;
- :meth:`~PostgresJournal.open_batch` claims exchanges only if they are free or leased
  to this worker (else :class:`~.exchange_log.ExchangesTaken`, recording nothing), and
  leases the batch to it;
- :meth:`~PostgresJournal.open_batches` returns the unfinished batches this worker holds
  and takes over those whose lease expired: a batch whose plan is journaled is replayed
  (the same deterministic memory ids), one with only the chat model's facts is planned —
  the chat model is never asked again;
- :meth:`~PostgresJournal.save_plan` keeps the first plan journaled: a worker that
  planned a batch another had taken over meanwhile replays that plan, so a batch's
  memories are decided once.

While a worker extracts, :meth:`~PostgresJournal.leases_kept` beats: a task pushes the
end of every lease it holds a lease's length ahead, every third of one, so a job slower
than its lease (a chat model that takes minutes) is not taken over by a second worker
and asked about again. The beat stops when the work ends, however it ends; a worker
that dies stops beating, and its leases run out.

The lease's length bounds how long work a dead worker held waits, not correctness: a
worker slower than its lease loses nothing and duplicates nothing — its claim of the
exchanges fails (:class:`~.exchange_log.ExchangesTaken`) if another worker leased them
meanwhile, and a batch both complete is applied with the one journaled plan (the same
memory ids: the second write of a record changes nothing) and marked done once.

Connections come from a pool (:func:`omoide.database.connection.open_pool`); each method
is one transaction. The schema is :mod:`.postgres_schema`, applied at :meth:`open`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from omoide.components.extractor import Fact
from omoide.database.connection import open_pool
from omoide.database.migrations import apply_migrations
from omoide.memory.journal import postgres_schema
from omoide.memory.journal.exchange_log import (
    DeadLetter,
    ExchangesTaken,
    PendingExchange,
    PendingSummary,
    _batch_intact,
    _exchange,
    _intact,
    _now,
    batch_from_row,
    dead_letter_from_row,
    summary_from_row,
)
from omoide.memory.journal.extraction_batches import (
    ExtractionBatch,
    PlannedFact,
    facts_to_json,
    plan_from_json,
    plan_to_json,
)
from omoide.memory.journal.row_checksum import (
    BATCH_COLUMNS,
    CHECKED_COLUMNS,
    DAMAGED_REASON,
    DamagedRow,
    JournalCheck,
    batch_is_intact,
    exchange_checksum,
    row_is_intact,
)
from omoide.types import Exchange

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg_pool import ConnectionPool

T = TypeVar("T")

_EXCHANGE_COLUMNS = 'id, "user", user_text, assistant_text, at, session_id, checksum'
_BATCH_SELECT = ('id, "user", exchange_ids, said_at, facts, plan, state, attempts,'
                 ' last_error, checksum, plan_checksum, seq')
_WAITING = "consumed_at IS NULL AND quarantined_at IS NULL AND batch_id IS NULL"
_FREE = "(lease_owner IS NULL OR lease_owner = %(me)s OR lease_until < now())"
_LEASE = "now() + make_interval(secs => %(lease)s)"
_OPEN = "state IN ('answered', 'planned')"
log = logging.getLogger("omoide.memory.journal")


def default_worker_id() -> str:
    """This process's name in leases: host, pid and a random part (a restarted worker
    with the same pid does not inherit a dead one's leases)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class PostgresJournal:
    """Durable exchange log on PostgreSQL. Methods are async; database work runs on a
    thread with a pooled connection."""

    file_backed = False
    """No journal file in the data dir: the data guard's file checks do not apply."""

    def __init__(self, url: str, *, path: Path, pool_size: int = 8,
                 lease_seconds: float = 300.0, worker_id: str | None = None,
                 busy_timeout_s: float = 3.0) -> None:
        self.url = url
        self.path = Path(path)
        """Not the database: where the spill file and the data manifest sit beside."""
        self.pool_size = pool_size
        self.lease_seconds = lease_seconds
        self.worker_id = worker_id or default_worker_id()
        self.busy_timeout_s = busy_timeout_s
        """How long a call waits for a connection before it fails (while the database
        is down a turn's exchange goes to the spill file after this long)."""
        self._pool: ConnectionPool | None = None

    @property
    def is_open(self) -> bool:
        return self._pool is not None

    def open(self) -> None:
        pool = open_pool(self.url, size=self.pool_size, timeout_s=self.busy_timeout_s,
                         name="omoide-journal")
        try:
            with pool.connection() as conn:
                apply_migrations(conn, postgres_schema.COMPONENT,
                                 postgres_schema.MIGRATIONS)
                with conn.transaction():
                    _fill_missing_checksums(conn)
        except BaseException:
            pool.close()
            raise
        self._pool = pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def reopen(self) -> None:
        self.close()
        self.open()

    def _params(self, **extra: Any) -> dict[str, Any]:
        return {"me": self.worker_id, "lease": self.lease_seconds, **extra}

    def _transaction(self, work: Callable[[Connection[tuple[Any, ...]]], T]) -> T:
        """Run ``work`` in one transaction on a pooled connection."""
        if self._pool is None:
            raise RuntimeError("the PostgreSQL journal is not open")
        with self._pool.connection(timeout=self.busy_timeout_s) as conn, conn.transaction():
            return work(conn)

    def _rows(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        return self._transaction(lambda c: c.execute(sql, params).fetchall())

    async def _thread(self, work: Callable[[], T]) -> T:
        return await asyncio.to_thread(work)

    # -- leases ----------------------------------------------------------------------
    def extend_leases_sync(self, user: str | None = None) -> int:
        """Push every lease this worker holds (of ``user``, or all) to ``lease_seconds``
        from now: unconsumed exchanges and unfinished batches. Returns how many."""
        only = "" if user is None else ' AND "user"=%(user)s'
        params = self._params(user=user)

        def work(c: Connection[tuple[Any, ...]]) -> int:
            held = c.execute(f"UPDATE exchanges SET lease_until={_LEASE} WHERE"
                             " lease_owner=%(me)s AND consumed_at IS NULL AND"
                             f" quarantined_at IS NULL{only}", params).rowcount
            return held + c.execute(f"UPDATE extraction_batches SET lease_until={_LEASE}"
                                    f" WHERE lease_owner=%(me)s AND {_OPEN}{only}",
                                    params).rowcount
        return self._transaction(work)

    @contextlib.asynccontextmanager
    async def leases_kept(self, user: str | None = None) -> AsyncIterator[None]:
        """While the block runs, extend this worker's leases (of ``user``, or all)
        every third of ``lease_seconds`` (see the module); the beat stops when the block
        ends. A beat the database does not take is logged and tried at the next one."""
        beat = asyncio.create_task(self._beat(user), name=f"omoide-leases-{user or 'all'}")
        try:
            yield
        finally:
            beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beat

    async def _beat(self, user: str | None) -> None:
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            try:
                await self._thread(lambda: self.extend_leases_sync(user))
            except Exception as exc:  # noqa: BLE001 - the next beat tries again
                log.warning("extending extraction leases failed: %s", exc)

    # -- exchanges -----------------------------------------------------------------
    async def append(self, ex: Exchange) -> None:
        """Commit one exchange durably (idempotent on the exchange id)."""
        await self._thread(lambda: self.append_sync(ex))

    def append_sync(self, ex: Exchange) -> None:
        values = (ex.id, ex.user, ex.user_text, ex.assistant_text, ex.at.isoformat(),
                  ex.session_id)

        def write(c: Connection[tuple[Any, ...]]) -> None:
            c.execute('INSERT INTO exchanges(id, "user", user_text, assistant_text, at,'
                      " session_id, at_ts, checksum) VALUES (%s,%s,%s,%s,%s,%s,%s,%s)"
                      " ON CONFLICT (id) DO NOTHING",
                      (*values, ex.at.timestamp(), exchange_checksum(values)))
            c.execute('INSERT INTO users("user", first_seen) VALUES (%s, %s)'
                      " ON CONFLICT DO NOTHING", (ex.user, _now()))
        self._transaction(write)

    def note_user_sync(self, user: str) -> None:
        self._transaction(lambda c: c.execute(
            'INSERT INTO users("user", first_seen) VALUES (%s, %s) ON CONFLICT DO NOTHING',
            (user, _now())))

    async def note_user(self, user: str) -> None:
        await self._thread(lambda: self.note_user_sync(user))

    async def users(self) -> list[str]:
        rows = await self._thread(lambda: self._rows(
            'SELECT "user" FROM users ORDER BY "user" COLLATE "C"'))
        return [str(r[0]) for r in rows]

    def count_exchanges_sync(self) -> int:
        return int(self._rows("SELECT COUNT(*) FROM exchanges")[0][0])

    async def count_exchanges(self) -> int:
        return await self._thread(self.count_exchanges_sync)

    async def exchanges(self, ids: Sequence[str]) -> list[Exchange]:
        """The exchanges with these ids, oldest first (a damaged row is left out)."""
        if not ids:
            return []
        rows = await self._thread(lambda: self._rows(
            f"SELECT {_EXCHANGE_COLUMNS} FROM exchanges WHERE id = ANY(%s) ORDER BY at_ts",
            (list(ids),)))
        return [_exchange(r) for r in _intact(rows)[0]]

    async def pending(self, user: str, limit: int = 64) -> list[Exchange]:
        """Oldest exchanges of ``user`` waiting for extraction (not leased by another
        worker); reading them leases nothing."""
        rows = await self._thread(lambda: self._rows(
            f'SELECT {_EXCHANGE_COLUMNS} FROM exchanges WHERE "user"=%(user)s AND'
            f" {_WAITING} AND {_FREE} ORDER BY at_ts LIMIT %(limit)s",
            self._params(user=user, limit=limit)))
        return [_exchange(r) for r in _intact(rows)[0]]

    async def pending_work(self, user: str, limit: int = 256) -> list[PendingExchange]:
        """The oldest waiting exchanges of ``user`` no other live worker holds, leased to
        this worker for ``lease_seconds``, with their failed attempts. A damaged row is
        quarantined with the reason, never extracted."""
        sql = (f"WITH picked AS (SELECT id FROM exchanges WHERE \"user\"=%(user)s AND"
               f" {_WAITING} AND {_FREE} ORDER BY at_ts LIMIT %(limit)s"
               " FOR UPDATE SKIP LOCKED)"
               f" UPDATE exchanges e SET lease_owner=%(me)s, lease_until={_LEASE}"
               " FROM picked WHERE e.id = picked.id RETURNING e.id, e.\"user\","
               " e.user_text, e.assistant_text, e.at, e.session_id, e.checksum,"
               " e.attempts, e.at_ts")
        rows = await self._thread(lambda: self._rows(
            sql, self._params(user=user, limit=limit)))
        rows.sort(key=lambda r: float(r[8]))
        good, damaged = _intact(rows)
        if damaged:
            await self.quarantine(damaged, DAMAGED_REASON)
        return [PendingExchange(_exchange(r), int(str(r[7]))) for r in good]

    async def pending_count(self, user: str) -> int:
        rows = await self._thread(lambda: self._rows(
            f'SELECT COUNT(*) FROM exchanges WHERE "user"=%s AND {_WAITING}', (user,)))
        return int(rows[0][0])

    async def pending_summary(self, user: str | None = None, *,
                              users: Sequence[str] | None = None) -> list[PendingSummary]:
        """Per user: exchanges still to extract and quarantined ones (see the SQLite
        journal's :meth:`~.exchange_log.Journal.pending_summary`)."""
        where, params = "", ()  # type: tuple[str, tuple[Any, ...]]
        if user is not None:
            where, params = 'WHERE "user"=%s', (user,)
        elif users is not None:
            where, params = 'WHERE "user" = ANY(%s)', (list(users),)
        todo = "consumed_at IS NULL AND quarantined_at IS NULL"
        sql = (
            f'SELECT "user", COUNT(*) FILTER (WHERE {todo}),'
            f' MIN(at COLLATE "C") FILTER (WHERE {todo}),'
            f' MAX(at COLLATE "C") FILTER (WHERE {todo}),'
            f" COALESCE(MAX(attempts) FILTER (WHERE {todo}), 0),"
            " COUNT(*) FILTER (WHERE consumed_at IS NULL AND quarantined_at IS NOT NULL),"
            ' (SELECT last_error FROM exchanges e2 WHERE e2."user"=e."user" AND'
            "  e2.consumed_at IS NULL AND e2.quarantined_at IS NULL AND"
            "  e2.last_error IS NOT NULL ORDER BY at_ts DESC LIMIT 1)"
            f" FROM exchanges e {where} GROUP BY \"user\""
            ' HAVING COUNT(*) FILTER (WHERE consumed_at IS NULL) > 0 ORDER BY "user" COLLATE "C"')
        rows = await self._thread(lambda: self._rows(sql, params))
        return [summary_from_row(r) for r in rows]

    async def note_error(self, ids: Sequence[str], error: str) -> None:
        """Keep ``error`` as the exchanges' last error without counting an attempt; their
        lease ends (any worker may try them again)."""
        await self._thread(lambda: self._transaction(lambda c: c.execute(
            "UPDATE exchanges SET last_error=%s, lease_owner=NULL, lease_until=NULL"
            " WHERE id = ANY(%s)", (error[:500], list(ids)))))

    async def record_failure(self, ids: Sequence[str], error: str) -> dict[str, int]:
        """Count a failed attempt on each exchange (ending its lease); returns their
        attempt counts."""
        rows = await self._thread(lambda: self._rows(
            "UPDATE exchanges SET attempts=attempts+1, last_error=%s, lease_owner=NULL,"
            " lease_until=NULL WHERE id = ANY(%s) RETURNING id, attempts",
            (error[:500], list(ids))))
        return {str(r[0]): int(r[1]) for r in rows}

    async def quarantine(self, ids: Sequence[str], reason: str) -> None:
        """Set exchanges aside with ``reason``; extraction skips them until released."""
        await self._thread(lambda: self._transaction(lambda c: c.execute(
            "UPDATE exchanges SET quarantined_at=%s, last_error=%s, lease_owner=NULL,"
            " lease_until=NULL WHERE id = ANY(%s) AND consumed_at IS NULL",
            (_now(), reason[:500], list(ids)))))

    async def dead_letters(self, user: str | None = None) -> list[DeadLetter]:
        """Quarantined exchanges (of ``user``, or everyone's), oldest first."""
        where, params = ('AND "user"=%s', (user,)) if user is not None else ("", ())
        rows = await self._thread(lambda: self._rows(
            'SELECT id, "user", at, user_text, attempts, last_error, quarantined_at'
            " FROM exchanges WHERE quarantined_at IS NOT NULL AND consumed_at IS NULL"
            f' {where} ORDER BY "user" COLLATE "C", at_ts', params))
        return [dead_letter_from_row(r) for r in rows]

    async def release(self, user: str, ids: Sequence[str] | None = None) -> list[str]:
        """Take ``user``'s quarantined exchanges (all, or those in ``ids``) out of
        quarantine with their attempts reset; returns the ids released."""
        only = "" if ids is None else " AND id = ANY(%(ids)s)"
        rows = await self._thread(lambda: self._rows(
            "UPDATE exchanges SET quarantined_at=NULL, attempts=0 WHERE \"user\"=%(user)s"
            f" AND quarantined_at IS NOT NULL AND consumed_at IS NULL{only} RETURNING id",
            {"user": user, "ids": list(ids or ())}))
        return [str(r[0]) for r in rows]

    async def skip(self, user: str, ids: Sequence[str] | None = None) -> list[str]:
        """Set ``user``'s exchanges aside for good (see the SQLite journal's
        :meth:`~.exchange_log.Journal.skip`); returns the ids skipped."""
        if ids is None:
            which = "quarantined_at IS NOT NULL"
        else:
            which = "batch_id IS NULL AND id = ANY(%(ids)s)"
        now = _now()
        rows = await self._thread(lambda: self._rows(
            "UPDATE exchanges SET consumed_at=%(now)s, skipped_at=%(now)s, lease_owner=NULL,"
            f" lease_until=NULL WHERE \"user\"=%(user)s AND consumed_at IS NULL AND {which}"
            " RETURNING id", {"user": user, "ids": list(ids or ()), "now": now}))
        return [str(r[0]) for r in rows]

    # -- extraction batches ----------------------------------------------------------
    async def open_batch(self, user: str, exchanges: Sequence[Exchange],
                         facts: Sequence[Fact]) -> ExtractionBatch:
        """Record the chat model's ``facts`` for ``exchanges`` (state ``answered``),
        leased to this worker, and claim the exchanges, in one transaction. Raises
        :class:`ExchangesTaken` (recording nothing) when one of them is in another
        batch, consumed, quarantined, or leased by another live worker."""
        batch = ExtractionBatch(
            id=str(uuid.uuid4()), user=user, exchange_ids=tuple(e.id for e in exchanges),
            said_at=max(e.at for e in exchanges), facts=tuple(facts), state="answered")
        covered = (batch.id, user, json.dumps(list(batch.exchange_ids)),
                   batch.said_at.isoformat(), facts_to_json(batch.facts))

        def write(c: Connection[tuple[Any, ...]]) -> None:
            c.execute('INSERT INTO extraction_batches(id, "user", exchange_ids, said_at,'
                      " facts, state, created_at, checksum, lease_owner, lease_until)"
                      " VALUES (%(id)s, %(user)s, %(ids)s, %(said)s, %(facts)s, 'answered',"
                      f" %(now)s, %(sum)s, %(me)s, {_LEASE})",
                      self._params(id=covered[0], user=user, ids=covered[2],
                                   said=covered[3], facts=covered[4], now=_now(),
                                   sum=exchange_checksum(covered)))
            claimed = c.execute(
                f"UPDATE exchanges SET batch_id=%(batch)s, lease_owner=%(me)s,"
                f" lease_until={_LEASE} WHERE id = ANY(%(ids)s) AND {_WAITING} AND {_FREE}",
                self._params(batch=batch.id, ids=list(batch.exchange_ids))).rowcount
            if claimed != len(batch.exchange_ids):
                raise ExchangesTaken(f"{len(batch.exchange_ids) - claimed} of the exchanges"
                                     " were taken by another extraction meanwhile")
        await self._thread(lambda: self._transaction(write))
        return batch

    async def save_plan(self, batch: ExtractionBatch, plan: Sequence[PlannedFact],
                        ) -> ExtractionBatch:
        """Record the dedup decisions of ``batch`` (state ``planned``) and renew its
        lease — unless a plan is journaled already (another worker took the batch over
        and planned it): then that plan is returned, to be replayed."""
        text = plan_to_json(plan)

        def write(c: Connection[tuple[Any, ...]]) -> str | None:
            row = c.execute("SELECT plan FROM extraction_batches WHERE id=%s FOR UPDATE",
                            (batch.id,)).fetchone()
            if row is not None and row[0] is not None:
                return str(row[0])
            c.execute("UPDATE extraction_batches SET plan=%(plan)s, plan_checksum=%(sum)s,"
                      f" state='planned', lease_owner=%(me)s, lease_until={_LEASE}"
                      " WHERE id=%(id)s",
                      self._params(plan=text, sum=exchange_checksum((batch.id, text)),
                                   id=batch.id))
            return None
        journaled = await self._thread(lambda: self._transaction(write))
        if journaled is not None:
            return batch.planned(plan_from_json(journaled, batch.user))
        return batch.planned(tuple(plan))

    async def finish_batch(self, batch: ExtractionBatch) -> None:
        """Mark ``batch`` done and its exchanges consumed, in one transaction (again on
        a batch already done changes nothing)."""
        def write(c: Connection[tuple[Any, ...]]) -> None:
            c.execute("UPDATE extraction_batches SET state='done', lease_owner=NULL,"
                      " lease_until=NULL WHERE id=%s", (batch.id,))
            c.execute("UPDATE exchanges SET consumed_at=%s, lease_owner=NULL,"
                      " lease_until=NULL WHERE id = ANY(%s) AND batch_id=%s AND"
                      " consumed_at IS NULL", (_now(), list(batch.exchange_ids), batch.id))
        await self._thread(lambda: self._transaction(write))

    async def batch_failed(self, batch: ExtractionBatch, error: str) -> int:
        """Count a failed attempt to complete ``batch`` (its lease ends: any worker may
        try again); returns its attempts."""
        def write(c: Connection[tuple[Any, ...]]) -> int:
            c.execute("UPDATE exchanges SET last_error=%s WHERE id = ANY(%s)",
                      (error[:500], list(batch.exchange_ids)))
            row = c.execute("UPDATE extraction_batches SET attempts=attempts+1,"
                            " last_error=%s, lease_owner=NULL, lease_until=NULL"
                            " WHERE id=%s RETURNING attempts",
                            (error[:500], batch.id)).fetchone()
            return int(row[0]) if row else 0
        return await self._thread(lambda: self._transaction(write))

    async def abandon_batch(self, batch: ExtractionBatch, error: str) -> None:
        """Give up on completing ``batch``: its exchanges wait for extraction again."""
        def write(c: Connection[tuple[Any, ...]]) -> None:
            c.execute("UPDATE extraction_batches SET state='abandoned', last_error=%s,"
                      " lease_owner=NULL, lease_until=NULL WHERE id=%s",
                      (error[:500], batch.id))
            c.execute("UPDATE exchanges SET batch_id=NULL, lease_owner=NULL,"
                      " lease_until=NULL WHERE id = ANY(%s) AND batch_id=%s",
                      (list(batch.exchange_ids), batch.id))
        await self._thread(lambda: self._transaction(write))

    async def open_batches(self, user: str | None = None) -> list[ExtractionBatch]:
        """Unfinished batches (of ``user``, or all) this worker holds or whose lease
        expired — now leased to this worker — oldest first. Batches another live worker
        holds are left to it."""
        only = "" if user is None else ' AND "user"=%(user)s'
        sql = (f"WITH picked AS (SELECT id FROM extraction_batches WHERE {_OPEN}{only}"
               f" AND {_FREE} ORDER BY seq FOR UPDATE SKIP LOCKED)"
               f" UPDATE extraction_batches b SET lease_owner=%(me)s, lease_until={_LEASE}"
               f" FROM picked WHERE b.id = picked.id RETURNING "
               + ", ".join(f"b.{c.strip()}" for c in _BATCH_SELECT.split(",")))
        rows = await self._thread(lambda: self._rows(sql, self._params(user=user)))
        rows.sort(key=lambda r: int(r[11]))
        return [batch_from_row(r) for r in rows if _batch_intact(_for_check(r))]

    async def batches(self, user: str) -> list[ExtractionBatch]:
        """Every batch of ``user`` (done ones keep what the chat model answered)."""
        rows = await self._thread(lambda: self._rows(
            f'SELECT {_BATCH_SELECT} FROM extraction_batches WHERE "user"=%s ORDER BY seq',
            (user,)))
        return [batch_from_row(r) for r in rows if _batch_intact(_for_check(r))]

    async def activity_rows(self, user: str | None, after: str | None, limit: int | None,
                            ) -> list[tuple[object, ...]]:
        """Per person (sorted by id as SQLite sorts, bytewise): id, first seen, newest
        exchange's time, exchange count — for the console's people list."""
        where = 'WHERE (%(user)s::text IS NULL OR u."user"=%(user)s) AND' \
                ' (%(after)s::text IS NULL OR u."user" COLLATE "C" > %(after)s)'
        page = "" if limit is None else f" LIMIT {int(limit)}"
        rows = await self._thread(lambda: self._rows(
            'SELECT u."user", u.first_seen, (SELECT e.at FROM exchanges e WHERE'
            ' e."user"=u."user" AND e.user_text <> \'\' ORDER BY e.at_ts DESC LIMIT 1),'
            ' (SELECT COUNT(*) FROM'
            f' exchanges e WHERE e."user"=u."user") FROM users u {where}'
            f' ORDER BY u."user" COLLATE "C"{page}', {"user": user, "after": after}))
        return [tuple(r) for r in rows]

    # -- health and recovery ---------------------------------------------------------
    def verify(self) -> JournalCheck:
        """Every exchange and batch row checked against its checksums (``omoide memory
        verify``; see :func:`~.row_checksum.verify_journal` for the SQLite file)."""
        out = JournalCheck()
        columns = ", ".join(f'"{c}"' for c in CHECKED_COLUMNS)
        for r in self._rows(f"SELECT {columns}, checksum FROM exchanges ORDER BY at_ts"):
            if r[-1] is None:
                out.unchecked += 1
            elif not row_is_intact(r[:-1], r[-1]):
                out.damaged.append(DamagedRow(str(r[0]), str(r[1]), str(r[4])))
            out.checked += r[-1] is not None
        for r in self._rows(f"SELECT {_BATCH_SELECT} FROM extraction_batches ORDER BY seq"):
            if r[9] is None:
                out.unchecked += 1
                continue
            out.checked += 1
            if not batch_is_intact(r[:6], r[9], r[10]):
                out.damaged.append(DamagedRow(str(r[0]), str(r[1]), str(r[3]),
                                              "extraction batch"))
        return out

    def probe_sync(self) -> None:
        """A real write (raises when the database cannot take one)."""
        self._transaction(lambda c: c.execute(
            "INSERT INTO journal_probes(id, at) VALUES (1, %s)"
            " ON CONFLICT (id) DO UPDATE SET at=EXCLUDED.at", (_now(),)))

    def restore_rows(self, columns: Sequence[str], rows: Sequence[Sequence[object]]) -> int:
        """Insert exchange rows read from elsewhere (``columns`` names them); returns how
        many were new."""
        names = ", ".join(f'"{c}"' for c in columns)
        marks = ", ".join(["%s"] * len(columns))

        def write(c: Connection[tuple[Any, ...]]) -> int:
            added = 0
            for row in rows:
                added += c.execute(f"INSERT INTO exchanges({names}) VALUES ({marks})"
                                   " ON CONFLICT (id) DO NOTHING", list(row)).rowcount
            _fill_missing_checksums(c)
            c.execute('INSERT INTO users("user", first_seen) SELECT DISTINCT "user", %s'
                      " FROM exchanges ON CONFLICT DO NOTHING", (_now(),))
            return added
        return self._transaction(write)


def _for_check(r: Sequence[Any]) -> tuple[Any, ...]:
    """A row of :data:`_BATCH_SELECT` in the layout ``_batch_intact`` reads (the SQLite
    journal's: covered columns, plan, state, attempts, error, checksum, plan checksum)."""
    return tuple(r[:11])


def _fill_missing_checksums(c: Connection[tuple[Any, ...]]) -> int:
    """Rows written without a checksum (restored rows) get one."""
    columns = ", ".join(f'"{n}"' for n in CHECKED_COLUMNS)
    rows = c.execute(f"SELECT {columns} FROM exchanges WHERE checksum IS NULL").fetchall()
    for r in rows:
        c.execute("UPDATE exchanges SET checksum=%s WHERE id=%s",
                  (exchange_checksum(r), r[0]))
    batch_columns = ", ".join(f'"{n}"' for n in BATCH_COLUMNS)
    for r in c.execute(f"SELECT {batch_columns} FROM extraction_batches"
                       " WHERE checksum IS NULL").fetchall():
        c.execute("UPDATE extraction_batches SET checksum=%s WHERE id=%s",
                  (exchange_checksum(r), r[0]))
    return len(rows)
