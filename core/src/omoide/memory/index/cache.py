"""Per-person indexes: built from the store a page at a time, kept in a bounded LRU.

A person's :class:`~omoide.memory.index.person_index.UserIndex` (lexical, temporal, cached vectors)
is built the first time they are recalled, not at start: a background task reads
their records with :meth:`VectorStore.scroll_page` (each page one bounded store call),
then analyses them a page at a time on the cache's own worker thread, so no read-path
call ever waits for a whole scan and the event loop stays free. Until the index is
ready, the engine answers from a dense search: of the person's records once the build
has read them (:mod:`omoide.memory.index.dense_snapshot`; a recall waits for a read under way
rather than search the store beside it), else of the store.

Writes made through this process reach the index at once: a ready index is updated
in place (on the event loop, where it is read), and writes made while a build runs
are remembered and win over the pages that the build reads later. A store that other
processes write (:attr:`VectorStore.shared`) has its people's indexes rebuilt in the
background when they are older than ``refresh_s`` and the store's count differs (that
count waits, up to another ``refresh_s``, until no recall runs).

Memory is bounded by ``budget_mb``: an estimate per memory (:data:`ENTRY_BYTES` plus
its vector) decides when the least recently used indexes are dropped; an index that
alone would exceed the budget is not kept (that person gets dense recall only, and
the log says which setting to raise).

With an :class:`~omoide.memory.index.saved_indexes.IndexStore`, indexes also outlive the
process: a build first tries the saved copy, a fresh build is saved at once, and
indexes changed by writes are saved every ``save_every_s``, when dropped and at stop.
Every write or forget of this process deletes the person's saved copy at once (it is
saved again later): a saved copy is never older than the person's last write, even
after a crash, so for a store only this process opens it is used as it is, without
touching the store. For a store other processes write, it is used at once too and
checked right after in the background: rebuilt when the store holds a different
number of the person's memories. Loading a saved copy takes a few milliseconds and
does not wait for the builds in progress (``concurrent_builds`` bounds those; a freed
slot goes to a build a turn waits for, the newest first: :mod:`.build_slots`). Writes
never wait for a save: a copy pickled while the index changed is not written (a
generation count per person tells), and is tried again later.

A person too large for a saved index (``keep_max_memories``) has the records read for
their build kept instead (:mod:`omoide.memory.index.dense_snapshot_files`, with a log of the writes
since; a forget deletes it, like the saved index): their next build after a start
loads those first, so their turns get dense recall within a second while the store
is opened and read again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from omoide import long_lived
from omoide.blocking import PriorityRunner
from omoide.components import VectorStore
from omoide.memory.index.build_scheduling import BuildSlots
from omoide.memory.config import IndexSettings
from omoide.memory.index.dense_snapshot_files import SavedSnapshots
from omoide.memory.index.dense_snapshot_files import Write as _Write
from omoide.memory.index.dense_snapshot import DenseSnapshot
from omoide.memory.index.foreground_recalls import Foreground
from omoide.memory.index.person_index import UserIndex
from omoide.memory.index.saved_indexes import IndexStore
from omoide.memory.store_payload import from_payload
from omoide.types import FloatArray, Memory, Priority, VectorHit, VectorRecord

log = logging.getLogger("omoide.memory.index")

ENTRY_BYTES = 9_300
"""Memory one indexed memory takes besides its vector: the process's RSS grew by 9.3 KB
per memory (vector included) indexing 20,000 synthetic Japanese memories; the dense
channel later stacks the vectors once more, hence a vector's worth on top."""

RENEW_PAUSE_S = 0.5
"""How often the renewal of outdated saved indexes, and the check of a ready index against
a shared store, look again whether recalls still run."""

SETTLE_EVERY = 5_000
"""Memories a build analyses between two :func:`omoide.long_lived.settle` calls (and one
when it is installed): a large build otherwise sets off full garbage collections over
everything it made so far, each longer than the last."""

@dataclass
class _Build:
    task: asyncio.Task[UserIndex | None]
    priority: Priority
    pending: dict[str, _Write] = field(default_factory=dict)
    has_slot: bool = False
    renewal: bool = False
    """Started to renew an outdated saved index (see :meth:`IndexCache.warm`)."""
    loading: asyncio.Future[UserIndex | None] | None = None
    """The load of the saved copy: the index, or None when there is none to load."""


@dataclass(frozen=True)
class CacheStats:
    """What the cache holds (for benchmarks and ``/healthz``-style reports)."""

    people: int
    memories: int
    estimated_mb: float
    building: int
    too_big: int
    built: int
    """Indexes built from the store so far."""
    loaded: int
    """Indexes loaded from their saved copy so far."""


class IndexCache:
    """The per-person indexes of one memory engine (see the module docstring)."""

    def __init__(self, store: VectorStore, timezone: str, settings: IndexSettings,
                 refresh_s: float, saved: IndexStore | None = None,
                 save_every_s: float = 30.0,
                 prepare: Callable[[UserIndex], None] | None = None,
                 snapshots: SavedSnapshots | None = None) -> None:
        """``prepare``: work on each new index (built or loaded) on the cache's worker
        before any reader sees it (the engine makes the profile block there).
        ``snapshots``: where the records of people too large for ``saved`` are kept
        (used only with ``saved``)."""
        self.store = store
        self.timezone = timezone
        self.settings = settings
        self.refresh_s = refresh_s
        self._ready: OrderedDict[str, UserIndex] = OrderedDict()
        self._checked_at: dict[str, float] = {}
        self._bytes: dict[str, int] = {}
        self._total_bytes = 0
        self._vector_bytes = 0
        self._builds: dict[str, _Build] = {}
        self._dense: dict[str, DenseSnapshot] = {}
        """Large people's records while their index is analysed (see dense_snapshot)."""
        self._dense_coming: dict[str, asyncio.Future[None]] = {}
        """People whose records are being read from the store or loaded from their saved
        snapshot (see dense_saved), done when they are in ``_dense``."""
        self._too_big: dict[str, float] = {}
        self._slots = BuildSlots(settings.concurrent_builds)
        self._awaited: dict[str, int] = {}
        """Recalls waiting for each person's index now (see :meth:`awaited`)."""
        self._runner = PriorityRunner("memory-index")
        self._saved = saved
        self._snapshots = snapshots if saved is not None else None
        self._prepare = prepare
        self.foreground = Foreground()
        """Recalls under way: large builds step aside for them (mark each recall)."""
        self.save_every_s = save_every_s
        self._dirty: set[str] = set()
        self._generation: dict[str, int] = {}
        """Changes per person's ready index (read by the saving thread)."""
        self._saver: asyncio.Task[None] | None = None
        self._warmer: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[None]] = set()
        self.builds_done = 0
        self.loads_done = 0

    @property
    def budget_bytes(self) -> int:
        return int(self.settings.budget_mb * 1024 * 1024)

    # -- reading ---------------------------------------------------------------------
    def peek(self, user: str) -> UserIndex | None:
        """``user``'s index if it is ready (marking it recently used), else None.

        Starts a background refresh when the store is shared and the index is stale.
        """
        idx = self._ready.get(user)
        if idx is None:
            return None
        self._ready.move_to_end(user)
        if self.store.shared and user not in self._builds and \
                time.monotonic() - self._checked_at.get(user, -math.inf) > self.refresh_s:
            self._checked_at[user] = time.monotonic()
            self._start(user, Priority.BATCH, refresh=True)
        return idx

    def dense(self, user: str) -> DenseSnapshot | None:
        """``user``'s records as read for an index being built, for dense recall until
        the index is ready; None otherwise."""
        return self._dense.get(user)

    def analysing_large(self, user: str) -> bool:
        """Whether ``user``'s records are read and their index, of more than one page, is
        being analysed: seconds away, so a recall should not wait for it."""
        dense = self._dense.get(user)
        return dense is not None and len(dense) > self.settings.page_size

    def queued(self, user: str) -> bool:
        """Whether ``user``'s index build waits, or is about to wait, for a slot while
        others build: under load, more than one build away from ready."""
        build = self._builds.get(user)
        return build is not None and not build.has_slot and self._slots.full

    async def dense_loaded(self, user: str) -> DenseSnapshot | None:
        """:meth:`dense`, after waiting for ``user``'s records if they are being loaded
        from their saved snapshot or read from the store in one page: a read already
        under way ends sooner than a store search queued behind it (about 100 ms against
        300-650 ms on a Chroma server; 7-11 s against the same for a 100k person's first
        Qdrant local read). A read that needs more pages is not waited for past its
        first: a search queued behind one page ends sooner than the rest of the read."""
        dense = self._dense.get(user)
        coming = self._dense_coming.get(user)
        if dense is None and coming is not None:
            await asyncio.shield(coming)
            dense = self._dense.get(user)
        return dense

    def request(self, user: str) -> None:
        """Make sure ``user``'s index is ready or being built (returns at once)."""
        if self.peek(user) is None:
            self._start(user, Priority.INTERACTIVE)

    async def wait(self, user: str, timeout_s: float | None) -> UserIndex | None:
        """``user``'s index, waiting at most ``timeout_s`` (None: until it is built).

        None when it is not ready in time, does not fit the budget, or its build failed
        (the reason is logged); the build goes on in the background after a timeout.
        """
        idx = self.peek(user)
        if idx is not None:
            return idx
        build = self._start(user, Priority.INTERACTIVE)
        if build is None:
            return None
        try:
            return await asyncio.wait_for(asyncio.shield(build.task), timeout_s)
        except TimeoutError:
            return None
        except asyncio.CancelledError:
            if build.task.cancelled():
                return None
            raise
        except Exception:  # noqa: BLE001 - logged by the build; the caller degrades
            return None

    async def built(self, user: str) -> UserIndex | None:
        """``user``'s index when ready, else once its saved copy, being loaded now, is
        (None when it is not being loaded, or there is none). Starts nothing and leaves
        priorities alone: for a recall already answering from the store, which takes the
        index if it comes first. A load takes milliseconds once it runs; a build from
        the store takes tens of milliseconds or more, and a recall racing builds so
        made turns slower right after ready (turn p95 ÷ settled, median of 10 runs
        each: 2.16 against 1.88)."""
        idx = self._ready.get(user)
        if idx is not None:
            return idx
        build = self._builds.get(user)
        loading = build.loading if build is not None else None
        if loading is None or loading.done():
            return None
        return await asyncio.shield(loading)

    @contextlib.contextmanager
    def awaited(self, user: str) -> Iterator[None]:
        """Mark a recall as waiting for ``user``'s index for the block (it may call
        :meth:`wait` more than once meanwhile). When the last recall waiting stops before
        the build got its slot, the build drops to batch priority: it still runs, and is
        promoted again by their next turn, but under load the slots go first to people
        whose turn still waits (see :mod:`omoide.memory.index.build_scheduling`)."""
        self._awaited[user] = self._awaited.get(user, 0) + 1
        try:
            yield
        finally:
            left = self._awaited[user] - 1
            if left:
                self._awaited[user] = left
            else:
                del self._awaited[user]
                build = self._builds.get(user)
                if build is not None and not build.has_slot:
                    build.priority = Priority.BATCH

    # -- writes ----------------------------------------------------------------------
    def written(self, user: str, items: Iterable[tuple[Memory, FloatArray | None]]) -> None:
        """Memories this process just stored for ``user`` (call on the event loop)."""
        items = list(items)
        idx = self._ready.get(user)
        if idx is None and user not in self._builds:
            self._extend_saved(user, items)
        else:
            self._unsave(user)
        if idx is not None:
            def add(idx: UserIndex = idx) -> None:
                for memory, vector in items:
                    idx.add(memory, vector)
                self._account(user, idx)

            self._mutate(user, add)
        build = self._builds.get(user)
        if build is not None:
            for memory, vector in items:
                build.pending[memory.id] = (memory, vector)
        self._log_to_snapshot(user, [(m.id, (m, v)) for m, v in items])

    def forgotten(self, user: str, memory_id: str) -> None:
        """A memory this process just deleted."""
        idx = self._ready.get(user)
        if idx is not None:
            def remove(idx: UserIndex = idx) -> None:
                idx.remove(memory_id)
                self._account(user, idx)

            self._mutate(user, remove)
        self._unsave(user)
        build = self._builds.get(user)
        if build is not None:
            build.pending[memory_id] = None
        dense = self._dense.get(user)
        if dense is not None:
            dense.forget(memory_id)
        snapshots = self._snapshots
        if snapshots is not None and snapshots.has(user):
            # the forgotten text must not stay on disk: their next build saves anew
            self._in_background(self._runner.run(
                functools.partial(snapshots.delete, user), Priority.INTERACTIVE))

    def _log_to_snapshot(self, user: str, writes: list[tuple[str, _Write]]) -> None:
        """Keep ``user``'s saved snapshot, if they have one, what the store holds
        (queued on the worker like the saved index's delete, so a later load sees it)."""
        snapshots = self._snapshots
        if snapshots is not None and snapshots.has(user):
            self._in_background(self._runner.run(
                functools.partial(snapshots.append, user, writes), Priority.INTERACTIVE))

    def clear(self) -> None:
        """Drop every index (after the store was rebuilt, e.g. by ``reembed``)."""
        for build in self._builds.values():
            build.task.cancel()
        self._builds.clear()
        self._dense.clear()
        self._ready.clear()
        self._bytes.clear()
        self._checked_at.clear()
        self._too_big.clear()
        self._dirty.clear()
        self._total_bytes = 0
        if self._saved is not None:
            self._in_background(self._runner.run(self._saved.clear, Priority.INTERACTIVE))
        if self._snapshots is not None:
            self._in_background(self._runner.run(self._snapshots.clear,
                                                 Priority.INTERACTIVE))

    def warm(self) -> None:
        """In the background (returns at once): load saved indexes, most recently written
        first, up to ``warm_people`` people and half the memory budget; then, with
        ``renew_outdated``, rebuild the saved indexes an upgrade made outdated, one at a
        time while no recall runs, the most recently written first (each is saved, and
        kept in memory only where the budget has room, as the least recently used). All
        at batch priority: a turn's own request goes first."""
        if self._saved is not None and self._warmer is None and \
                (self.settings.warm_people or self.settings.renew_outdated):
            self._warmer = asyncio.get_running_loop().create_task(self._warm())

    async def _warm(self) -> None:
        saved = self._saved
        assert saved is not None
        try:
            people = await self._runner.run(
                functools.partial(saved.recent, self.settings.warm_people), Priority.BATCH)
            outdated = await self._runner.run(saved.outdated, Priority.BATCH) \
                if self.settings.renew_outdated else []
        except Exception as exc:  # noqa: BLE001 - a cold start is slower, not broken
            log.warning("could not list the saved indexes: %s", exc)
            return
        room = self.budget_bytes // 2
        for user, memories in people:
            room -= self._estimate(memories)
            if room < 0:
                break
            build = None if user in self._ready else self._start(user, Priority.BATCH)
            if build is not None:
                await asyncio.gather(build.task, return_exceptions=True)
        if outdated:
            log.info("renewing %d saved indexes made by an earlier version", len(outdated))
        for user, memories in outdated:
            if memories > saved.max_memories:
                continue  # not kept on disk anyway
            await self._until_quiet()  # people are talking: their turns come first
            if user in self._ready or user in self._builds:
                continue
            build = self._start(user, Priority.BATCH, renewal=True)
            if build is not None:
                await asyncio.gather(build.task, return_exceptions=True)

    async def settle(self) -> None:
        """Wait for the builds, saves and deletes under way, and the warm start
        (tests, benchmarks)."""
        if self._warmer is not None:
            await asyncio.gather(self._warmer, return_exceptions=True)
        while self._builds or self._background:
            await asyncio.gather(*[b.task for b in self._builds.values()], *self._background,
                                 return_exceptions=True)

    async def stop(self) -> None:
        """Cancel builds, save what changed, release the file and the worker."""
        tasks = [b.task for b in self._builds.values()]
        for task in (self._warmer, self._saver):
            if task is not None:
                tasks.append(task)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._save_dirty()
        await asyncio.gather(*self._background, return_exceptions=True)
        if self._saved is not None:
            await self._runner.run(self._saved.close, Priority.BATCH)
        self._runner.close()

    def stats(self) -> CacheStats:
        return CacheStats(len(self._ready), sum(len(i) for i in self._ready.values()),
                          round(self._total_bytes / 2**20, 1), len(self._builds),
                          len(self._too_big), self.builds_done, self.loads_done)

    # -- building --------------------------------------------------------------------
    def _start(self, user: str, priority: Priority, refresh: bool = False,
               renewal: bool = False) -> _Build | None:
        build = self._builds.get(user)
        if build is not None:
            if priority < build.priority:
                build.priority = priority  # someone is waiting now: its pages go first
            return build
        too_big_at = self._too_big.get(user)
        if too_big_at is not None and time.monotonic() - too_big_at < self.refresh_s:
            return None
        task = asyncio.get_running_loop().create_task(self._build(user, refresh))
        build = _Build(task, priority, renewal=renewal)
        self._builds[user] = build
        task.add_done_callback(lambda t: self._finished(user, build, t))
        return build

    def _finished(self, user: str, build: _Build, task: asyncio.Task[UserIndex | None]) -> None:
        if self._builds.get(user) is build:
            del self._builds[user]
            self._dense.pop(user, None)
        if not task.cancelled() and task.exception() is not None:
            log.warning("building the index of %s failed: %s", user, task.exception())

    async def _build(self, user: str, refresh: bool) -> UserIndex | None:
        build = self._builds[user]
        if not refresh:
            # a saved copy loads in a few ms: not behind the builds holding the slots
            loading = build.loading = asyncio.get_running_loop().create_future()
            loaded: UserIndex | None = None
            try:
                loaded = await self._load(user, build)
            finally:
                loading.set_result(loaded)
            if loaded is not None:
                return loaded
        elif user in self._ready:
            # a check for other processes' writes, which nobody's turn waits for: after a
            # restart every loaded index is due for one, and on a Chroma server sharing
            # the machine each count costs it 60-210 ms of CPU (128 of them right after a
            # restart slowed the turns of the people asking: turn p95 ÷ settled 2.46)
            await self._until_quiet(self.refresh_s)
        async with self._slots.held(lambda: build.priority):
            build.has_slot = True
            current = self._ready.get(user)
            if refresh and current is not None and \
                    await self.store.count(user) == len(current):
                return current  # nothing was added or deleted elsewhere
            if not refresh:
                await self._load_snapshot(user, build)
            started = time.perf_counter()
            with self._coming(user) if current is None else contextlib.nullcontext():
                records = await self._read(user)
                if records is None:
                    return None
                if current is None:  # its turns get dense recall from these meanwhile
                    dense = self._dense[user] = await self._runner.run(
                        functools.partial(DenseSnapshot, records), build.priority) \
                        if len(records) > self.settings.page_size else DenseSnapshot(records)
                    self._keep_snapshot(user, build, dense)
            idx = UserIndex(user, self.timezone)
            size = self.settings.page_size
            for at in range(0, len(records), size):
                await self._runner.run(
                    functools.partial(_add_page, idx, records[at:at + size],
                                      frozenset(build.pending), self.foreground),
                    build.priority)
                if (at + size) % SETTLE_EVERY < size:
                    long_lived.settle(f"the index of {user}, {len(idx)} memories so far")
            await self._prepared(idx, build)
            _apply(idx, build.pending)  # no await from here: no write can slip between
            if build.renewal and build.priority is Priority.BATCH:
                self._install_if_room(user, idx)  # nobody asked for it: saved is enough
            else:
                self._install(user, idx)
            self.builds_done += 1
            if self._saved is not None:
                self._in_background(self._save(user, idx))
            log.debug("index of %s: %d memories in %.0f ms", user, len(idx),
                      (time.perf_counter() - started) * 1000)
            return idx

    async def _until_quiet(self, most_s: float = math.inf) -> None:
        """Wait until no recall runs (looking every :data:`RENEW_PAUSE_S`), at most
        ``most_s``: for background work no turn waits for."""
        deadline = time.monotonic() + most_s
        while self.foreground.busy and time.monotonic() < deadline:
            await asyncio.sleep(RENEW_PAUSE_S)

    async def _read(self, user: str) -> list[VectorRecord] | None:
        """Every record of ``user``, a page at a time; None when their index would not fit
        the budget (logged)."""
        records: list[VectorRecord] = []
        cursor: str | None = None
        while True:
            page = await self.store.scroll_page(user, cursor, self.settings.page_size)
            records.extend(page.records)
            if records and not self._vector_bytes:
                self._vector_bytes = int(records[0].vector.nbytes)
            if self._estimate(len(records)) > self.budget_bytes:
                self._too_big[user] = time.monotonic()
                self._drop(user)
                log.warning(
                    "the index of %s needs more than memory.index.budget_mb (%.0f MB) on"
                    " its own: %s gets dense recall from the store only; raise the budget"
                    " to index them", user, self.settings.budget_mb, user)
                return None
            if page.cursor is None:
                return records
            if cursor is None:  # more than one page: dense recall searches the store
                self._no_longer_coming(user)
            cursor = page.cursor

    async def _load(self, user: str, build: _Build) -> UserIndex | None:
        """``user``'s saved index, installed, if it is current for the store.

        Over a store other processes write, the copy is used at once and checked against
        the store's count right after, in the background (the next :meth:`peek` starts
        that refresh): a count on a Chroma server takes about 90 ms, and 32 of them at
        once kept first turns from their index past the recall budget."""
        if self._saved is None:
            return None
        loaded = await self._runner.run(functools.partial(self._saved.load, user),
                                        build.priority)
        if loaded is None:
            return None
        idx = loaded[0]
        await self._prepared(idx, build)
        _apply(idx, build.pending)
        if build.pending:
            self._mark_dirty(user)
        self._install(user, idx)
        if self.store.shared:
            self._checked_at[user] = -math.inf  # due for the check against the store
        self.loads_done += 1
        return idx

    async def _load_snapshot(self, user: str, build: _Build) -> None:
        """Answer ``user``'s dense recall from their saved snapshot while the store is
        read (a large person only has one)."""
        snapshots = self._snapshots
        if snapshots is None or not snapshots.has(user):
            return
        with self._coming(user):
            snap = await self._runner.run(functools.partial(snapshots.load, user),
                                          build.priority)
            if snap is None:
                return
            for memory_id, write in build.pending.items():
                if write is None:
                    snap.forget(memory_id)
            self._dense.setdefault(user, snap)

    @contextlib.contextmanager
    def _coming(self, user: str) -> Iterator[None]:
        """Mark ``user``'s records as on their way for the block, so :meth:`dense_loaded`
        waits for them (a person has one build at a time, so one mark)."""
        self._dense_coming[user] = asyncio.get_running_loop().create_future()
        try:
            yield
        finally:
            self._no_longer_coming(user)

    def _no_longer_coming(self, user: str) -> None:
        """End the mark of :meth:`_coming` early (or at its end): those waiting go on."""
        coming = self._dense_coming.pop(user, None)
        if coming is not None:
            coming.set_result(None)

    def _keep_snapshot(self, user: str, build: _Build, dense: DenseSnapshot) -> None:
        """Save the records just read (``dense``) for a person too large for a saved
        index (with the writes seen since the read began, copied when the save runs);
        drop the snapshot of one who no longer is."""
        snapshots, saved = self._snapshots, self._saved
        if snapshots is None or saved is None:
            return
        if len(dense) > saved.max_memories:
            self._in_background(self._runner.run(
                lambda: snapshots.save(user, dense, dict(build.pending)),
                Priority.INTERACTIVE))
        elif snapshots.has(user):
            self._in_background(self._runner.run(
                functools.partial(snapshots.delete, user), Priority.INTERACTIVE))

    async def _prepared(self, idx: UserIndex, build: _Build) -> None:
        if self._prepare is not None:
            await self._runner.run(functools.partial(self._prepare, idx), build.priority)

    # -- saving ----------------------------------------------------------------------
    def _unsave(self, user: str) -> None:
        """Delete ``user``'s saved copy now (a write made it stale; it is saved again
        later), ahead of any save waiting on the worker."""
        if self._saved is not None:
            self._in_background(self._runner.run(
                functools.partial(self._saved.delete, user), Priority.INTERACTIVE))

    def _extend_saved(self, user: str, items: list[tuple[Memory, FloatArray | None]]) -> None:
        """Add a write to ``user``'s saved copy while their index is not in memory (queued
        like :meth:`_unsave`, so no later load reads the copy without it); a copy that
        cannot be brought up to date is deleted."""
        saved = self._saved
        if saved is None:
            return

        def extend() -> None:
            try:
                saved.extend(user, items)
            except Exception as exc:  # noqa: BLE001 - a cache: rebuilt if not current
                log.warning("updating the saved index of %s failed: %s", user, exc)
                saved.delete(user)

        self._in_background(self._runner.run(extend, Priority.INTERACTIVE))

    def _mutate(self, user: str, change: Callable[[], None]) -> None:
        """Change a ready index (counted, so a copy pickled meanwhile is not written)."""
        self._generation[user] = self._generation.get(user, 0) + 1
        change()
        self._mark_dirty(user)

    def _mark_dirty(self, user: str) -> None:
        if self._saved is None:
            return
        self._dirty.add(user)
        if self._saver is None or self._saver.done():
            self._saver = asyncio.get_running_loop().create_task(self._save_periodically())

    async def _save_periodically(self) -> None:
        while self._dirty:
            await asyncio.sleep(self.save_every_s)
            await self._save_dirty()

    async def _save_dirty(self) -> None:
        for user in list(self._dirty):
            idx = self._ready.get(user)
            if idx is None:
                self._dirty.discard(user)
            else:
                await self._save(user, idx)

    async def _save(self, user: str, idx: UserIndex) -> None:
        if self._saved is None:
            return
        self._dirty.discard(user)
        generation = self._generation.get(user, 0)

        def unchanged() -> bool:
            return self._generation.get(user, 0) == generation

        try:
            written = await self._runner.run(
                functools.partial(self._saved.save, user, idx, unchanged), Priority.BATCH)
        except Exception as exc:  # noqa: BLE001 - a cache: rebuilt if never saved
            log.warning("saving the index of %s failed: %s", user, exc)
            written = False
        if not written and user in self._ready:
            self._mark_dirty(user)  # changed while pickled: try again later

    def _in_background(self, work: Awaitable[Any]) -> None:
        async def run() -> None:
            try:
                await work
            except Exception as exc:  # noqa: BLE001 - logged; the cache carries on
                log.warning("index cache background work failed: %s", exc)

        task = asyncio.get_running_loop().create_task(run())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _estimate(self, memories: int) -> int:
        return memories * (ENTRY_BYTES + (self._vector_bytes or 1536))

    def _install(self, user: str, idx: UserIndex) -> None:
        long_lived.settle(f"the index of {user}")
        self._too_big.pop(user, None)
        self._ready[user] = idx
        self._ready.move_to_end(user)
        self._checked_at[user] = time.monotonic()
        self._account(user, idx)
        while self._total_bytes > self.budget_bytes and len(self._ready) > 1:
            oldest = next(iter(self._ready))
            if oldest == user:
                break
            self._drop(oldest)

    def _install_if_room(self, user: str, idx: UserIndex) -> None:
        """Keep ``idx`` as the least recently used index, if the budget has room for it
        without dropping another."""
        if self._total_bytes + self._estimate(len(idx)) <= self.budget_bytes:
            self._install(user, idx)
            self._ready.move_to_end(user, last=False)

    def _account(self, user: str, idx: UserIndex) -> None:
        size = self._estimate(len(idx))
        self._total_bytes += size - self._bytes.get(user, 0)
        self._bytes[user] = size

    def _drop(self, user: str) -> None:
        idx = self._ready.get(user)
        if idx is not None and user in self._dirty:
            self._in_background(self._save(user, idx))  # its changes outlive the drop
        self._ready.pop(user, None)
        self._checked_at.pop(user, None)
        self._total_bytes -= self._bytes.pop(user, 0)


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


def dense_only_index(user: str, timezone: str) -> UserIndex:
    """An empty index for a recall that cannot wait: the robust engine fills it from the
    store's dense hits (with ``dense_from_index`` off), so the lexical, temporal and
    entity channels still judge those hits."""
    return UserIndex(user, timezone)


async def index_of_hits(hits: Sequence[VectorHit], user: str, timezone: str) -> UserIndex:
    """A throwaway index of ``hits`` (``user``'s nearest memories from a store search),
    for a recall whose index is not ready: analysed on a worker thread, so that work
    (about a millisecond per memory) does not hold up the event loop every other turn
    runs on. The robust engine's own dense search then finds every hit already indexed."""
    idx = UserIndex(user, timezone)

    def analyse() -> None:
        for hit in hits:
            idx.add(from_payload(hit.id, hit.payload))

    await asyncio.to_thread(analyse)
    return idx


__all__ = ["ENTRY_BYTES", "CacheStats", "IndexCache", "dense_only_index", "index_of_hits"]
