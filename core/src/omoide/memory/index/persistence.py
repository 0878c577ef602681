"""Indexes that outlive the process: saved copies and, for large people, saved records.

With an :class:`~omoide.memory.index.saved_indexes.IndexStore`, a fresh build is saved at
once, and indexes changed by writes are saved every ``save_every_s``, when dropped and
at stop. Every write or forget of this process deletes the person's saved copy at once
(it is saved again later): a saved copy is never older than the person's last write,
even after a crash. Writes never wait for a save: a copy pickled while the index changed
is not written (a generation count per person tells), and is tried again later.

A person too large for a saved index (``keep_max_memories``) has the records read for
their build kept instead (:mod:`omoide.memory.index.dense_snapshot_files`, with a log of
the writes since; a forget deletes it, like the saved index).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable

from omoide.memory.index.cache_worker import CacheWorker
from omoide.memory.index.dense_snapshot import DenseSnapshot
from omoide.memory.index.dense_snapshot_files import SavedSnapshots
from omoide.memory.index.dense_snapshot_files import Write as _Write
from omoide.memory.index.lru import ReadyIndexes
from omoide.memory.index.person_index import UserIndex
from omoide.memory.index.saved_indexes import IndexStore
from omoide.types import FloatArray, Memory, Priority

log = logging.getLogger("omoide.memory.index")


class IndexPersistence:
    """The saved indexes and saved records of one cache (both optional: without
    ``saved`` every method is a no-op but the change count)."""

    def __init__(self, saved: IndexStore | None, snapshots: SavedSnapshots | None,
                 save_every_s: float, worker: CacheWorker, ready: ReadyIndexes) -> None:
        self.saved = saved
        self.snapshots = snapshots if saved is not None else None
        self.save_every_s = save_every_s
        self._worker = worker
        self._ready = ready
        self._dirty: set[str] = set()
        self._generation: dict[str, int] = {}
        """Changes per person's ready index (read by the saving thread)."""
        self._saver: asyncio.Task[None] | None = None

    # -- the saved index ---------------------------------------------------------------
    def unsave(self, user: str) -> None:
        """Delete ``user``'s saved copy now (a write made it stale; it is saved again
        later), ahead of any save waiting on the worker."""
        if self.saved is not None:
            self._worker.in_background(self._worker.run(
                functools.partial(self.saved.delete, user), Priority.INTERACTIVE))

    def extend_saved(self, user: str, items: list[tuple[Memory, FloatArray | None]]) -> None:
        """Add a write to ``user``'s saved copy while their index is not in memory (queued
        like :meth:`unsave`, so no later load reads the copy without it); a copy that
        cannot be brought up to date is deleted."""
        saved = self.saved
        if saved is None:
            return

        def extend() -> None:
            try:
                saved.extend(user, items)
            except Exception as exc:  # noqa: BLE001 - a cache: rebuilt if not current
                log.warning("updating the saved index of %s failed: %s", user, exc)
                saved.delete(user)

        self._worker.in_background(self._worker.run(extend, Priority.INTERACTIVE))

    def mutate(self, user: str, change: Callable[[], None]) -> None:
        """Change a ready index (counted, so a copy pickled meanwhile is not written)."""
        self._generation[user] = self._generation.get(user, 0) + 1
        change()
        self.mark_dirty(user)

    def mark_dirty(self, user: str) -> None:
        """``user``'s ready index differs from its saved copy: save it soon."""
        if self.saved is None:
            return
        self._dirty.add(user)
        if self._saver is None or self._saver.done():
            self._saver = asyncio.get_running_loop().create_task(self._save_periodically())

    async def _save_periodically(self) -> None:
        while self._dirty:
            await asyncio.sleep(self.save_every_s)
            await self.save_dirty()

    async def save_dirty(self) -> None:
        """Save every changed index still ready."""
        for user in list(self._dirty):
            idx = self._ready.get(user)
            if idx is None:
                self._dirty.discard(user)
            else:
                await self.save(user, idx)

    async def save(self, user: str, idx: UserIndex) -> None:
        """Save ``idx``; tried again later if it changed while pickled."""
        if self.saved is None:
            return
        self._dirty.discard(user)
        generation = self._generation.get(user, 0)

        def unchanged() -> bool:
            return self._generation.get(user, 0) == generation

        try:
            written = await self._worker.run(
                functools.partial(self.saved.save, user, idx, unchanged), Priority.BATCH)
        except Exception as exc:  # noqa: BLE001 - a cache: rebuilt if never saved
            log.warning("saving the index of %s failed: %s", user, exc)
            written = False
        if not written and user in self._ready:
            self.mark_dirty(user)  # changed while pickled: try again later

    def save_on_drop(self, user: str, idx: UserIndex | None) -> None:
        """An index leaving the cache: its changes outlive the drop."""
        if idx is not None and user in self._dirty:
            self._worker.in_background(self.save(user, idx))

    def stop_saving(self) -> asyncio.Task[None] | None:
        """The periodic save's task, if any, for the caller to cancel."""
        return self._saver

    def clear(self) -> None:
        """Forget what changed and delete every saved index and snapshot."""
        self._dirty.clear()
        if self.saved is not None:
            self._worker.in_background(self._worker.run(self.saved.clear, Priority.INTERACTIVE))
        if self.snapshots is not None:
            self._worker.in_background(self._worker.run(self.snapshots.clear,
                                                        Priority.INTERACTIVE))

    # -- the saved records of large people ---------------------------------------------
    def log_to_snapshot(self, user: str, writes: list[tuple[str, _Write]]) -> None:
        """Keep ``user``'s saved snapshot, if they have one, what the store holds
        (queued on the worker like the saved index's delete, so a later load sees it)."""
        snapshots = self.snapshots
        if snapshots is not None and snapshots.has(user):
            self._worker.in_background(self._worker.run(
                functools.partial(snapshots.append, user, writes), Priority.INTERACTIVE))

    def forget_snapshot(self, user: str) -> None:
        """A memory of ``user`` was forgotten: its text must not stay on disk (their next
        build saves anew)."""
        snapshots = self.snapshots
        if snapshots is not None and snapshots.has(user):
            self._worker.in_background(self._worker.run(
                functools.partial(snapshots.delete, user), Priority.INTERACTIVE))

    def keep_snapshot(self, user: str, pending: dict[str, _Write],
                      dense: DenseSnapshot) -> None:
        """Save the records just read (``dense``) for a person too large for a saved
        index (with the writes seen since the read began, ``pending``, copied when the
        save runs); drop the snapshot of one who no longer is."""
        snapshots, saved = self.snapshots, self.saved
        if snapshots is None or saved is None:
            return
        if len(dense) > saved.max_memories:
            self._worker.in_background(self._worker.run(
                lambda: snapshots.save(user, dense, dict(pending)), Priority.INTERACTIVE))
        elif snapshots.has(user):
            self._worker.in_background(self._worker.run(
                functools.partial(snapshots.delete, user), Priority.INTERACTIVE))
