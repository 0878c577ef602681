"""Timers every worker shares: the timer book in PostgreSQL (``database.url``).

The same :class:`~omoide_skills.timer_book.Timer` records as the file book, in one table
(migrations component ``skills_timers``). A timer set on any worker is seen by all (the
list, the per-person limit, a cancel), and each goes off **once**:

- a worker takes what is due with ``SELECT ... FOR UPDATE SKIP LOCKED`` and marks it as
  its own until a lease runs out (``lease_seconds``); another worker looking at the same
  moment skips the rows taken and finds nothing;
- the worker announces the timer, then deletes the row it still holds. A worker that
  dies between the two (SIGKILL, a lost machine) leaves its claim behind: once the lease
  runs out another worker takes the timer over and announces it, marked late. While a
  worker is announcing what it took, it pushes its claims on them a lease ahead every
  third of one (a heartbeat), so a slow announcement (or a queue of them) is never
  taken over and said twice; the beat stops when the announcing does;
- a cancel deletes only a timer nobody is announcing, so a timer cancelled on one worker
  is never announced by another (one going off at that instant is not cancelled).
- the worker a person's robot is connected to says their timers (``reaches``): another
  worker takes a due timer only ``handoff_seconds`` after it fell due, when no worker
  reaching the person took it (their robot is offline: it is queued where it is taken).

Each worker wakes when its next known timer falls due and looks every ``poll_seconds``
besides, for timers set on other workers (and claims left by dead ones). Times are the
workers' clocks (kept in sync by NTP, as the journal's leases assume). A database that
does not answer is tried again at the next look; the timers wait in the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omoide.api import Migration, migrated_pool
from omoide_skills.timer_book import OnDue, Timer, TimerBook

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

log = logging.getLogger("omoide.skills.timers")

COMPONENT = "skills_timers"
MIGRATIONS = (
    Migration(1, "timers and their leases", """
CREATE TABLE skills_timers (
    id TEXT PRIMARY KEY,
    "user" TEXT NOT NULL,
    kind TEXT NOT NULL,
    due_at TIMESTAMPTZ NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    label TEXT NOT NULL DEFAULT '',
    duration_s DOUBLE PRECISION,
    zone TEXT NOT NULL DEFAULT 'UTC',
    owner TEXT,
    lease_until TIMESTAMPTZ
);
CREATE INDEX skills_timers_due ON skills_timers (due_at);
CREATE INDEX skills_timers_user ON skills_timers ("user", due_at);
"""),
)
_COLUMNS = 'id, "user", kind, due_at, created_at, label, duration_s, zone'
_FREE = "(lease_until IS NULL OR lease_until <= %(now)s)"
_CLAIM = f"""
WITH due AS (
    SELECT id, owner AS was FROM skills_timers
    WHERE id = ANY(%(ids)s) AND due_at <= %(now)s AND {_FREE}
    ORDER BY due_at FOR UPDATE SKIP LOCKED)
UPDATE skills_timers t SET owner = %(me)s, lease_until = %(until)s FROM due
WHERE t.id = due.id
RETURNING t.id, t."user", t.kind, t.due_at, t.created_at, t.label, t.duration_s, t.zone,
          due.was"""


def _timer(row: tuple[Any, ...]) -> Timer:
    duration = row[6]
    return Timer(str(row[0]), str(row[1]), row[2], row[3].astimezone(UTC),
                 row[4].astimezone(UTC), str(row[5] or ""),
                 float(duration) if duration is not None else None, str(row[7] or "UTC"))


class SharedTimerBook:
    """Pending timers of every person on the shared database (see the module)."""

    def __init__(self, url: str, on_due: OnDue, *,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC),
                 poll_seconds: float = 5.0, lease_seconds: float = 60.0,
                 handoff_seconds: float = 10.0,
                 reaches: Callable[[str], bool] = lambda user: True,
                 worker_id: str | None = None) -> None:
        self.url = url
        self.handoff_seconds = handoff_seconds
        self._reaches = reaches
        self._on_due = on_due
        self._clock = clock
        self.poll_seconds = poll_seconds
        self.lease_seconds = lease_seconds
        self.worker_id = worker_id or uuid.uuid4().hex[:12]
        self._pool: ConnectionPool | None = None
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._started_at: datetime | None = None
        self._stopping = False

    # -- lifecycle -------------------------------------------------------------------
    async def start(self) -> None:
        """Open the pool, migrate, and start looking for due timers."""
        self._pool = await asyncio.to_thread(self._open)
        self._started_at = self._clock()
        self._stopping = False
        self._task = asyncio.create_task(self._run(), name="omoide-shared-timers")

    def _open(self) -> ConnectionPool:
        return migrated_pool(self.url, COMPONENT, MIGRATIONS, size=2, timeout_s=3.0,
                             name="omoide-skills-timers")

    async def stop(self) -> None:
        if self._task is not None:
            # Python 3.11's wait_for swallows a cancel that arrives just as the event it
            # waits for is set (a timer added a moment ago): the flag ends the loop then
            self._stopping = True
            self._changed.set()
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._pool is not None:
            await asyncio.to_thread(self._pool.close)
            self._pool = None

    def _rows(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        if self._pool is None:
            raise RuntimeError("the timer book is not started")
        with self._pool.connection() as conn:
            cursor = conn.execute(sql, params)
            return list(cursor.fetchall()) if cursor.description else []

    async def _sql(self, sql: str, **params: Any) -> list[tuple[Any, ...]]:
        return await asyncio.to_thread(self._rows, sql, params)

    # -- changes ---------------------------------------------------------------------
    async def add(self, timer: Timer) -> None:
        await self._sql(
            f"INSERT INTO skills_timers({_COLUMNS}) VALUES (%(id)s, %(user)s, %(kind)s,"
            " %(due_at)s, %(created_at)s, %(label)s, %(duration_s)s, %(zone)s)",
            id=timer.id, user=timer.user, kind=timer.kind, due_at=timer.due_at,
            created_at=timer.created_at, label=timer.label, duration_s=timer.duration_s,
            zone=timer.zone)
        self._changed.set()

    async def import_file(self, path: Path) -> int:
        """Move a worker's timers file into the database (the first start with
        ``database.url`` of a data folder that kept timers in ``timers.json``): every
        timer not there yet goes in, the file is renamed ``*.moved``. Returns how many
        went in (a timer already due then goes off at once, late)."""
        if not path.exists():
            return 0
        timers = await asyncio.to_thread(TimerBook(path, self._on_due)._load)
        moved = 0
        for timer in timers.values():
            rows = await self._sql(
                f"INSERT INTO skills_timers({_COLUMNS}) VALUES (%(id)s, %(user)s,"
                " %(kind)s, %(due_at)s, %(created_at)s, %(label)s, %(duration_s)s,"
                " %(zone)s) ON CONFLICT (id) DO NOTHING RETURNING id",
                id=timer.id, user=timer.user, kind=timer.kind, due_at=timer.due_at,
                created_at=timer.created_at, label=timer.label,
                duration_s=timer.duration_s, zone=timer.zone)
            moved += len(rows)
        if path.exists():
            os.replace(path, path.with_name(path.name + ".moved"))
        log.info("timers: %d of %s moved into the shared database", moved, path)
        self._changed.set()
        return moved

    async def cancel(self, ids: list[str]) -> list[Timer]:
        rows = await self._sql(
            f"DELETE FROM skills_timers WHERE id = ANY(%(ids)s) AND {_FREE}"
            f" RETURNING {_COLUMNS}", ids=list(ids), now=self._clock())
        return sorted((_timer(r) for r in rows), key=lambda t: t.due_at)

    async def pending(self, user: str) -> list[Timer]:
        """``user``'s timers not gone off yet, soonest first (one being announced
        right now included)."""
        rows = await self._sql(f'SELECT {_COLUMNS} FROM skills_timers WHERE "user" ='
                               " %(user)s ORDER BY due_at, id", user=user)
        return [_timer(r) for r in rows]

    # -- going off -------------------------------------------------------------------
    async def _claim(self, now: datetime, batch: int = 20) -> list[tuple[Timer, bool]]:
        """Take what is due and free for this worker (for a person it reaches, or due
        past the handoff); each with whether another worker held it before."""
        due = await self._sql(f'SELECT id, "user", due_at FROM skills_timers WHERE'
                              f" due_at <= %(now)s AND {_FREE} ORDER BY due_at LIMIT 200",
                              now=now)
        handoff = now - timedelta(seconds=self.handoff_seconds)
        ids = [str(r[0]) for r in due if r[2] <= handoff or self._reaches(str(r[1]))][:batch]
        if not ids:
            return []
        until = now + timedelta(seconds=self.lease_seconds)
        rows = await self._sql(_CLAIM, now=now, until=until, me=self.worker_id, ids=ids)
        taken = [(_timer(r), r[8] is not None) for r in rows]
        return sorted(taken, key=lambda pair: pair[0].due_at)

    async def _next_due(self) -> datetime | None:
        """When the next timer can be taken (its due time, or its claim's end)."""
        rows = await self._sql("SELECT min(GREATEST(due_at, COALESCE(lease_until, due_at)))"
                               " FROM skills_timers")
        at = rows[0][0] if rows else None
        return at.astimezone(UTC) if at is not None else None

    async def look(self) -> int:
        """Announce every timer due now that no other worker holds; how many went off
        here (the scheduler's step, callable by tests)."""
        fired = 0
        held: list[str] = []   # taken by this look and not said yet: claims kept
        beat = asyncio.create_task(self._keep_claims(held), name="omoide-timer-claims")
        try:
            while taken := await self._claim(self._clock()):
                held[:] = [timer.id for timer, _ in taken]
                for timer, taken_over in taken:
                    await self._fire(timer, taken_over)
                    held.remove(timer.id)
                    fired += 1
        finally:
            beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beat
        return fired

    async def _keep_claims(self, held: list[str]) -> None:
        """Every third of a lease, push this worker's claims on ``held`` a lease ahead
        (a timer another worker took meanwhile is not touched)."""
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            if not held:
                continue
            try:
                await self._sql("UPDATE skills_timers SET lease_until = %(until)s WHERE"
                                " id = ANY(%(ids)s) AND owner = %(me)s", ids=list(held),
                                until=self._clock() + timedelta(seconds=self.lease_seconds),
                                me=self.worker_id)
            except Exception as exc:  # noqa: BLE001 - the next beat tries again
                log.warning("keeping the claims on timers being said failed: %s", exc)

    async def _fire(self, timer: Timer, taken_over: bool) -> None:
        late = taken_over or (self._started_at is not None
                              and timer.due_at < self._started_at)
        try:
            await self._on_due(timer, late)
        except Exception:
            log.exception("timer %s of %s went off but could not be announced",
                          timer.id, timer.user)
        # said (or failed to be): gone, unless the lease ran out and another took it
        await self._sql("DELETE FROM skills_timers WHERE id = %(id)s AND owner = %(me)s",
                        id=timer.id, me=self.worker_id)

    async def _run(self) -> None:
        while not self._stopping:
            self._changed.clear()
            wait = self.poll_seconds
            try:
                await self.look()
                nxt = await self._next_due()
                if nxt is not None:
                    ahead = (nxt - self._clock()).total_seconds()
                    # due but not ours yet (another worker's person, within the handoff)
                    wait = min(wait, ahead if ahead > 0 else 0.5)
            except Exception:
                log.exception("looking for due timers in the database failed;"
                              " trying again in %.0f s", self.poll_seconds)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), wait)
