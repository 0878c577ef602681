"""The records read for an index being analysed answer dense searches."""

from __future__ import annotations

import numpy as np

from omoide.memory.index.dense_snapshot import DenseSnapshot
from omoide.types import VectorRecord


def record(i: int, vector: list[float]) -> VectorRecord:
    return VectorRecord(f"m{i}", np.asarray(vector, dtype=np.float32), {"text": f"t{i}"})


SNAPSHOT = [record(0, [1, 0, 0]), record(1, [0, 2, 0]), record(2, [1, 1, 0]),
            record(3, [0, 0, 3])]


def test_the_nearest_records_come_best_first_by_cosine() -> None:
    hits = DenseSnapshot(SNAPSHOT).nearest(np.asarray([0.0, 1.0, 0.1], dtype=np.float32), 2)
    assert [h.id for h in hits] == ["m1", "m2"]
    assert hits[0].score > hits[1].score
    assert hits[0].payload == {"text": "t1"}


def test_a_forgotten_record_is_never_returned() -> None:
    snapshot = DenseSnapshot(SNAPSHOT)
    snapshot.forget("m1")
    hits = snapshot.nearest(np.asarray([0.0, 1.0, 0.1], dtype=np.float32), 2)
    assert [h.id for h in hits] == ["m2", "m3"]
    assert len(snapshot) == 3


def test_an_empty_snapshot_finds_nothing() -> None:
    assert DenseSnapshot([]).nearest(np.ones(3, dtype=np.float32), 5) == []
