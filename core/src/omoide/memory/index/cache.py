"""Per-person indexes: built from the store a page at a time, kept in a bounded LRU.

:class:`IndexCache` is the one object the engine talks to; it composes

- :mod:`.builds` — a person's index built from the store a page at a time on the cache's
  worker thread (:mod:`.cache_worker`), or loaded from its saved copy, the first time
  they are recalled; writes made while it runs win over the pages read later;
- :mod:`.lru` — the ready indexes, least recently used first, bounded by ``budget_mb``
  (an index that alone would exceed it is not kept: that person gets dense recall only,
  and the log says which setting to raise);
- :mod:`.persistence` — with an :class:`~omoide.memory.index.saved_indexes.IndexStore`,
  indexes outlive the process (saved when built, every ``save_every_s`` when changed,
  when dropped and at stop; deleted at once by every write or forget, so a saved copy is
  never older than the person's last write); people too large for a saved index have
  the records read for their build kept instead;
- :mod:`.shared_store_refresh` — over a store other processes write
  (:attr:`VectorStore.shared`), indexes older than ``refresh_s`` are rebuilt in the
  background when the store's count differs (that count waits, up to another
  ``refresh_s``, until no recall runs);
- :mod:`.dense_fallback` — until an index is ready, dense recall from the records its
  build has read, else from the store;
- :mod:`.warm_start` — saved indexes loaded at start, outdated ones renewed.

Writes made through this process reach a ready index at once, updated in place on the
event loop, where it is read.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from omoide.components import VectorStore
from omoide.memory.config import IndexSettings
from omoide.memory.index.builds import BuildParts, IndexBuilds
from omoide.memory.index.cache_worker import CacheWorker
from omoide.memory.index.dense_fallback import DenseFallback, dense_only_index, index_of_hits
from omoide.memory.index.dense_snapshot import DenseSnapshot
from omoide.memory.index.dense_snapshot_files import SavedSnapshots
from omoide.memory.index.foreground_recalls import Foreground
from omoide.memory.index.lru import ENTRY_BYTES, ReadyIndexes
from omoide.memory.index.persistence import IndexPersistence
from omoide.memory.index.person_index import UserIndex
from omoide.memory.index.saved_indexes import IndexStore
from omoide.memory.index.shared_store_refresh import SharedStoreRefresh
from omoide.memory.index.warm_start import warm_from_saved
from omoide.types import FloatArray, Memory, Priority


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
        self.foreground = Foreground()
        """Recalls under way: large builds step aside for them (mark each recall)."""
        self._worker = CacheWorker()
        self._ready = ReadyIndexes(settings, on_drop=self._dropped)
        self._persistence = IndexPersistence(saved, snapshots, save_every_s, self._worker,
                                             self._ready)
        self._refresh = SharedStoreRefresh(store, refresh_s, self.foreground)
        self._dense = DenseFallback(settings.page_size)
        self._builds = IndexBuilds(BuildParts(
            store, timezone, settings, self._worker, self._ready, self._dense,
            self._persistence, self._refresh, self.foreground, prepare))
        self._awaited: dict[str, int] = {}
        """Recalls waiting for each person's index now (see :meth:`awaited`)."""
        self._warmer: asyncio.Task[None] | None = None

    @property
    def budget_bytes(self) -> int:
        return self._ready.budget_bytes

    @property
    def save_every_s(self) -> float:
        return self._persistence.save_every_s

    @save_every_s.setter
    def save_every_s(self, seconds: float) -> None:
        self._persistence.save_every_s = seconds

    @property
    def builds_done(self) -> int:
        """Indexes built from the store so far."""
        return self._builds.built

    @property
    def loads_done(self) -> int:
        """Indexes loaded from their saved copy so far."""
        return self._builds.loaded

    # -- reading ---------------------------------------------------------------------
    def peek(self, user: str) -> UserIndex | None:
        """``user``'s index if it is ready (marking it recently used), else None.

        Starts a background refresh when the store is shared and the index is stale.
        """
        idx = self._ready.get(user)
        if idx is None:
            return None
        self._ready.used(user)
        if user not in self._builds and self._refresh.take_due(user):
            self._builds.start(user, Priority.BATCH, refresh=True)
        return idx

    def dense(self, user: str) -> DenseSnapshot | None:
        """``user``'s records as read for an index being built, for dense recall until
        the index is ready; None otherwise."""
        return self._dense.get(user)

    def analysing_large(self, user: str) -> bool:
        """Whether ``user``'s records are read and their index, of more than one page, is
        being analysed: seconds away, so a recall should not wait for it."""
        return self._dense.analysing_large(user)

    def queued(self, user: str) -> bool:
        """Whether ``user``'s index build waits, or is about to wait, for a slot while
        others build: under load, more than one build away from ready."""
        build = self._builds.get(user)
        return build is not None and not build.has_slot and self._builds.slots.full

    async def dense_loaded(self, user: str) -> DenseSnapshot | None:
        """:meth:`dense`, after waiting for ``user``'s records if they are being loaded
        from their saved snapshot or read from the store in one page: a read already
        under way ends sooner than a store search queued behind it (about 100 ms against
        300-650 ms on a Chroma server; 7-11 s against the same for a 100k person's first
        Qdrant local read). A read that needs more pages is not waited for past its
        first: a search queued behind one page ends sooner than the rest of the read."""
        return await self._dense.loaded(user)

    def request(self, user: str) -> None:
        """Make sure ``user``'s index is ready or being built (returns at once)."""
        if self.peek(user) is None:
            self._builds.start(user, Priority.INTERACTIVE)

    async def wait(self, user: str, timeout_s: float | None) -> UserIndex | None:
        """``user``'s index, waiting at most ``timeout_s`` (None: until it is built).

        None when it is not ready in time, does not fit the budget, or its build failed
        (the reason is logged); the build goes on in the background after a timeout.
        """
        idx = self.peek(user)
        if idx is not None:
            return idx
        build = self._builds.start(user, Priority.INTERACTIVE)
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
            self._persistence.extend_saved(user, items)
        else:
            self._persistence.unsave(user)
        if idx is not None:
            def add(idx: UserIndex = idx) -> None:
                for memory, vector in items:
                    idx.add(memory, vector)
                self._ready.account(user, idx)

            self._persistence.mutate(user, add)
        build = self._builds.get(user)
        if build is not None:
            for memory, vector in items:
                build.pending[memory.id] = (memory, vector)
        self._persistence.log_to_snapshot(user, [(m.id, (m, v)) for m, v in items])

    def forgotten(self, user: str, memory_id: str) -> None:
        """A memory this process just deleted."""
        idx = self._ready.get(user)
        if idx is not None:
            def remove(idx: UserIndex = idx) -> None:
                idx.remove(memory_id)
                self._ready.account(user, idx)

            self._persistence.mutate(user, remove)
        self._persistence.unsave(user)
        build = self._builds.get(user)
        if build is not None:
            build.pending[memory_id] = None
        self._dense.forget(user, memory_id)
        self._persistence.forget_snapshot(user)

    # -- other workers' writes (:mod:`.peer_writes`) ----------------------------------
    def holds(self, user: str) -> bool:
        """Whether ``user``'s index is ready here or being built."""
        return user in self._ready or user in self._builds

    def unsave(self, user: str) -> None:
        """Another process changed ``user``'s memories while their index is not held
        here: drop its saved copies (their next build reads the store)."""
        self._persistence.unsave(user)
        self._persistence.forget_snapshot(user)

    def drop(self, user: str) -> None:
        """Forget ``user``'s index and its saved copies (it could not be brought up to
        date): their next recall builds it from the store."""
        build = self._builds.get(user)
        if build is not None:
            build.task.cancel()
        self._ready.drop(user)
        self.unsave(user)

    def clear(self) -> None:
        """Drop every index (after the store was rebuilt, e.g. by ``reembed``)."""
        self._builds.cancel_all()
        self._dense.clear()
        self._ready.clear()
        self._refresh.clear()
        self._persistence.clear()

    # -- lifetime --------------------------------------------------------------------
    def warm(self) -> None:
        """In the background (returns at once): load saved indexes, most recently written
        first, up to ``warm_people`` people and half the memory budget; then, with
        ``renew_outdated``, rebuild the saved indexes an upgrade made outdated, one at a
        time while no recall runs, the most recently written first (each is saved, and
        kept in memory only where the budget has room, as the least recently used). All
        at batch priority: a turn's own request goes first."""
        saved = self._persistence.saved
        if saved is not None and self._warmer is None and \
                (self.settings.warm_people or self.settings.renew_outdated):
            self._warmer = asyncio.get_running_loop().create_task(warm_from_saved(
                saved, self.settings, self._worker, self._ready, self._builds,
                self._refresh))

    async def settle(self) -> None:
        """Wait for the builds, saves and deletes under way, and the warm start
        (tests, benchmarks)."""
        if self._warmer is not None:
            await asyncio.gather(self._warmer, return_exceptions=True)
        while self._builds.under_way or self._worker.background():
            await asyncio.gather(*self._builds.tasks(), *self._worker.background(),
                                 return_exceptions=True)

    async def stop(self) -> None:
        """Cancel builds, save what changed, release the file and the worker."""
        cancelled: list[asyncio.Future[Any]] = [*self._builds.tasks()]
        for task in (self._warmer, self._persistence.stop_saving()):
            if task is not None:
                cancelled.append(task)
        for t in cancelled:
            t.cancel()
        await asyncio.gather(*cancelled, return_exceptions=True)
        await self._persistence.save_dirty()
        await asyncio.gather(*self._worker.background(), return_exceptions=True)
        saved = self._persistence.saved
        if saved is not None:
            await self._worker.run(saved.close, Priority.BATCH)
        self._worker.close()

    def stats(self) -> CacheStats:
        return CacheStats(len(self._ready), sum(len(i) for i in self._ready.indexes()),
                          round(self._ready.total_bytes / 2**20, 1),
                          len(self._builds.under_way), len(self._builds.too_big),
                          self._builds.built, self._builds.loaded)

    def _dropped(self, user: str, idx: UserIndex | None) -> None:
        """``user``'s index leaves the cache: its changes are saved, its check forgotten."""
        self._persistence.save_on_drop(user, idx)
        self._refresh.forget(user)


__all__ = ["ENTRY_BYTES", "CacheStats", "IndexCache", "dense_only_index", "index_of_hits"]
