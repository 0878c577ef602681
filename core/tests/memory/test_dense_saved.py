"""A large person's records kept on disk: loaded back with what was written and
forgotten since, and never trusted when damaged."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np

from omoide.memory.index.dense_snapshot import DenseSnapshot
from omoide.memory.index.dense_snapshot_files import SavedSnapshots
from omoide.memory.store_payload import to_payload
from omoide.types import Memory, VectorRecord

NOW = datetime(2026, 9, 27, 21, 0, tzinfo=ZoneInfo("Asia/Tokyo"))


def memory(i: int) -> Memory:
    return Memory(f"m{i}", "me", f"メモ{i}", NOW)


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


RECORDS = [VectorRecord("m0", unit(1, 0, 0), to_payload(memory(0))),
           VectorRecord("m1", unit(0, 1, 0), to_payload(memory(1))),
           VectorRecord("m2", unit(0, 0, 1), to_payload(memory(2)))]


def nearest_ids(snapshot: DenseSnapshot, *query: float, limit: int = 1) -> list[str]:
    return [h.id for h in snapshot.nearest(unit(*query), limit)]


def test_a_saved_snapshot_loads_back_as_it_was(tmp_path: Path) -> None:
    kept = SavedSnapshots(tmp_path)
    kept.save("me", DenseSnapshot(RECORDS))
    loaded = kept.load("me")
    assert loaded is not None and len(loaded) == 3
    hit = loaded.nearest(unit(0, 1, 0.1), 1)[0]
    assert hit.id == "m1" and hit.payload == to_payload(memory(1))
    assert kept.load("you") is None


def test_writes_and_forgets_logged_since_are_in_the_loaded_snapshot(tmp_path: Path) -> None:
    kept = SavedSnapshots(tmp_path)
    kept.save("me", DenseSnapshot(RECORDS))
    kept.append("me", [("m3", (memory(3), unit(1, 1, 0)))])   # a new memory
    kept.append("me", [("m0", None)])                        # forgotten
    kept.append("me", [("m2", (memory(2), unit(0, 1, 1)))])   # written again, moved
    loaded = kept.load("me")
    assert loaded is not None and len(loaded) == 3
    assert nearest_ids(loaded, 1, 1, 0) == ["m3"]
    assert "m0" not in nearest_ids(loaded, 1, 0, 0, limit=3)
    assert nearest_ids(loaded, 0, 1, 1) == ["m2"]


def test_writes_seen_while_the_records_were_read_are_saved_with_them(tmp_path: Path) -> None:
    kept = SavedSnapshots(tmp_path)
    kept.save("me", DenseSnapshot(RECORDS))
    kept.append("me", [("m1", None)])  # logged against the old copy: the new save replaces it
    kept.save("me", DenseSnapshot(RECORDS), since={"m3": (memory(3), unit(1, 1, 0)),
                                                   "m2": None})
    loaded = kept.load("me")
    assert loaded is not None
    assert sorted(nearest_ids(loaded, 1, 1, 1, limit=5)) == ["m0", "m1", "m3"]


def test_a_forgotten_record_is_left_out_of_the_next_save(tmp_path: Path) -> None:
    kept = SavedSnapshots(tmp_path)
    snapshot = DenseSnapshot(RECORDS)
    snapshot.forget("m1")
    kept.save("me", snapshot)
    loaded = kept.load("me")
    assert loaded is not None and len(loaded) == 2
    assert "m1" not in nearest_ids(loaded, 0, 1, 0, limit=3)


def test_nothing_is_logged_for_a_person_without_a_snapshot(tmp_path: Path) -> None:
    kept = SavedSnapshots(tmp_path)
    kept.append("me", [("m3", (memory(3), unit(1, 1, 0)))])
    assert not kept.has("me") and not list(tmp_path.iterdir())


def test_a_damaged_snapshot_is_deleted_and_the_store_is_read_instead(tmp_path: Path) -> None:
    kept = SavedSnapshots(tmp_path)
    kept.save("me", DenseSnapshot(RECORDS))
    for path in tmp_path.glob("*.npy"):
        path.write_bytes(b"not an array")
    assert kept.load("me") is None
    assert not kept.has("me") and not list(tmp_path.iterdir())


def test_a_torn_last_line_of_the_log_is_left_out(tmp_path: Path) -> None:
    kept = SavedSnapshots(tmp_path)
    kept.save("me", DenseSnapshot(RECORDS))
    kept.append("me", [("m0", None)])
    for path in tmp_path.glob("*.log"):
        with path.open("a", encoding="utf-8") as f:
            f.write('{"id": "m9", "payl')  # a crash while appending
    loaded = kept.load("me")
    assert loaded is not None and len(loaded) == 2


def test_the_files_are_readable_by_their_owner_only(tmp_path: Path) -> None:
    kept = SavedSnapshots(tmp_path / "dense")
    kept.save("me", DenseSnapshot(RECORDS))
    kept.append("me", [("m0", None)])
    paths = list((tmp_path / "dense").iterdir())
    assert len(paths) == 3
    assert all(path.stat().st_mode & 0o077 == 0 for path in [*paths, tmp_path / "dense"])
