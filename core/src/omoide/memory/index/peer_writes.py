"""Other workers' writes, brought into this worker's cached indexes (``database.url``).

With several workers on one PostgreSQL database and one store server, a person's
memories may be written on any worker while their index is cached on another. The
memory engine gets a :class:`PeerWrites` when ``database.url`` names PostgreSQL (and
none without: a single process needs none). It is the engine's one seam here:

- after each store write or forget, the engine calls :meth:`PeerWrites.announce` with
  the person and the memory ids (:mod:`.peer_channel`: a version per person and a
  ``NOTIFY``, one statement);
- a listening connection receives every worker's announcements; another worker's
  change is applied here: the memories stored are fetched from the store by id and
  written into the index as this worker's own writes are (the engine's ``written``
  callback: a ready index, a build under way, or the saved copy of a person whose index
  is not in memory here), the ones forgotten are removed (``forgotten``);
- a person whose changes were missed (the connection dropped: found by comparing
  versions when it listens again, and every ``catch_up_s``) or announced without ids
  (too many) is *caught up*: their records are read from the store and every memory
  that differs from the index is written, every one the store no longer has removed
  (for a person whose index is not in memory here, its saved copies are dropped
  instead: built from the store when next needed).

- the versions seen, every change of them applied, are kept in the worker's data dir
  (``peer_versions.json``, at each version check and at stop); a worker started again
  compares them with the database and drops the saved indexes of the people changed
  while it was down (their next turn builds from the store). Without the file (a first
  start, or a stop with changes still being applied) the saved indexes are trusted as
  before: the shared store's count check (``memory.index.refresh_s``) looks at each
  once loaded.

What is not covered: ``omoide memory reembed`` (one-off, it resets the whole store:
restart the workers after it, as the command says for a running server).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omoide.components import VectorStore
from omoide.memory.index.peer_channel import (
    ANNOUNCE,
    CHANNEL,
    COMPONENT,
    MIGRATIONS,
    VERSIONS,
    VERSIONS_SINCE,
    PeerChange,
    SeenVersions,
    announcement,
    decode,
)
from omoide.memory.store_payload import from_payload
from omoide.private_files import open_private
from omoide.types import FloatArray, Memory

if TYPE_CHECKING:
    from psycopg import AsyncConnection

    from omoide.memory.index.cache import IndexCache

log = logging.getLogger("omoide.memory.index")

TALK_PAUSE_S = 5.0
"""After the database failed to take an announcement, how long later writes keep theirs
for the listener to send (once it listens again, or at its next version check) rather
than wait for the database themselves."""

Written = Callable[[str, list[tuple[Memory, FloatArray | None]]], Awaitable[None]]
Forgotten = Callable[[str, Sequence[str]], Awaitable[None]]


class PeerWrites:
    """This worker's side of the channel: announcing its writes, applying others'."""

    def __init__(self, url: str, *, store: VectorStore, indexes: IndexCache,
                 written: Written, forgotten: Forgotten, catch_up_s: float = 30.0,
                 reconnect_s: float = 1.0, versions_path: Path | None = None) -> None:
        """``versions_path``: where the versions seen and applied are kept between starts
        (the worker's data dir), so that the people another worker changed while this one
        was down are caught up when it starts again."""
        self.url = url
        self.versions_path = versions_path
        self.worker = uuid.uuid4().hex[:12]
        self.store = store
        self.indexes = indexes
        self._written = written
        self._forgotten = forgotten
        self.catch_up_s = catch_up_s
        self.reconnect_s = reconnect_s
        """How long the listener waits before listening again after losing its
        connection."""
        self._seen = SeenVersions()
        self._changes: asyncio.Queue[PeerChange | str] = asyncio.Queue()
        """Changes to apply, in arrival order (a str: a person to catch up)."""
        self._catch_ups_queued: set[str] = set()
        self._applying = False
        self._talk: AsyncConnection[Any] | None = None
        self._talk_lock = asyncio.Lock()
        self._talk_failed_at = -math.inf
        self._tasks: list[asyncio.Task[None]] = []
        self._listening = asyncio.Event()
        self._first_listen = True
        self.applied = 0
        """Other workers' changes applied so far."""
        self.caught_up = 0
        """People caught up from the store so far (missed or unnamed changes)."""
        self.unannounced: dict[str, tuple[set[str], set[str]]] = {}
        """Changes not announced yet (the database did not answer): sent with the next."""

    # -- lifetime ----------------------------------------------------------------------
    async def start(self, wait_s: float = 10.0) -> None:
        """Create the version table if needed and start listening (waiting up to
        ``wait_s`` for it; past that the listener keeps trying in the background)."""
        self._tasks = [asyncio.create_task(self._listen_forever()),
                       asyncio.create_task(self._apply_forever())]
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._listening.wait(), wait_s)
        if not self._listening.is_set():
            log.warning("memory: not listening to other workers' writes yet (the database"
                        " does not answer); trying again in the background")

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._tasks:
            self._keep_versions()
        self._tasks = []
        if self._talk is not None:
            await self._talk.close()
            self._talk = None

    @property
    def listening(self) -> bool:
        """Whether the listening connection is up now."""
        return self._listening.is_set()

    # -- announcing ----------------------------------------------------------------------
    async def announce(self, person: str, stored: Sequence[str] = (),
                       forgotten: Sequence[str] = ()) -> None:
        """Tell every worker that ``person``'s memories ``stored`` were written and
        ``forgotten`` deleted (call once the store holds the change). Never raises: a
        change the database does not take now is kept and sent with the next."""
        waiting = self.unannounced.pop(person, (set(), set()))
        # the later change of an id wins (stored again after a forget, or forgotten)
        stored_all = sorted((waiting[0] - set(forgotten)) | set(stored))
        forgotten_all = sorted((waiting[1] - set(stored)) | set(forgotten))
        if time.monotonic() - self._talk_failed_at < TALK_PAUSE_S:
            # the database did not answer just now: no write waits for it again so soon
            self.unannounced[person] = (set(stored_all), set(forgotten_all))
            return
        try:
            async with self._talk_lock:
                conn = await self._talking()
                await conn.execute(ANNOUNCE, announcement(person, self.worker, stored_all,
                                                          forgotten_all))
        except Exception as exc:  # noqa: BLE001 - the write itself is done; sent later
            log.warning("memory: could not announce %s's change to other workers (%s);"
                        " sent with the next", person, exc)
            await self._drop_talk()
            self._talk_failed_at = time.monotonic()
            self.unannounced[person] = (set(stored_all), set(forgotten_all))

    async def _talking(self) -> AsyncConnection[Any]:
        """The connection for announcing and comparing versions, opened if needed."""
        if self._talk is None or self._talk.closed:
            self._talk = await _connect(self.url, "omoide-peer-writes", timeout_s=2)
        return self._talk

    async def _drop_talk(self) -> None:
        if self._talk is not None:
            with contextlib.suppress(Exception):
                await self._talk.close()
            self._talk = None

    # -- listening -----------------------------------------------------------------------
    async def _listen_forever(self) -> None:
        while True:
            try:
                await self._listen_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - listened to again after a pause
                log.warning("memory: listening to other workers' writes stopped (%s);"
                            " again in %.1f s", exc, self.reconnect_s)
            self._listening.clear()
            await asyncio.sleep(self.reconnect_s)

    async def _listen_once(self) -> None:
        """One listening connection, until it fails: LISTEN first, then compare every
        version (what was missed before it listened is caught up), then each
        notification as it comes, comparing versions again every ``catch_up_s``."""
        conn = await _connect(self.url, f"omoide-peer-listen-{self.worker}")
        try:
            if self._first_listen:
                await _migrate(self.url)
            await conn.execute(f"LISTEN {CHANNEL}")
            await self._compare_versions(conn, patient=False)
            self._listening.set()
            self._talk_failed_at = -math.inf
            await self._flush_unannounced()
            while True:
                async for note in conn.notifies(timeout=self.catch_up_s):
                    self._arrived(note.payload)
                await self._flush_unannounced()
                async with self._talk_lock:
                    await self._compare_versions(await self._talking(), patient=True)
                self._keep_versions()
        finally:
            with contextlib.suppress(Exception):
                await conn.close()

    async def _compare_versions(self, conn: AsyncConnection[Any], *, patient: bool) -> None:
        cursor = await (conn.execute(VERSIONS_SINCE, (3 * self.catch_up_s,)) if patient
                        else conn.execute(VERSIONS))
        rows = [(str(p), int(v)) for p, v in await cursor.fetchall()]
        if self._first_listen:
            self._first_listen = False
            kept = self._kept_versions()
            if kept is None:
                self._seen.record(rows)  # nothing known of before: as the saved indexes are
                return
            self._seen.record(kept.items())  # what was applied before this start
        for person in self._seen.behind(rows, patient=patient):
            self._catch_up_later(person)

    def _catch_up_later(self, person: str) -> None:
        """Queue a catch-up of ``person`` unless one is queued and not begun yet (a large
        import announces each of its batches without ids: one read of the store after
        the last of them is enough)."""
        if person not in self._catch_ups_queued:
            self._catch_ups_queued.add(person)
            self._changes.put_nowait(person)

    def _kept_versions(self) -> dict[str, int] | None:
        """The versions :meth:`_keep_versions` kept at the last stop (or check), if any."""
        if self.versions_path is None or not self.versions_path.exists():
            return None
        try:
            kept = json.loads(self.versions_path.read_text(encoding="utf-8"))
            return {str(p): int(v) for p, v in kept.items()}
        except (OSError, ValueError, AttributeError) as exc:
            log.warning("memory: the versions kept in %s cannot be read (%s)",
                        self.versions_path, exc)
            return None

    def _keep_versions(self) -> None:
        """Keep the versions seen, when every change seen was applied (else the file is
        removed: a next start cannot tell what was applied)."""
        path = self.versions_path
        if path is None or self._first_listen:
            return  # never listened: what the file says is still what was applied
        try:
            if self._applying or not self._changes.empty():
                path.unlink(missing_ok=True)
                return
            tmp = path.with_suffix(".tmp")
            with open_private(tmp, "w") as f:
                json.dump(self._seen.in_order(), f)
            os.replace(tmp, path)
        except OSError as exc:
            log.warning("memory: keeping the versions seen in %s failed: %s", path, exc)

    def _arrived(self, payload: str) -> None:
        change = decode(payload)
        if change is None:
            log.warning("memory: an announcement this omoide cannot read: %.200s", payload)
            return
        self._seen.arrived(change.person, change.version)
        if change.worker == self.worker:
            return
        if change.stored is None:
            self._catch_up_later(change.person)
        else:
            self._changes.put_nowait(change)

    async def _flush_unannounced(self) -> None:
        for person in list(self.unannounced):
            await self.announce(person)

    # -- applying ------------------------------------------------------------------------
    async def _apply_forever(self) -> None:
        while True:
            change = await self._changes.get()
            self._applying = True
            try:
                if isinstance(change, str):
                    self._catch_ups_queued.discard(change)
                    await self.catch_up(change)
                else:
                    await self._apply(change)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - that person is caught up instead
                person = change if isinstance(change, str) else change.person
                log.warning("memory: applying another worker's change of %s failed (%s);"
                            " their index is dropped", person, exc)
                self.indexes.drop(person)
            self._applying = False  # not when cancelled mid-way: then it was not applied

    async def _apply(self, change: PeerChange) -> None:
        person = change.person
        if change.stored:
            records = await self.store.get(person, list(change.stored))
            if records:
                await self._written(person, [(from_payload(r.id, r.payload), r.vector)
                                             for r in records])
        if change.forgotten:
            await self._forgotten(person, list(change.forgotten))
        self.applied += 1

    async def catch_up(self, person: str) -> None:
        """Bring ``person``'s cached index to what the store holds: every memory that
        differs written, every one the store no longer has removed."""
        self.caught_up += 1
        if not self.indexes.holds(person):
            self.indexes.unsave(person)
            return
        index = await self.indexes.wait(person, None)
        if index is None:
            return
        records = await self.store.scroll(person)
        held = {m.id: m for m in index.memories()}
        changed: list[tuple[Memory, FloatArray | None]] = []
        for record in records:
            memory = from_payload(record.id, record.payload)
            if held.pop(record.id, None) != memory:
                changed.append((memory, record.vector))
        if changed:
            await self._written(person, changed)
        if held:
            await self._forgotten(person, list(held))


async def _connect(url: str, name: str, timeout_s: int = 5) -> AsyncConnection[Any]:
    from psycopg import AsyncConnection

    return await AsyncConnection.connect(url, autocommit=True, application_name=name,
                                         connect_timeout=timeout_s, keepalives=1,
                                         keepalives_idle=10, keepalives_interval=5,
                                         keepalives_count=3)


async def _migrate(url: str) -> None:
    """The version table (:mod:`omoide.database.migrations` runs on a sync connection:
    a short one in a thread)."""
    def migrate() -> None:
        import psycopg

        from omoide.database.migrations import apply_migrations

        with psycopg.connect(url, autocommit=True) as sync_conn:
            apply_migrations(sync_conn, COMPONENT, MIGRATIONS)

    await asyncio.to_thread(migrate)
