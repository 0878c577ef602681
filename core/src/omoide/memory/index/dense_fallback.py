"""Dense recall while a person's index is built: from the records the build has read.

Until the index is ready, the engine answers from a dense search: of the person's
records once the build has read them (:mod:`omoide.memory.index.dense_snapshot`; a
recall waits for a read under way rather than search the store beside it), else of the
store (:func:`index_of_hits`, :func:`dense_only_index`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator, Sequence

from omoide.memory.index.dense_snapshot import DenseSnapshot
from omoide.memory.index.person_index import UserIndex
from omoide.memory.store_payload import from_payload
from omoide.types import VectorHit


class DenseFallback:
    """The records read for the indexes being built, per person, and the reads under way."""

    def __init__(self, page_size: int) -> None:
        self.page_size = page_size
        self._dense: dict[str, DenseSnapshot] = {}
        """Large people's records while their index is analysed (see dense_snapshot)."""
        self._coming: dict[str, asyncio.Future[None]] = {}
        """People whose records are being read from the store or loaded from their saved
        snapshot (see dense_snapshot_files), done when they are in ``_dense``."""

    def get(self, user: str) -> DenseSnapshot | None:
        """``user``'s records as read for an index being built; None otherwise."""
        return self._dense.get(user)

    def keep(self, user: str, snapshot: DenseSnapshot) -> None:
        """Answer ``user``'s dense recall from ``snapshot`` until their index is ready."""
        self._dense[user] = snapshot

    def keep_unless_read(self, user: str, snapshot: DenseSnapshot) -> None:
        """:meth:`keep`, unless the records were read from the store meanwhile."""
        self._dense.setdefault(user, snapshot)

    def forget(self, user: str, memory_id: str) -> None:
        """A memory deleted while ``user``'s index is built."""
        dense = self._dense.get(user)
        if dense is not None:
            dense.forget(memory_id)

    def done(self, user: str) -> None:
        """``user``'s build ended: their index, if any, answers from now on."""
        self._dense.pop(user, None)

    def clear(self) -> None:
        self._dense.clear()

    def analysing_large(self, user: str) -> bool:
        """Whether ``user``'s records are read and their index, of more than one page, is
        being analysed: seconds away, so a recall should not wait for it."""
        dense = self._dense.get(user)
        return dense is not None and len(dense) > self.page_size

    async def loaded(self, user: str) -> DenseSnapshot | None:
        """:meth:`get`, after waiting for ``user``'s records if they are on their way
        (see :meth:`coming`)."""
        dense = self._dense.get(user)
        coming = self._coming.get(user)
        if dense is None and coming is not None:
            await asyncio.shield(coming)
            dense = self._dense.get(user)
        return dense

    @contextlib.contextmanager
    def coming(self, user: str) -> Iterator[None]:
        """Mark ``user``'s records as on their way for the block, so :meth:`loaded`
        waits for them (a person has one build at a time, so one mark)."""
        self._coming[user] = asyncio.get_running_loop().create_future()
        try:
            yield
        finally:
            self.no_longer_coming(user)

    def no_longer_coming(self, user: str) -> None:
        """End the mark of :meth:`coming` early (or at its end): those waiting go on."""
        coming = self._coming.pop(user, None)
        if coming is not None:
            coming.set_result(None)


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
