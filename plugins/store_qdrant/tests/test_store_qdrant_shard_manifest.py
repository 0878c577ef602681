"""Each person's store is vouched for by the manifest beside it: a store lost, damaged or
holding other points than recorded is named (who, where, what) and that person's calls
are refused until a rebuild, which restores only what was recorded."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from omoide.api import PersonMemoryUnavailable
from omoide.types import EmbedderFingerprint, VectorRecord
from omoide_store_qdrant.config import QdrantStoreConfig
from omoide_store_qdrant.shard_manifest import ShardManifest, checksum_of
from omoide_store_qdrant.shards import user_digest
from omoide_store_qdrant.store import QdrantStore, point_id

DIMS = 8
FINGERPRINT = EmbedderFingerprint("test-model", DIMS, "probe", tuple([1.0] + [0.0] * (DIMS - 1)))


def _records(n: int, prefix: str = "m") -> list[VectorRecord]:
    rows = np.random.default_rng(n).standard_normal((n, DIMS)).astype(np.float32)
    return [VectorRecord(f"{prefix}{i}", row, {"text": f"{prefix}{i}"})
            for i, row in enumerate(rows)]


async def _store(root: Path) -> QdrantStore:
    store = QdrantStore(QdrantStoreConfig.model_validate({"path": str(root)}))
    await store.start()
    await store.open(FINGERPRINT)
    return store


def _shard(root: Path, user: str) -> Path:
    digest = user_digest(user)
    return root / "shards" / "memories" / digest[:2] / digest


async def _filled(root: Path, n: int = 5) -> None:
    store = await _store(root)
    await store.upsert("alice", _records(n))
    await store.upsert("bob", _records(2, "b"))
    await store.delete("alice", ["m0"])
    await store.stop()


def test_the_checksum_ignores_order_and_undoes_itself() -> None:
    ids = [point_id("alice", f"m{i}") for i in range(4)]
    assert checksum_of(ids) == checksum_of(reversed(ids))
    assert checksum_of(ids) ^ checksum_of(ids[:1]) == checksum_of(ids[1:])


async def test_the_manifest_follows_writes_and_deletes(tmp_path: Path) -> None:
    await _filled(tmp_path)
    manifest = ShardManifest(tmp_path / "shards" / "memories" / "manifest.sqlite3")
    record = manifest.record(user_digest("alice"))
    assert record is not None and record.user == "alice"
    assert record.points == 4 and record.pending_points is None
    ids = manifest.point_ids(user_digest("alice"))
    assert ids == {point_id("alice", f"m{i}") for i in range(1, 5)}
    assert record.checksum == f"{checksum_of(ids):032x}"
    manifest.close()


async def test_an_intact_store_checks_clean_and_opens(tmp_path: Path) -> None:
    await _filled(tmp_path)
    store = await _store(tmp_path)
    try:
        assert await store.check_people() == []
        assert await store.count("alice") == 4
    finally:
        await store.stop()


async def test_a_deleted_store_is_named_at_the_check_and_refused(tmp_path: Path) -> None:
    await _filled(tmp_path)
    shutil.rmtree(_shard(tmp_path, "alice"))
    store = await _store(tmp_path)
    try:
        [damage] = await store.check_people()
        assert damage.user == "alice" and damage.memories == 4
        assert damage.what == "the store directory is missing"
        assert damage.where == str(_shard(tmp_path, "alice"))
        with pytest.raises(PersonMemoryUnavailable, match="omoide memory repair"):
            await store.scroll("alice")
        with pytest.raises(PersonMemoryUnavailable):
            await store.upsert("alice", _records(1, "new"))
        assert await store.count("bob") == 2            # everyone else goes on
        assert set(store.damaged_people) == {"alice"}
    finally:
        await store.stop()


async def test_a_new_store_cut_off_while_it_was_made_is_made_again(tmp_path: Path) -> None:
    # a kill inside the local engine's first write of a new store leaves an empty
    # meta.json and nothing else: the store never held anything, so it is not damage
    await _filled(tmp_path)
    unmade = _shard(tmp_path, "carol")
    unmade.mkdir(parents=True)
    (unmade / "meta.json").write_text("")
    store = await _store(tmp_path)
    try:
        assert await store.check_people() == []
        await store.upsert("carol", _records(3, "c"))
        assert await store.count("carol") == 3
        assert "carol" not in store.damaged_people
    finally:
        await store.stop()
    assert json.loads((unmade / "meta.json").read_text())["collections"]


async def test_an_emptied_meta_json_of_a_store_that_held_memories_is_still_refused(
        tmp_path: Path) -> None:
    await _filled(tmp_path)
    (_shard(tmp_path, "alice") / "meta.json").write_text("")
    store = await _store(tmp_path)
    try:
        [damage] = await store.check_people()
        assert damage.user == "alice" and "meta.json is damaged" in damage.what
        with pytest.raises(PersonMemoryUnavailable):
            await store.count("alice")
        assert await store.count("bob") == 2
    finally:
        await store.stop()


async def test_a_damaged_sqlite_header_is_named_at_the_check(tmp_path: Path) -> None:
    await _filled(tmp_path)
    storage = _shard(tmp_path, "alice") / "collection" / "memories" / "storage.sqlite"
    with storage.open("r+b") as f:
        f.write(b"\0" * 16)
    store = await _store(tmp_path)
    try:
        [damage] = await store.check_people()
        assert "storage.sqlite is damaged" in damage.what
    finally:
        await store.stop()


async def test_a_store_holding_fewer_points_than_recorded_is_refused_when_opened(
        tmp_path: Path) -> None:
    await _filled(tmp_path)
    storage = _shard(tmp_path, "alice") / "collection" / "memories" / "storage.sqlite"
    db = sqlite3.connect(storage)                     # a point gone behind our back
    db.execute("DELETE FROM points WHERE rowid = (SELECT MIN(rowid) FROM points)")
    db.commit()
    db.close()
    store = await _store(tmp_path)
    try:
        assert await store.check_people() == []          # the files look whole
        with pytest.raises(PersonMemoryUnavailable, match="holds 3 memories where the"
                                                          " manifest recorded 4"):
            await store.count("alice")
        assert "alice" in store.damaged_people
    finally:
        await store.stop()


async def test_an_interrupted_write_is_not_taken_for_damage(tmp_path: Path) -> None:
    await _filled(tmp_path)
    manifest = ShardManifest(tmp_path / "shards" / "memories" / "manifest.sqlite3")
    # the record of a write that never reached the store (a crash in between)
    manifest.begin(user_digest("alice"), "alice", [point_id("alice", "lost-write")])
    manifest.close()
    store = await _store(tmp_path)
    try:
        assert await store.count("alice") == 4
        again = ShardManifest(tmp_path / "shards" / "memories" / "manifest.sqlite3")
        record = again.record(user_digest("alice"))
        assert record is not None and record.points == 4 and record.pending_points is None
        again.close()
    finally:
        await store.stop()


async def test_a_store_from_before_manifests_is_adopted_as_it_is(tmp_path: Path) -> None:
    await _filled(tmp_path)
    (tmp_path / "shards" / "memories" / "manifest.sqlite3").unlink()
    store = await _store(tmp_path)
    try:
        assert await store.check_people() == []
        assert await store.count("alice") == 4
        assert await store.check_people() == []
    finally:
        await store.stop()


async def test_a_rebuild_restores_only_what_was_recorded(tmp_path: Path) -> None:
    await _filled(tmp_path)
    shutil.rmtree(_shard(tmp_path, "alice"))
    store = await _store(tmp_path)
    try:
        await store.check_people()
        # the journal knows m0..m3 (m0 was forgotten since); m4 it never knew
        report = await store.rebuild_person("alice", _records(4))
        assert (report.restored, report.not_restored, report.left_out) == (3, 1, 1)
        assert store.damaged_people == {}
        assert sorted(r.id for r in await store.scroll("alice")) == ["m1", "m2", "m3"]
        assert await store.check_people() == []
    finally:
        await store.stop()


async def test_a_rebuild_keeps_what_a_damaged_store_still_holds(tmp_path: Path) -> None:
    await _filled(tmp_path)
    storage = _shard(tmp_path, "alice") / "collection" / "memories" / "storage.sqlite"
    db = sqlite3.connect(storage)
    db.execute("DELETE FROM points WHERE rowid = (SELECT MIN(rowid) FROM points)")
    db.commit()
    db.close()
    store = await _store(tmp_path)
    try:
        with pytest.raises(PersonMemoryUnavailable):
            await store.count("alice")
        report = await store.rebuild_person("alice", [])      # nothing in the journal
        assert (report.restored, report.not_restored) == (3, 1)
        assert report.set_aside is not None and Path(report.set_aside).is_dir()
        assert await store.count("alice") == 3
    finally:
        await store.stop()
