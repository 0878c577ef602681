"""A person's vectors and payloads as read from the store, for dense recall while their
index is still being analysed.

Reading a large person's records is quick next to analysing them: 100,000 memories
are read from Qdrant local in seconds and analysed in about 40 s. And the store's own
search is slow at that size (Qdrant local re-normalises every vector on each query:
about 110 ms; a Chroma server's search filtered to one person: 300-650 ms), too slow
for several turns at once within the recall budget. So the index cache reads every
page of a person first, makes this snapshot of them, and only then analyses them;
until the index is ready, recalls that have no index take their nearest memories
from the snapshot (one matrix product, no store call). That holds for small people
too: their read, already under way when a recall wants its nearest memories, ends
sooner than a store search queued behind it.

A snapshot is what the store held when it was read: a memory written since is not in
it (the build applies it to the index), one forgotten since still is (see
:meth:`DenseSnapshot.forget`, which the cache calls).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from omoide.types import FloatArray, VectorHit, VectorRecord

Payload = dict[str, Any] | bytes
"""A record's payload, or its JSON as saved (decoded when it is first returned)."""


class DenseSnapshot:
    """Ids, a unit-vector matrix and payloads of one person's records."""

    _payloads: dict[str, Payload]

    def __init__(self, records: Sequence[VectorRecord]) -> None:
        """Stack ``records`` (a copy of their vectors, normalised: a store may hand
        back vectors as they were written). Slow for many records: call it off the
        event loop."""
        self._ids = [r.id for r in records]
        self._payloads = {r.id: r.payload for r in records}
        matrix = np.stack([np.asarray(r.vector, dtype=np.float32) for r in records]) \
            if records else np.zeros((0, 1), dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        self._matrix: FloatArray = (matrix / np.where(norms > 0, norms, 1.0)).astype(
            np.float32, copy=False)

    @classmethod
    def from_parts(cls, ids: Sequence[str], matrix: FloatArray,
                   payloads: Sequence[Payload],
                   changes: Iterable[tuple[str, dict[str, Any] | None, FloatArray | None]] = (),
                   ) -> DenseSnapshot:
        """A snapshot from what :meth:`parts` gave (``matrix``'s rows already unit
        vectors; it is used as it is, so a memory-mapped one stays on disk until
        searched; a payload may be its JSON, decoded when first returned, so loading
        100,000 costs little), then ``changes`` in order: (id, payload, vector) for a memory
        written since, (id, None, None) for one forgotten."""
        snap = cls.__new__(cls)
        snap._ids = list(ids)
        snap._payloads = dict(zip(snap._ids, payloads, strict=True))
        rows: dict[str, int] = {}
        replaced: dict[int, FloatArray] = {}
        added: list[FloatArray] = []
        for memory_id, payload, vector in changes:
            if payload is None or vector is None:
                snap._payloads.pop(memory_id, None)
                continue
            if not rows:
                rows = {i: k for k, i in enumerate(snap._ids)}
            unit = _unit(np.asarray(vector, dtype=np.float32))
            row = rows.get(memory_id)
            if row is None:
                rows[memory_id] = len(snap._ids)
                snap._ids.append(memory_id)
                added.append(unit)
            elif row >= len(matrix):
                added[row - len(matrix)] = unit
            else:
                replaced[row] = unit
            snap._payloads[memory_id] = payload
        if added or replaced:
            matrix = np.concatenate([np.asarray(matrix, dtype=np.float32),
                                     np.asarray(added, dtype=np.float32).reshape(
                                         len(added), matrix.shape[1])])
            for row, unit in replaced.items():
                matrix[row] = unit
        snap._matrix = matrix
        return snap

    def parts(self) -> tuple[list[str], FloatArray, dict[str, Payload]]:
        """Ids, unit-vector rows in the same order and payloads by id, of the memories
        not forgotten (what :meth:`from_parts` takes back)."""
        payloads = dict(self._payloads)  # one copy: a forget may come meanwhile
        keep = [k for k, i in enumerate(self._ids) if i in payloads]
        if len(keep) == len(self._ids):
            return list(self._ids), self._matrix, payloads
        return [self._ids[k] for k in keep], self._matrix[keep], payloads

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
        hits = [VectorHit(self._ids[i], float(sims[i]), self._payload(self._ids[i]))
                for i in top if self._ids[i] in self._payloads]
        hits.sort(key=lambda h: -h.score)
        return hits[:limit]

    def _payload(self, memory_id: str) -> dict[str, Any]:
        payload = self._payloads[memory_id]
        if isinstance(payload, bytes):
            payload = self._payloads[memory_id] = json.loads(payload)
        return payload


def _unit(vector: FloatArray) -> FloatArray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


__all__ = ["DenseSnapshot"]
