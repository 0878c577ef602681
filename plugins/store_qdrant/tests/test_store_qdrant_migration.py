"""A local directory in the earlier layout (every user's collection in one local-mode
store) still opens: it is moved into per-user stores at start, losing nothing."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from omoide.types import EmbedderFingerprint, VectorRecord
from omoide_store_qdrant.config import QdrantStoreConfig
from omoide_store_qdrant.shards import ShardPool, user_digest
from omoide_store_qdrant.store import FINGERPRINT_POINT, QdrantStore, point_id

DIMS = 8
FINGERPRINT = EmbedderFingerprint("old-model", DIMS, "probe", tuple([1.0] + [0.0] * (DIMS - 1)))


def _vectors(n: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, DIMS)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def write_earlier_layout(path: Path, people: dict[str, int], *, shared: bool = False,
                         other: bool = False) -> dict[str, list[VectorRecord]]:
    """The directory the earlier store wrote: `<collection>__meta` with the fingerprint
    point, and `<collection>__u_<digest>` per user (or one shared `<collection>`), each
    point under `point_id(user, id)` with payload {user, id, payload}."""
    from qdrant_client import QdrantClient
    from qdrant_client.http import models as qm

    client = QdrantClient(path=str(path))
    client.create_collection("memories__meta", vectors_config=qm.VectorParams(
        size=1, distance=qm.Distance.DOT))
    client.upsert("memories__meta", [qm.PointStruct(id=FINGERPRINT_POINT, vector=[0.0],
                                                    payload=FINGERPRINT.to_json())])
    written: dict[str, list[VectorRecord]] = {}
    if shared:
        client.create_collection("memories", vectors_config=qm.VectorParams(
            size=DIMS, distance=qm.Distance.COSINE))
    for seed, (user, n) in enumerate(people.items()):
        records = [VectorRecord(f"m{i}", v, {"text": f"{user} {i}"})
                   for i, v in enumerate(_vectors(n, seed))]
        written[user] = records
        name = "memories" if shared else f"memories__u_{user_digest(user)}"
        if not shared:
            client.create_collection(name, vectors_config=qm.VectorParams(
                size=DIMS, distance=qm.Distance.COSINE))
        client.upsert(name, [qm.PointStruct(
            id=point_id(user, r.id), vector=r.vector.tolist(),
            payload={"user": user, "id": r.id, "payload": r.payload}) for r in records])
    if other:
        client.create_collection("someone_elses", vectors_config=qm.VectorParams(
            size=2, distance=qm.Distance.DOT))
        client.upsert("someone_elses", [qm.PointStruct(id=1, vector=[1.0, 0.0])])
    client.close()
    return written


async def _open(path: Path) -> QdrantStore:
    store = QdrantStore(QdrantStoreConfig.model_validate({"path": str(path)}))
    await store.start()
    return store


async def _assert_everything_readable(store: QdrantStore,
                                      written: dict[str, list[VectorRecord]]) -> None:
    for user, records in written.items():
        got = {r.id: r for r in await store.scroll(user)}
        assert set(got) == {r.id for r in records}
        for r in records:
            assert got[r.id].payload == r.payload
            np.testing.assert_allclose(got[r.id].vector, r.vector, atol=1e-5)
        [hit] = await store.search(user, records[0].vector, limit=1)
        assert hit.id == records[0].id


async def test_every_record_and_the_fingerprint_survive_the_move(tmp_path: Path) -> None:
    written = write_earlier_layout(tmp_path / "q", {"alice": 5, "bob": 3, "carol": 1})
    store = await _open(tmp_path / "q")
    try:
        fingerprint = await store.fingerprint()
        assert fingerprint is not None and fingerprint.model == "old-model"
        await store.open(FINGERPRINT)
        await _assert_everything_readable(store, written)
    finally:
        await store.stop()


async def test_the_earlier_files_are_gone_after_the_move(tmp_path: Path) -> None:
    write_earlier_layout(tmp_path / "q", {"alice": 2})
    store = await _open(tmp_path / "q")
    await store.stop()
    assert not (tmp_path / "q" / "meta.json").exists()
    assert not (tmp_path / "q" / "collection").exists()


async def test_a_shared_collection_is_split_by_user(tmp_path: Path) -> None:
    written = write_earlier_layout(tmp_path / "q", {"alice": 4, "bob": 2}, shared=True)
    store = await _open(tmp_path / "q")
    try:
        await store.open(FINGERPRINT)
        await _assert_everything_readable(store, written)
        assert await store.count("alice") == 4
    finally:
        await store.stop()


async def test_collections_that_are_not_ours_stay_where_they_are(tmp_path: Path) -> None:
    from qdrant_client import QdrantClient

    write_earlier_layout(tmp_path / "q", {"alice": 2}, other=True)
    store = await _open(tmp_path / "q")
    await store.stop()
    client = QdrantClient(path=str(tmp_path / "q"))
    try:
        assert [c.name for c in client.get_collections().collections] == ["someone_elses"]
    finally:
        client.close()


async def test_a_move_interrupted_halfway_completes_without_duplicates(tmp_path: Path) -> None:
    from qdrant_client.http import models as qm

    written = write_earlier_layout(tmp_path / "q", {"alice": 6, "bob": 2})
    # a first run copied half of alice's points, then the process died
    pool = ShardPool(tmp_path / "q", "memories", max_open=4)
    shard = pool.client("alice", create_dims=DIMS)
    assert shard is not None
    shard.upsert("memories", [qm.PointStruct(
        id=point_id("alice", r.id), vector=r.vector.tolist(),
        payload={"user": "alice", "id": r.id, "payload": r.payload})
        for r in written["alice"][:3]])
    pool.close()
    store = await _open(tmp_path / "q")
    try:
        await store.open(FINGERPRINT)
        assert await store.count("alice") == 6
        await _assert_everything_readable(store, written)
    finally:
        await store.stop()


async def test_a_store_written_after_the_move_reopens_without_moving_again(
        tmp_path: Path) -> None:
    write_earlier_layout(tmp_path / "q", {"alice": 2})
    first = await _open(tmp_path / "q")
    await first.open(FINGERPRINT)
    await first.upsert("dave", [VectorRecord("d1", _vectors(1, 9)[0], {"text": "new"})])
    await first.stop()
    second = await _open(tmp_path / "q")
    try:
        await second.open(FINGERPRINT)
        assert await second.count("alice") == 2
        assert [r.payload for r in await second.scroll("dave")] == [{"text": "new"}]
    finally:
        await second.stop()


async def test_a_payload_partitioned_directory_is_left_as_it_is(tmp_path: Path) -> None:
    written = write_earlier_layout(tmp_path / "q", {"alice": 3}, shared=True)
    store = QdrantStore(QdrantStoreConfig.model_validate({"path": str(tmp_path / "q"),
                                                          "partition": "payload"}))
    await store.start()
    try:
        await store.open(FINGERPRINT)
        await _assert_everything_readable(store, written)
        assert not (tmp_path / "q" / "shards").exists()
    finally:
        await store.stop()
