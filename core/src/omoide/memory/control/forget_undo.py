"""Forgetting with an undo window: a forgotten memory can be restored for a short while.

:meth:`ForgetWithUndo.forget` first keeps a copy of the memory in
``<data_dir>/recently_forgotten.sqlite3`` (committed, ``synchronous=FULL``), then
deletes it from the store, and answers an undo ticket: a random id that is valid for
``window_s`` seconds. :meth:`ForgetWithUndo.restore` puts the memory back (same id, same
text, dates and kind; embedded again) and ends the ticket.

Nothing is lost: the copy is written before the delete, so a crash between the two
leaves the memory where it was (the copy expires unused); a crash after the delete
leaves a ticket that still restores until it expires.

Nothing comes back by accident: only the ticket restores (not the memory id, which an
import or a guess could name), a ticket restores once, never after its window, never
for another person, and never over a memory with that id that exists again (an
import in the meantime): that is answered as "already there". An expired copy is
deleted from the file at the next call and by :meth:`purge_expired`, which the server
runs on a timer, so a forgotten text does not outlive its window on disk for long.

With ``database.url`` (several workers) the copies are in the shared database
(:mod:`.postgres_forgotten`), so a forget done on one worker is undone on any other:
the ticket is looked up there, and the restored memory reaches every worker's index as
any write does. Two workers restoring one ticket at the same instant both write the
same memory (same id, same record): it comes back once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from omoide.memory.control.postgres_forgotten import PostgresForgottenCopies
from omoide.memory.store_payload import from_payload, to_payload
from omoide.private_files import connect_private
from omoide.types import Memory

if TYPE_CHECKING:
    from omoide.memory.engine import MemoryEngine

DEFAULT_WINDOW_S = 30.0
"""How long a forgotten memory can be restored."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS forgotten (
    ticket TEXT PRIMARY KEY,
    user TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    memory TEXT NOT NULL,
    forgotten_at REAL NOT NULL,
    expires_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS forgotten_user ON forgotten(user, expires_at);
"""


@dataclass(frozen=True)
class UndoTicket:
    """What :meth:`ForgetWithUndo.forget` answers: restore with ``ticket`` until
    ``expires_at`` (seconds since the epoch)."""

    ticket: str
    user: str
    memory: Memory
    expires_at: float

    def to_json(self) -> dict[str, Any]:
        return {"ticket": self.ticket, "memory_id": self.memory.id, "text": self.memory.text,
                "expires_at": self.expires_at}


RestoreOutcome = Literal["restored", "already_there", "expired", "unknown"]


class ForgetWithUndo:
    """Forget and restore ``engine``'s memories; one per server (one data dir). The
    copies are kept in the file ``path``, or with ``database_url`` in the shared
    database (``path`` unused)."""

    def __init__(self, engine: MemoryEngine, path: Path, *,
                 window_s: float = DEFAULT_WINDOW_S,
                 clock: Callable[[], float] = time.time,
                 database_url: str | None = None) -> None:
        self._engine = engine
        self.path = Path(path)
        self._shared = PostgresForgottenCopies(database_url) if database_url else None
        self.window_s = window_s
        self._clock = clock
        self._db: sqlite3.Connection | None = None
        self._db_lock = threading.Lock()
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()   # a new copy: the purger looks at its expiry

    # -- storage ---------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            db = connect_private(self.path, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.executescript(_SCHEMA)
            self._db = db
        return self._db

    def _run(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        if self._shared is not None:
            return self._shared.rows(sql, params)
        with self._db_lock:
            return list(self._conn().execute(sql, params).fetchall())

    async def _sql(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        return await asyncio.to_thread(self._run, sql, params)

    def close(self) -> None:
        if self._shared is not None:
            self._shared.close()
        with self._db_lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    # -- the operations --------------------------------------------------------------
    async def forget(self, user: str, memory_id: str) -> UndoTicket | None:
        """Forget ``user``'s memory ``memory_id``; None when there is no such memory."""
        async with self._lock:
            await self._purge(self._clock())
            memory = await self._engine.get(user, memory_id)
            if memory is None:
                return None
            now = self._clock()
            ticket = UndoTicket(secrets.token_urlsafe(18), user, memory, now + self.window_s)
            await self._sql('INSERT INTO forgotten(ticket, "user", memory_id, memory,'
                            " forgotten_at, expires_at) VALUES (?,?,?,?,?,?)",
                            (ticket.ticket, user, memory_id,
                             json.dumps(to_payload(memory), ensure_ascii=False), now,
                             ticket.expires_at))
            try:
                existed = await self._engine.forget(user, memory_id)
            except BaseException:
                await self._sql("DELETE FROM forgotten WHERE ticket=?", (ticket.ticket,))
                raise
            if not existed:   # forgotten by someone else meanwhile: nothing to undo here
                await self._sql("DELETE FROM forgotten WHERE ticket=?", (ticket.ticket,))
                return None
            self._wake.set()
            return ticket

    async def restore(self, user: str, ticket: str) -> tuple[RestoreOutcome, Memory | None]:
        """Put back the memory ``ticket`` forgot, if it is ``user``'s and not expired.

        ``already_there`` (nothing written) when a memory with its id exists again.
        """
        async with self._lock:
            now = self._clock()
            rows = await self._sql("SELECT memory_id, memory, expires_at FROM forgotten"
                                   " WHERE ticket=? AND \"user\"=?", (ticket, user))
            if not rows:
                await self._purge(now)
                return "unknown", None
            memory = from_payload(str(rows[0][0]), json.loads(rows[0][1]))
            if float(rows[0][2]) <= now:
                await self._purge(now)
                return "expired", None
            if await self._engine.get(user, memory.id) is not None:
                outcome: RestoreOutcome = "already_there"
            else:
                await self._engine.index(user)   # a build in flight must not drop it
                await self._engine.add_memories(user, [memory])
                outcome = "restored"
            await self._sql("DELETE FROM forgotten WHERE ticket=?", (ticket,))
            return outcome, memory

    async def pending(self, user: str) -> list[UndoTicket]:
        """``user``'s memories that can still be restored, newest first."""
        now = self._clock()
        await self._purge(now)
        rows = await self._sql("SELECT ticket, memory_id, memory, expires_at FROM forgotten"
                               " WHERE \"user\"=? AND expires_at>? ORDER BY forgotten_at DESC",
                               (user, now))
        return [UndoTicket(str(r[0]), user, from_payload(str(r[1]), json.loads(r[2])),
                           float(r[3])) for r in rows]

    async def purge_expired(self) -> int:
        """Delete every expired copy; returns how many."""
        async with self._lock:
            return await self._purge(self._clock())

    async def _purge(self, now: float) -> int:
        rows = await self._sql("DELETE FROM forgotten WHERE expires_at<=? RETURNING ticket",
                               (now,))
        return len(rows)

    async def run_purger(self) -> None:
        """Purge expired copies as they expire (a server task; cancel it to stop)."""
        while True:
            await self.purge_expired()
            rows = await self._sql("SELECT MIN(expires_at) FROM forgotten")
            following = None if rows[0][0] is None else float(rows[0][0])
            wait = 60.0 if following is None else following - self._clock() + 0.05
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), min(max(wait, 0.2), 60.0))
            self._wake.clear()
