"""The console's turn feed shared by every worker of one database (``database.url``).

A console connected to worker A shows the turns that ran on worker B: each finished
turn (the same JSON the feed sends, :meth:`TurnFeed.turn_json`, and the moments said)
is written to one table, ``recent_turns`` (migrations component ``turn_feed``), and
announced with ``NOTIFY omoide_turns`` in the same transaction. Its ``seq`` (an identity
column) is the event id every worker sends, so a browser's ``Last-Event-ID`` means the
same turn on any worker. The inserts take one transaction-level advisory lock, so the
turns commit in the order of their numbers: a reader that has seen number n never finds
a smaller one committed after it (without the lock two workers' turns could commit out
of order, and a stream would skip the late one).

Reading:

- ``GET /v1/turns`` and a stream's replay read the table (the newest ``limit`` after
  ``Last-Event-ID``, one person's or everyone's);
- live streams: a worker with at least one open stream holds one listening connection
  (opened when its first stream opens, closed when its last one ends: a worker no
  console watches holds none). A notification says only that turns were added (the JSON of a
  turn may be larger than a notification takes): the listener reads every turn after the
  last it read, once for all the notifications waiting, and hands them to the streams.
  After a lost connection it listens again and reads what it missed the same way.

What is kept: the last :data:`KEPT_PER_PERSON` turns of each person, none older than
:data:`KEPT_DAYS` days (pruned as turns are added: the person's excess at every insert,
the old ones at most once a minute per worker).

While the database does not answer, a finished turn is kept in this worker's ring and
sent to this worker's streams, numbered after the last shared number it saw so a stream
goes on (those turns are not seen on other workers, and are not kept when the database
is back); for :data:`PAUSE_AFTER_FAILURE_S` after a failure the database is not asked
again. ``GET /v1/turns`` then answers from the ring. Blocking statements
run in worker threads, never on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from omoide.database.connection import LazyPool, is_postgresql_url
from omoide.database.migrations import Migration
from omoide.server.turn_feed import KEPT_TURNS, TurnFeed

if TYPE_CHECKING:
    from psycopg import AsyncConnection

log = logging.getLogger("omoide.server.turns")

COMPONENT = "turn_feed"
CHANNEL = "omoide_turns"
KEPT_PER_PERSON = KEPT_TURNS
"""A person's newest turns kept in the table (as many as a page may ask for)."""
KEPT_DAYS = 7
"""Turns older than this are pruned."""
PRUNE_EVERY_S = 60.0
"""How often a worker prunes the old turns of everyone (a person's excess: every insert)."""
LISTEN_AGAIN_S = 1.0
"""The pause before the listener listens again after losing its connection."""
LISTEN_WAIT_S = 5.0
"""How long a stream opening waits for the listener before it goes on without it."""
PAUSE_AFTER_FAILURE_S = 5.0
"""After the database failed to take a turn, how long later turns stay on this worker
without trying it (no worker thread waits for a database that just did not answer)."""

MIGRATIONS = (
    Migration(1, "the console's recent turns, shared by the workers", """
CREATE TABLE recent_turns (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    person TEXT NOT NULL,
    at TIMESTAMPTZ NOT NULL DEFAULT now(),
    turn JSONB NOT NULL
);
CREATE INDEX recent_turns_person ON recent_turns (person, seq);
CREATE INDEX recent_turns_at ON recent_turns (at);
"""),
)

_ORDER_KEY = int.from_bytes(hashlib.sha256(b"omoide-turn-feed/order").digest()[:8], "big",
                            signed=True)
_LOCK = ("SELECT pg_advisory_xact_lock(%s)", (_ORDER_KEY,))
_INSERT = "INSERT INTO recent_turns (person, turn) VALUES (%s, %s::jsonb) RETURNING seq"
_TRIM = ("DELETE FROM recent_turns WHERE person = %s AND seq <= (SELECT seq FROM recent_turns"
         " WHERE person = %s ORDER BY seq DESC OFFSET %s LIMIT 1)")
_NOTIFY = f"SELECT pg_notify('{CHANNEL}', %s)"
_PRUNE = "DELETE FROM recent_turns WHERE at < now() - make_interval(days => %s)"
_AFTER_ALL = ("SELECT seq, turn::text FROM (SELECT seq, turn FROM recent_turns WHERE seq > %s"
              " ORDER BY seq DESC LIMIT %s) AS t ORDER BY seq")
_AFTER_ONE = ("SELECT seq, turn::text FROM (SELECT seq, turn FROM recent_turns WHERE seq > %s"
              " AND person = %s ORDER BY seq DESC LIMIT %s) AS t ORDER BY seq")
_NEWER = "SELECT seq, turn::text FROM recent_turns WHERE seq > %s ORDER BY seq LIMIT %s"
_LAST = "SELECT coalesce(max(seq), 0) FROM recent_turns"


class SharedTurnFeed(TurnFeed):
    """:class:`TurnFeed` whose turns are every worker's (see the module)."""

    def __init__(self, url: str, kept: int = KEPT_TURNS, *, pool_size: int = 2,
                 timeout_s: float = 3.0) -> None:
        super().__init__(kept)
        self.url = url
        self._db = LazyPool(url, COMPONENT, MIGRATIONS, size=pool_size, timeout_s=timeout_s,
                            name="omoide-turn-feed")
        self._writes: set[asyncio.Task[None]] = set()
        self._listener: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()
        self._read_to = 0
        """The last shared number handed to this worker's streams."""
        self._placed = False
        """Whether ``_read_to`` was placed by a listen (else the next starts at the end)."""
        self._pruned_at = -PRUNE_EVERY_S
        self._failed_at = -PAUSE_AFTER_FAILURE_S

    # -- writing -------------------------------------------------------------------------
    def publish(self, turn: dict[str, Any]) -> None:
        """Share ``turn`` (written in a worker thread; it reaches this worker's streams
        through the notification, as another worker's does)."""
        try:
            task = asyncio.get_running_loop().create_task(self._share(turn))
        except RuntimeError:   # no loop (a synchronous caller): this worker's ring only
            self._publish_here(turn)
            return
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _share(self, turn: dict[str, Any]) -> None:
        if time.monotonic() - self._failed_at < PAUSE_AFTER_FAILURE_S:
            self._publish_here(turn)
            return
        prune = time.monotonic() - self._pruned_at >= PRUNE_EVERY_S
        if prune:
            self._pruned_at = time.monotonic()
        try:
            await asyncio.to_thread(self._insert, turn, prune)
        except Exception as exc:  # noqa: BLE001 - this worker's streams still get it
            self._failed_at = time.monotonic()
            log.warning("the shared database did not take turn %s for the console feed"
                        " (%s: %s); shown on this worker only", turn.get("turn_id"),
                        type(exc).__name__, exc)
            self._publish_here(turn)

    async def written(self) -> None:
        """Until every turn published so far is written (or kept here)."""
        while self._writes:
            await asyncio.gather(*list(self._writes), return_exceptions=True)

    def _insert(self, turn: dict[str, Any], prune: bool) -> None:
        person = str(turn.get("user") or "")
        statements: list[tuple[str, Sequence[object]]] = [
            _LOCK, (_INSERT, (person, json.dumps(turn, ensure_ascii=False))),
            (_TRIM, (person, person, KEPT_PER_PERSON)), (_NOTIFY, (person,))]
        if prune:
            statements.insert(0, (_PRUNE, (KEPT_DAYS,)))
        self._db.run(*statements)

    def _publish_here(self, turn: dict[str, Any]) -> None:
        """The ring and this worker's streams, numbered after the last shared number."""
        self._seq = max(self._seq, self._read_to)
        super().publish(turn)

    def _deliver(self, turns: Sequence[dict[str, Any]]) -> None:
        for turn in turns:
            if turn["seq"] > self._read_to:
                self._read_to = turn["seq"]
                self._send(turn)

    # -- reading -------------------------------------------------------------------------
    async def recent_turns(self, user: str | None = None, limit: int = 50, after: int = 0,
                           ) -> list[dict[str, Any]]:
        if not limit:
            return []
        try:
            rows = await asyncio.to_thread(
                self._db.run, (_AFTER_ALL, (after, limit)) if user is None
                else (_AFTER_ONE, (after, user, limit)))
        except Exception as exc:  # noqa: BLE001 - this worker's ring instead
            log.warning("could not read the shared turn feed (%s: %s); this worker's"
                        " turns only", type(exc).__name__, exc)
            return self.recent(user, limit, after)
        return [_turn(seq, text) for seq, text in rows]

    async def open_stream(self) -> asyncio.Queue[dict[str, Any] | None]:
        queue = self.subscribe()
        if self._listener is None:
            self._listener = asyncio.create_task(self._listen_forever())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._listening.wait(), LISTEN_WAIT_S)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[dict[str, Any] | None]) -> None:
        """A stream ended; with the last one the listening connection closes (the next
        stream listens again from the newest turn then: no stream was waiting for the
        ones between)."""
        super().unsubscribe(queue)
        if not self._subscribers and self._listener is not None:
            self._listener.cancel()
            self._listener = None
            self._listening.clear()
            self._placed = False

    async def _listen_forever(self) -> None:
        while True:
            try:
                await self._listen_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - listened to again after a pause
                log.warning("the turn feed stopped listening to the other workers (%s);"
                            " again in %.1f s", exc, LISTEN_AGAIN_S)
            self._listening.clear()
            await asyncio.sleep(LISTEN_AGAIN_S)

    async def _listen_once(self) -> None:
        """LISTEN, then read what came after the last turn read (everything from now on
        at the first listen), then again at each burst of notifications."""
        await asyncio.to_thread(self._db.pool)       # the table exists (migrations)
        conn = await _connect(self.url)
        try:
            await conn.execute(f"LISTEN {CHANNEL}")
            if not self._placed:
                row = await (await conn.execute(_LAST)).fetchone()
                self._read_to = int(row[0]) if row else 0
                self._placed = True
            else:
                await self._read_newer(conn)
            self._listening.set()
            while True:
                async for _ in conn.notifies(timeout=0):     # the waiting ones, at once
                    pass
                await self._read_newer(conn)
                async for _ in conn.notifies(stop_after=1):  # until the next one
                    pass
        finally:
            with contextlib.suppress(Exception):
                await conn.close()

    async def _read_newer(self, conn: AsyncConnection[Any]) -> None:
        while True:
            rows = await (await conn.execute(_NEWER, (self._read_to, KEPT_TURNS))).fetchall()
            self._deliver([_turn(seq, text) for seq, text in rows])
            if len(rows) < KEPT_TURNS:
                return

    async def close(self) -> None:
        await self.written()
        if self._listener is not None:
            self._listener.cancel()
            await asyncio.gather(self._listener, return_exceptions=True)
            self._listener = None
        await asyncio.to_thread(self._db.close)


def _turn(seq: Any, text: Any) -> dict[str, Any]:
    turn: dict[str, Any] = json.loads(str(text))
    return {**turn, "seq": int(seq)}


async def _connect(url: str) -> AsyncConnection[Any]:
    from psycopg import AsyncConnection

    return await AsyncConnection.connect(url, autocommit=True,
                                         application_name="omoide-turn-feed-listen",
                                         connect_timeout=5, keepalives=1, keepalives_idle=10,
                                         keepalives_interval=5, keepalives_count=3)


def turn_feed_for(url: str | None) -> TurnFeed:
    """The feed of this worker: shared with ``database.url`` naming PostgreSQL, else the
    worker's own ring."""
    return SharedTurnFeed(str(url)) if is_postgresql_url(url) else TurnFeed()
