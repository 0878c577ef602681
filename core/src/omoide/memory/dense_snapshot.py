"""A person's vectors and payloads as read from the store, for dense recall while their
index is still being analysed.

Reading a large person's records is quick next to analysing them: 100,000 memories
are read from Qdrant local in seconds and analysed in about 40 s. And the store's own
search is slow at that size (Qdrant local re-normalises every vector on each query:
about 110 ms; a Chroma server's search filtered to one person: 300-650 ms), too slow
for several turns at once within the recall budget. So the index cache reads every
page of a person larger than one page first, makes this snapshot of them, and only
then analyses them; until the index is ready, recalls that have no index take their
nearest memories from the snapshot (one matrix product, no store call).

A snapshot is what the store held when it was read: a memory written since is not in
it (the build applies it to the index), one forgotten since still is (see
:meth:`DenseSnapshot.forget`, which the cache calls).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from omoide.types import FloatArray, VectorHit, VectorRecord


class DenseSnapshot:
    """Ids, a unit-vector matrix and payloads of one person's records."""

    def __init__(self, records: Sequence[VectorRecord]) -> None:
        """Stack ``records`` (a copy of their vectors, normalised: a store may hand
        back vectors as they were written). Slow for many records: call it off the
        event loop."""
        self._ids = [r.id for r in records]
        self._payloads = {r.id: r.payload for r in records}
        matrix = np.stack([np.asarray(r.vector, dtype=np.float32) for r in records]) \
            if records else np.zeros((0, 1), dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        self._matrix = matrix / np.where(norms > 0, norms, 1.0)

    def __len__(self) -> int:
        return len(self._payloads)

    def forget(self, memory_id: str) -> None:
        """Leave a memory out of later results (it was deleted after the read)."""
        self._payloads.pop(memory_id, None)

    def nearest(self, vector: FloatArray, limit: int) -> list[VectorHit]:
        """The ``limit`` records nearest to ``vector`` by cosine, best first."""
        if not self._payloads or limit <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(query))
        sims = self._matrix @ (query / norm if norm > 0 else query)
        wanted = min(len(sims), limit + len(self._ids) - len(self._payloads))
        top = np.argpartition(-sims, wanted - 1)[:wanted]
        hits = [VectorHit(self._ids[i], float(sims[i]), self._payloads[self._ids[i]])
                for i in top if self._ids[i] in self._payloads]
        hits.sort(key=lambda h: -h.score)
        return hits[:limit]


__all__ = ["DenseSnapshot"]
