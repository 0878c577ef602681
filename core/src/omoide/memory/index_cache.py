"""Per-person indexes: built from the store a page at a time, kept in a bounded LRU.

A person's :class:`~omoide.memory.index.UserIndex` (lexical, temporal, cached vectors)
is built the first time they are recalled, not at start: a background task reads
their records with :meth:`VectorStore.scroll_page` (each page one bounded store call)
and analyses each page on the cache's own worker thread, so no read-path call ever
waits for a whole scan and the event loop stays free. Until the index is ready, the
engine answers from a dense search of the store (see ``MemoryEngine._recall``).

Writes made through this process reach the index at once: a ready index is updated
in place (on the event loop, where it is read), and writes made while a build runs
are remembered and win over the pages that the build reads later. A store that other
processes write (:attr:`VectorStore.shared`) has its people's indexes rebuilt in the
background when they are older than ``refresh_s`` and the store's count differs.

Memory is bounded by ``budget_mb``: an estimate per memory (:data:`ENTRY_BYTES` plus
its vector) decides when the least recently used indexes are dropped; an index that
alone would exceed the budget is not kept (that person gets dense recall only, and
the log says which setting to raise).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from omoide.blocking import PriorityRunner
from omoide.components import VectorStore
from omoide.memory.config import IndexSettings
from omoide.memory.index import UserIndex
from omoide.memory.records import from_payload
from omoide.types import FloatArray, Memory, Priority, VectorRecord

log = logging.getLogger("omoide.memory.index")

ENTRY_BYTES = 9_300
"""Memory one indexed memory takes besides its vector: the process's RSS grew by 9.3 KB
per memory (vector included) indexing 20,000 synthetic Japanese memories; the dense
channel later stacks the vectors once more, hence a vector's worth on top."""

_Write = tuple[Memory, FloatArray | None] | None
"""A write seen while a build runs: the memory and its vector, or None (forgotten)."""


@dataclass
class _Build:
    task: asyncio.Task[UserIndex | None]
    priority: Priority
    pending: dict[str, _Write] = field(default_factory=dict)


@dataclass(frozen=True)
class CacheStats:
    """What the cache holds (for benchmarks and ``/healthz``-style reports)."""

    people: int
    memories: int
    estimated_mb: float
    building: int
    too_big: int


class IndexCache:
    """The per-person indexes of one memory engine (see the module docstring)."""

    def __init__(self, store: VectorStore, timezone: str, settings: IndexSettings,
                 refresh_s: float) -> None:
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
        self._too_big: dict[str, float] = {}
        self._slots = asyncio.Semaphore(settings.concurrent_builds)
        self._runner = PriorityRunner("memory-index")
        self.builds_done = 0

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
                time.monotonic() - self._checked_at.get(user, 0.0) > self.refresh_s:
            self._checked_at[user] = time.monotonic()
            self._start(user, Priority.BATCH, refresh=True)
        return idx

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

    # -- writes ----------------------------------------------------------------------
    def written(self, user: str, items: Iterable[tuple[Memory, FloatArray | None]]) -> None:
        """Memories this process just stored for ``user`` (call on the event loop)."""
        items = list(items)
        idx = self._ready.get(user)
        if idx is not None:
            for memory, vector in items:
                idx.add(memory, vector)
            self._account(user, idx)
        build = self._builds.get(user)
        if build is not None:
            for memory, vector in items:
                build.pending[memory.id] = (memory, vector)

    def forgotten(self, user: str, memory_id: str) -> None:
        """A memory this process just deleted."""
        idx = self._ready.get(user)
        if idx is not None:
            idx.remove(memory_id)
            self._account(user, idx)
        build = self._builds.get(user)
        if build is not None:
            build.pending[memory_id] = None

    def clear(self) -> None:
        """Drop every index (after the store was rebuilt, e.g. by ``reembed``)."""
        for build in self._builds.values():
            build.task.cancel()
        self._builds.clear()
        self._ready.clear()
        self._bytes.clear()
        self._checked_at.clear()
        self._too_big.clear()
        self._total_bytes = 0

    async def stop(self) -> None:
        tasks = [b.task for b in self._builds.values()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._runner.close()

    def stats(self) -> CacheStats:
        return CacheStats(len(self._ready), sum(len(i) for i in self._ready.values()),
                          round(self._total_bytes / 2**20, 1), len(self._builds),
                          len(self._too_big))

    # -- building --------------------------------------------------------------------
    def _start(self, user: str, priority: Priority, refresh: bool = False) -> _Build | None:
        build = self._builds.get(user)
        if build is not None:
            if priority < build.priority:
                build.priority = priority  # someone is waiting now: its pages go first
            return build
        too_big_at = self._too_big.get(user)
        if too_big_at is not None and time.monotonic() - too_big_at < self.refresh_s:
            return None
        task = asyncio.get_running_loop().create_task(self._build(user, refresh))
        build = _Build(task, priority)
        self._builds[user] = build
        task.add_done_callback(lambda t: self._finished(user, build, t))
        return build

    def _finished(self, user: str, build: _Build, task: asyncio.Task[UserIndex | None]) -> None:
        if self._builds.get(user) is build:
            del self._builds[user]
        if not task.cancelled() and task.exception() is not None:
            log.warning("building the index of %s failed: %s", user, task.exception())

    async def _build(self, user: str, refresh: bool) -> UserIndex | None:
        async with self._slots:
            build = self._builds[user]
            current = self._ready.get(user)
            if refresh and current is not None and \
                    await self.store.count(user) == len(current):
                return current  # nothing was added or deleted elsewhere
            started = time.perf_counter()
            idx = UserIndex(user, self.timezone)
            cursor: str | None = None
            while True:
                page = await self.store.scroll_page(user, cursor, self.settings.page_size)
                records = page.records
                await self._runner.run(
                    functools.partial(_add_page, idx, records, frozenset(build.pending)),
                    build.priority)
                if records and not self._vector_bytes:
                    self._vector_bytes = int(records[0].vector.nbytes)
                if self._estimate(len(idx)) > self.budget_bytes:
                    self._too_big[user] = time.monotonic()
                    self._drop(user)
                    log.warning(
                        "the index of %s needs more than memory.index.budget_mb (%.0f MB) on"
                        " its own: %s gets dense recall from the store only; raise the budget"
                        " to index them", user, self.settings.budget_mb, user)
                    return None
                if page.cursor is None:
                    break
                cursor = page.cursor
            for memory_id, write in build.pending.items():
                if write is None:
                    idx.remove(memory_id)
                else:
                    idx.add(*write)
            self._install(user, idx)
            self.builds_done += 1
            log.debug("index of %s: %d memories in %.0f ms", user, len(idx),
                      (time.perf_counter() - started) * 1000)
            return idx

    def _estimate(self, memories: int) -> int:
        return memories * (ENTRY_BYTES + (self._vector_bytes or 1536))

    def _install(self, user: str, idx: UserIndex) -> None:
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

    def _account(self, user: str, idx: UserIndex) -> None:
        size = self._estimate(len(idx))
        self._total_bytes += size - self._bytes.get(user, 0)
        self._bytes[user] = size

    def _drop(self, user: str) -> None:
        self._ready.pop(user, None)
        self._checked_at.pop(user, None)
        self._total_bytes -= self._bytes.pop(user, 0)


def _add_page(idx: UserIndex, records: Sequence[VectorRecord], skip: frozenset[str]) -> None:
    """Analyse one page into ``idx`` (on the cache's worker thread; ``idx`` is not yet
    visible to readers). Records written or forgotten during the build are skipped:
    the build applies those writes itself at the end.

    Analysis is pure Python and holds the GIL: between memories the thread gives it up
    (``sleep(0)``), so a busy event loop answering people runs first and builds use
    whatever time it leaves (without that, a build took about half of the loop's time).
    """
    for record in records:
        if record.id not in skip:
            idx.add(from_payload(record.id, record.payload), record.vector)
            time.sleep(0)


def dense_only_index(user: str, timezone: str) -> UserIndex:
    """An empty index for a recall that cannot wait: the robust engine fills it from the
    store's dense hits (with ``dense_from_index`` off), so the lexical, temporal and
    entity channels still judge those hits."""
    return UserIndex(user, timezone)


__all__ = ["ENTRY_BYTES", "CacheStats", "IndexCache", "dense_only_index"]
