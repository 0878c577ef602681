"""Index builds: a person's index built from the store a page at a time, or loaded.

A person's :class:`~omoide.memory.index.person_index.UserIndex` is built the first time
they are recalled, not at start: a background task reads their records with
:meth:`VectorStore.scroll_page` (each page one bounded store call), then analyses them a
page at a time on the cache's worker thread, so no read-path call ever waits for a whole
scan and the event loop stays free. A build first tries the saved copy (a few
milliseconds, not behind the builds holding the slots); ``concurrent_builds`` bounds the
builds from the store, and a freed slot goes to a build a turn waits for, the newest
first (:mod:`.build_scheduling`). Writes made while a build runs are remembered and win
over the pages the build reads later.

An index that alone would exceed the memory budget is not built (that person gets
dense recall only, and the log says which setting to raise).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from omoide import long_lived
from omoide.components import VectorStore
from omoide.memory.config import IndexSettings
from omoide.memory.index.build_scheduling import BuildSlots
from omoide.memory.index.cache_worker import CacheWorker
from omoide.memory.index.dense_fallback import DenseFallback
from omoide.memory.index.dense_snapshot import DenseSnapshot
from omoide.memory.index.dense_snapshot_files import Write as _Write
from omoide.memory.index.foreground_recalls import Foreground
from omoide.memory.index.lru import ReadyIndexes
from omoide.memory.index.persistence import IndexPersistence
from omoide.memory.index.person_index import UserIndex
from omoide.memory.index.shared_store_refresh import SharedStoreRefresh
from omoide.memory.store_payload import from_payload
from omoide.types import Priority, VectorRecord

log = logging.getLogger("omoide.memory.index")

SETTLE_EVERY = 5_000
"""Memories a build analyses between two :func:`omoide.long_lived.settle` calls (and one
when it is installed): a large build otherwise sets off full garbage collections over
everything it made so far, each longer than the last."""


@dataclass
class Build:
    """One person's build under way."""

    task: asyncio.Task[UserIndex | None]
    priority: Priority
    pending: dict[str, _Write] = field(default_factory=dict)
    """Writes (None: a forget) made while it runs, applied at its end."""
    has_slot: bool = False
    renewal: bool = False
    """Started to renew an outdated saved index (see :meth:`IndexCache.warm`)."""
    loading: asyncio.Future[UserIndex | None] | None = None
    """The load of the saved copy: the index, or None when there is none to load."""


@dataclass(frozen=True)
class BuildParts:
    """The parts of the cache a build reads and fills."""

    store: VectorStore
    timezone: str
    settings: IndexSettings
    worker: CacheWorker
    ready: ReadyIndexes
    dense: DenseFallback
    persistence: IndexPersistence
    refresh: SharedStoreRefresh
    foreground: Foreground
    prepare: Callable[[UserIndex], None] | None = None
    """Work on each new index (built or loaded) on the worker before any reader sees it."""


class IndexBuilds:
    """The builds under way, one per person, and the people too large to index."""

    def __init__(self, parts: BuildParts) -> None:
        self._p = parts
        self.under_way: dict[str, Build] = {}
        self.too_big: dict[str, float] = {}
        self.slots = BuildSlots(parts.settings.concurrent_builds)
        self.built = 0
        """Indexes built from the store so far."""
        self.loaded = 0
        """Indexes loaded from their saved copy so far."""

    def get(self, user: str) -> Build | None:
        return self.under_way.get(user)

    def __contains__(self, user: str) -> bool:
        return user in self.under_way

    def tasks(self) -> list[asyncio.Task[UserIndex | None]]:
        return [b.task for b in self.under_way.values()]

    def cancel_all(self) -> None:
        """Cancel every build and forget who was too large."""
        for build in self.under_way.values():
            build.task.cancel()
        self.under_way.clear()
        self.too_big.clear()

    def start(self, user: str, priority: Priority, refresh: bool = False,
              renewal: bool = False) -> Build | None:
        """``user``'s build, started unless under way (then raised to ``priority``);
        None when they were too large to index less than ``refresh_s`` ago."""
        build = self.under_way.get(user)
        if build is not None:
            if priority < build.priority:
                build.priority = priority  # someone is waiting now: its pages go first
            return build
        too_big_at = self.too_big.get(user)
        if too_big_at is not None and time.monotonic() - too_big_at < self._p.refresh.refresh_s:
            return None
        task = asyncio.get_running_loop().create_task(self._build(user, refresh))
        build = Build(task, priority, renewal=renewal)
        self.under_way[user] = build
        task.add_done_callback(lambda t: self._finished(user, build, t))
        return build

    def _finished(self, user: str, build: Build, task: asyncio.Task[UserIndex | None]) -> None:
        if self.under_way.get(user) is build:
            del self.under_way[user]
            self._p.dense.done(user)
        if not task.cancelled() and task.exception() is not None:
            log.warning("building the index of %s failed: %s", user, task.exception())

    async def _build(self, user: str, refresh: bool) -> UserIndex | None:
        build = self.under_way[user]
        if not refresh:
            # a saved copy loads in a few ms: not behind the builds holding the slots
            loaded = await self._load_announced(user, build)
            if loaded is not None:
                return loaded
        elif user in self._p.ready:
            # a check for other processes' writes, which nobody's turn waits for: after a
            # restart every loaded index is due for one, and on a Chroma server sharing
            # the machine each count costs it 60-210 ms of CPU (128 of them right after a
            # restart slowed the turns of the people asking: turn p95 ÷ settled 2.46)
            await self._p.refresh.until_quiet(self._p.refresh.refresh_s)
        async with self.slots.held(lambda: build.priority):
            build.has_slot = True
            current = self._p.ready.get(user)
            if refresh and current is not None and \
                    await self._p.refresh.unchanged(user, current):
                return current  # nothing was added or deleted elsewhere
            if not refresh:
                await self._load_snapshot(user, build)
            started = time.perf_counter()
            records = await self._records(user, build, first=current is None)
            if records is None:
                return None
            idx = await self._analysed(user, build, records)
            self._install_built(user, idx, build)
            log.debug("index of %s: %d memories in %.0f ms", user, len(idx),
                      (time.perf_counter() - started) * 1000)
            return idx

    async def _records(self, user: str, build: Build, first: bool) -> list[VectorRecord] | None:
        """``user``'s records from the store; for a ``first`` build (no index ready) they
        also answer dense recall meanwhile, and are saved for a large person."""
        with self._p.dense.coming(user) if first else contextlib.nullcontext():
            records = await self._read(user)
            if records is None:
                return None
            if first:  # its turns get dense recall from these meanwhile
                dense = await self._p.worker.run(
                    functools.partial(DenseSnapshot, records), build.priority) \
                    if len(records) > self._p.settings.page_size else DenseSnapshot(records)
                self._p.dense.keep(user, dense)
                self._p.persistence.keep_snapshot(user, build.pending, dense)
        return records

    async def _analysed(self, user: str, build: Build,
                        records: list[VectorRecord]) -> UserIndex:
        """A new index of ``records`` (page by page on the worker), prepared."""
        idx = UserIndex(user, self._p.timezone)
        size = self._p.settings.page_size
        for at in range(0, len(records), size):
            await self._p.worker.run(
                functools.partial(_add_page, idx, records[at:at + size],
                                  frozenset(build.pending), self._p.foreground),
                build.priority)
            if (at + size) % SETTLE_EVERY < size:
                long_lived.settle(f"the index of {user}, {len(idx)} memories so far")
        await self._prepared(idx, build)
        return idx

    def _install_built(self, user: str, idx: UserIndex, build: Build) -> None:
        """Apply the writes seen meanwhile and install ``idx`` (no await in here: no
        write can slip between), then save it in the background."""
        _apply(idx, build.pending)
        if build.renewal and build.priority is Priority.BATCH:
            self._install_if_room(user, idx)  # nobody asked for it: saved is enough
        else:
            self.install(user, idx)
        self.built += 1
        if self._p.persistence.saved is not None:
            self._p.worker.in_background(self._p.persistence.save(user, idx))

    async def _read(self, user: str) -> list[VectorRecord] | None:
        """Every record of ``user``, a page at a time; None when their index would not fit
        the budget (logged)."""
        ready, settings = self._p.ready, self._p.settings
        records: list[VectorRecord] = []
        cursor: str | None = None
        while True:
            page = await self._p.store.scroll_page(user, cursor, settings.page_size)
            records.extend(page.records)
            if records:
                ready.note_vector_size(int(records[0].vector.nbytes))
            if ready.estimate(len(records)) > ready.budget_bytes:
                self.too_big[user] = time.monotonic()
                ready.drop(user)
                log.warning(
                    "the index of %s needs more than memory.index.budget_mb (%.0f MB) on"
                    " its own: %s gets dense recall from the store only; raise the budget"
                    " to index them", user, settings.budget_mb, user)
                return None
            if page.cursor is None:
                return records
            if cursor is None:  # more than one page: dense recall searches the store
                self._p.dense.no_longer_coming(user)
            cursor = page.cursor

    async def _load_announced(self, user: str, build: Build) -> UserIndex | None:
        """:meth:`_load`, with ``build.loading`` telling recalls when it is done."""
        loading = build.loading = asyncio.get_running_loop().create_future()
        loaded: UserIndex | None = None
        try:
            loaded = await self._load(user, build)
        finally:
            loading.set_result(loaded)
        return loaded

    async def _load(self, user: str, build: Build) -> UserIndex | None:
        """``user``'s saved index, installed, if it is current for the store.

        Over a store other processes write, the copy is used at once and checked against
        the store's count right after, in the background (the next :meth:`IndexCache.peek`
        starts that refresh): a count on a Chroma server takes about 90 ms, and 32 of
        them at once kept first turns from their index past the recall budget."""
        saved = self._p.persistence.saved
        if saved is None:
            return None
        loaded = await self._p.worker.run(functools.partial(saved.load, user), build.priority)
        if loaded is None:
            return None
        idx = loaded[0]
        await self._prepared(idx, build)
        _apply(idx, build.pending)
        if build.pending:
            self._p.persistence.mark_dirty(user)
        self.install(user, idx)
        self._p.refresh.due_now(user)  # over a shared store: checked at the next read
        self.loaded += 1
        return idx

    async def _load_snapshot(self, user: str, build: Build) -> None:
        """Answer ``user``'s dense recall from their saved snapshot while the store is
        read (a large person only has one)."""
        snapshots = self._p.persistence.snapshots
        if snapshots is None or not snapshots.has(user):
            return
        with self._p.dense.coming(user):
            snap = await self._p.worker.run(functools.partial(snapshots.load, user),
                                            build.priority)
            if snap is None:
                return
            for memory_id, write in build.pending.items():
                if write is None:
                    snap.forget(memory_id)
            self._p.dense.keep_unless_read(user, snap)

    async def _prepared(self, idx: UserIndex, build: Build) -> None:
        if self._p.prepare is not None:
            await self._p.worker.run(functools.partial(self._p.prepare, idx), build.priority)

    def install(self, user: str, idx: UserIndex) -> None:
        """Make ``idx`` ``user``'s ready index, current as of now."""
        self.too_big.pop(user, None)
        self._p.ready.install(user, idx)
        self._p.refresh.checked_now(user)

    def _install_if_room(self, user: str, idx: UserIndex) -> None:
        """Keep ``idx`` as the least recently used index, if the budget has room for it
        without dropping another."""
        if self._p.ready.has_room_for(idx):
            self.install(user, idx)
            self._p.ready.least_recently_used(user)


def _apply(idx: UserIndex, pending: dict[str, _Write]) -> None:
    """Writes seen while ``idx`` was being built or loaded."""
    for memory_id, write in pending.items():
        if write is None:
            idx.remove(memory_id)
        else:
            idx.add(*write)


def _add_page(idx: UserIndex, records: Sequence[VectorRecord], skip: frozenset[str],
              foreground: Foreground) -> None:
    """Analyse one page into ``idx`` (on the cache's worker thread; ``idx`` is not yet
    visible to readers). Records written or forgotten during the build are skipped:
    the build applies those writes itself at the end.

    Analysis is pure Python and holds the GIL: every ~2 ms the thread gives it up
    (``sleep(0)``), so a busy event loop answering people runs first and builds use the
    time it leaves (otherwise the two would share the interpreter turn about); a large
    build also pauses while recalls run (see :mod:`omoide.memory.index.foreground_recalls`).
    """
    yielded = time.perf_counter()
    for record in records:
        if record.id not in skip:
            idx.add(from_payload(record.id, record.payload), record.vector)
            if time.perf_counter() - yielded > 0.002:
                time.sleep(0)
                foreground.step_aside(len(idx))
                yielded = time.perf_counter()
