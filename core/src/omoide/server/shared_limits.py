"""Rate limits counted in PostgreSQL, so that every worker enforces one limit.

The in-process windows (:class:`omoide.server.session_routes.MovingWindow`, the StackChan
plugin's per-source limiter) count what reached this process: a client spreading its
requests over N workers behind a load balancer would get N times the limit. With
``database.url`` the counts live in one small table (migrations component
``rate_limits``): a row per ``(scope, key, window)`` holding a count, raised with one
``INSERT ... ON CONFLICT DO UPDATE ... WHERE count < limit`` (the row's lock makes two
workers' hits count one after the other; a refused hit is not counted, as in memory).

The window is a sliding one, approximated from two fixed windows (what Cloudflare and
others do): the previous window's count weighted by how much of it still lies within
the last ``window_s`` seconds, plus the current window's. A burst at a window boundary
thus gets no double allowance. Windows are numbered from the Unix epoch on each worker's
wall clock (kept in sync by NTP); rows two windows old are deleted now and then.

Every call here blocks on the database: a request handler awaits
:meth:`SharedWindow.hit_async` (or :meth:`omoide.server.limits.NewUserLimiter.admit_async`),
which runs it in a worker thread, so one slow or locked counter never holds the event
loop.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from omoide.database.connection import open_pool
from omoide.database.migrations import Migration, apply_migrations

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

T = TypeVar("T")
Transaction = Callable[[Callable[[Any], Any]], Any]
"""Runs ``work(connection)`` in one transaction and returns what it returns."""

COMPONENT = "rate_limits"
MIGRATIONS = (
    Migration(1, "rate limit counters", """
CREATE TABLE omoide_rate_limits (
    scope TEXT NOT NULL,
    key TEXT NOT NULL,
    window_no BIGINT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (scope, key, window_no)
);
"""),
    Migration(2, "people admitted past the new-user limit", """
CREATE TABLE omoide_admitted_users (
    "user" TEXT PRIMARY KEY,
    admitted_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
"""),
)
_HIT = """
INSERT INTO omoide_rate_limits AS r (scope, key, window_no, count)
VALUES (%(scope)s, %(key)s, %(no)s, 1)
ON CONFLICT (scope, key, window_no) DO UPDATE SET count = r.count + 1
WHERE r.count + 1 + %(before)s <= %(limit)s
RETURNING count"""


class SharedCounters:
    """Counts on the shared database (see the module); ``transaction`` runs work on a
    connection of a pool the caller already has (the token store's), or
    :meth:`open` makes a small pool of its own."""

    def __init__(self, transaction: Transaction, *,
                 clock: Callable[[], float] = time.time, close: Callable[[], None] | None = None,
                 ) -> None:
        self._transaction = transaction
        self._clock = clock
        self._close = close
        self._migrated = False
        self._swept: dict[str, int] = {}
        self._lock = threading.Lock()

    @classmethod
    def open(cls, url: str, *, clock: Callable[[], float] = time.time) -> SharedCounters:
        """Counters on a pool of their own (opened at the first hit)."""
        pool: list[ConnectionPool] = []
        guard = threading.Lock()

        def transaction(work: Callable[[Any], Any]) -> Any:
            with guard:
                if not pool:
                    pool.append(open_pool(url, size=2, timeout_s=3.0,
                                          name="omoide-rate-limits"))
            with pool[0].connection() as conn, conn.transaction():
                return work(conn)

        def close() -> None:
            with guard:
                while pool:
                    pool.pop().close()

        return cls(transaction, clock=clock, close=close)

    def close(self) -> None:
        if self._close is not None:
            self._close()

    def window(self, scope: str, limit: int, window_s: float) -> SharedWindow:
        """A limit of ``limit`` hits per key within ``window_s`` seconds."""
        return SharedWindow(self, scope, limit, window_s)

    def admitted(self, user: str) -> bool:
        """Whether ``user`` was admitted as a new person by any worker."""
        self._migrate()
        return bool(self._transaction(lambda conn: conn.execute(
            'SELECT 1 FROM omoide_admitted_users WHERE "user" = %s', (user,)).fetchall()))

    def admit(self, user: str) -> None:
        """Record ``user`` as admitted: no worker counts them as new again."""
        self._migrate()
        self._transaction(lambda conn: conn.execute(
            'INSERT INTO omoide_admitted_users("user") VALUES (%s) ON CONFLICT DO NOTHING',
            (user,)))

    def _migrate(self) -> None:
        with self._lock:
            if not self._migrated:
                self._transaction(lambda conn: apply_migrations(conn, COMPONENT, MIGRATIONS))
                self._migrated = True

    def hit(self, scope: str, key: str, limit: int, window_s: float) -> float | None:
        """Count one hit of ``key`` in ``scope``: None when allowed, else the seconds
        until one will be (the refused hit not counted)."""
        self._migrate()
        now = self._clock()
        no = math.floor(now / window_s)
        into = (now - no * window_s) / window_s      # how far into the current window
        sweep = self._swept.get(scope, no) < no - 1

        def work(conn: Any) -> tuple[int, int, bool]:
            rows = conn.execute(
                "SELECT window_no, count FROM omoide_rate_limits WHERE scope = %s AND"
                " key = %s AND window_no IN (%s, %s)", (scope, key, no - 1, no)).fetchall()
            counts = {int(r[0]): int(r[1]) for r in rows}
            before = counts.get(no - 1, 0) * (1.0 - into)
            counted = False
            if before + 1 <= limit:
                counted = conn.execute(_HIT, {"scope": scope, "key": key, "no": no,
                                              "before": before, "limit": limit}
                                       ).fetchone() is not None
            if sweep:
                conn.execute("DELETE FROM omoide_rate_limits WHERE scope = %s AND"
                             " window_no < %s", (scope, no - 1))
            return counts.get(no - 1, 0), counts.get(no, 0), counted

        previous, current, counted = self._transaction(work)
        self._swept.setdefault(scope, no)
        if sweep:
            self._swept[scope] = no
        return None if counted else _wait(previous, current, into, limit, window_s)


def _wait(previous: int, current: int, into: float, limit: int, window_s: float) -> float:
    """Seconds until ``previous * (1 - into') + current + 1 <= limit`` again, at least
    one; the next window when the current one alone is full."""
    rest = (1.0 - into) * window_s
    if current + 1 > limit or previous == 0:
        return max(1.0, rest)
    # the previous window's weight must fall to (limit - current - 1) / previous
    target_into = 1.0 - (limit - current - 1) / previous
    return max(1.0, min(rest, (target_into - into) * window_s))


class SharedWindow:
    """One limit on :class:`SharedCounters`: the ``hit(key)`` of an in-process window."""

    def __init__(self, counters: SharedCounters, scope: str, limit: int,
                 window_s: float) -> None:
        self.counters = counters
        self.scope = scope
        self.limit = limit
        self.window_s = window_s

    def hit(self, key: str) -> float | None:
        """Count one hit of ``key``: None when allowed, else the seconds to wait."""
        return self.counters.hit(self.scope, key, self.limit, self.window_s)

    async def hit_async(self, key: str) -> float | None:
        """:meth:`hit` in a worker thread (the event loop keeps serving meanwhile)."""
        return await asyncio.to_thread(self.hit, key)
