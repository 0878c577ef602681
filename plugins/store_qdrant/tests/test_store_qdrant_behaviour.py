"""What the `qdrant` store promises beyond the contract: isolation at scale, ids, locking."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from omoide.errors import ComponentError, InvalidInput
from omoide.types import EmbedderFingerprint, VectorRecord
from omoide_store_qdrant.config import QdrantStoreConfig
from omoide_store_qdrant.store import QdrantStore, point_id

DIMS = 16
FINGERPRINT = EmbedderFingerprint("test-model", DIMS, "probe", tuple([1.0] + [0.0] * (DIMS - 1)))


def _unit_rows(n: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, DIMS)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


async def _started(config: dict[str, object]) -> QdrantStore:
    store = QdrantStore(QdrantStoreConfig.model_validate(config))
    await store.start()
    await store.open(FINGERPRINT)
    return store


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[QdrantStore]:
    s = await _started({"path": str(tmp_path / "q")})
    yield s
    await s.stop()


@pytest.fixture
async def memory_store() -> AsyncIterator[QdrantStore]:
    """In memory: the same filters as local mode without its one-SQLite-commit-per-point."""
    s = await _started({"location": ":memory:"})
    yield s
    await s.stop()


@pytest.fixture(params=["collection", "payload"])
async def any_layout_store(request: pytest.FixtureRequest) -> AsyncIterator[QdrantStore]:
    """In memory, in each partition layout (per-user collections; one shared collection)."""
    s = await _started({"location": ":memory:", "partition": request.param})
    yield s
    await s.stop()


def _records(n: int, prefix: str) -> list[VectorRecord]:
    return [VectorRecord(f"{prefix}{i}", row, {"text": f"{prefix}{i}"})
            for i, row in enumerate(_unit_rows(n, seed=n))]


async def test_two_users_with_identical_records_never_see_each_other_at_high_limits(
        any_layout_store: QdrantStore) -> None:
    store = any_layout_store
    vectors = _unit_rows(300, seed=5)
    for user in ("alice", "bob"):
        # Same ids, same vectors, same texts for both users: only the filter tells them apart.
        await store.upsert(user, [VectorRecord(f"m{i}", vectors[i], {"text": f"t{i}",
                                                                      "owner": user})
                                  for i in range(len(vectors))])
    for user in ("alice", "bob"):
        for q in vectors[:20]:
            hits = await store.search(user, q, limit=10_000)
            assert len(hits) == 300
            assert {h.payload["owner"] for h in hits} == {user}
        assert await store.count(user) == 300
        assert {r.payload["owner"] for r in await store.scroll(user)} == {user}


async def test_the_same_record_id_for_two_users_is_two_points(store: QdrantStore) -> None:
    v = _unit_rows(2, seed=1)
    await store.upsert("alice", [VectorRecord("shared-id", v[0], {"text": "alice's"})])
    await store.upsert("bob", [VectorRecord("shared-id", v[1], {"text": "bob's"})])
    assert point_id("alice", "shared-id") != point_id("bob", "shared-id")
    [alice] = await store.get("alice", ["shared-id"])
    assert alice.payload == {"text": "alice's"}
    await store.delete("bob", ["shared-id"])
    assert [r.payload["text"] for r in await store.get("alice", ["shared-id"])] == ["alice's"]
    assert await store.get("bob", ["shared-id"]) == []


async def test_payload_keys_named_like_internal_fields_round_trip(store: QdrantStore) -> None:
    payload = {"user": "someone else", "id": 7, "payload": {"nested": [1, 2]}, "text": "x"}
    await store.upsert("alice", [VectorRecord("r1", _unit_rows(1, 2)[0], payload)])
    [got] = await store.get("alice", ["r1"])
    assert got.id == "r1" and got.payload == payload
    assert await store.count("someone else") == 0


async def test_where_matches_strings_bools_floats_and_none(store: QdrantStore) -> None:
    v = _unit_rows(4, seed=3)
    await store.upsert("alice", [
        VectorRecord("a", v[0], {"kind": "plan", "done": False, "w": 0.5, "end": None}),
        VectorRecord("b", v[1], {"kind": "fact", "done": True, "w": 1.5, "end": "x"}),
    ])
    async def ids(where: dict[str, object]) -> list[str]:
        return [h.id for h in await store.search("alice", v[0], limit=10, where=where)]
    assert await ids({"kind": "fact"}) == ["b"]
    assert await ids({"done": False}) == ["a"]
    assert await ids({"w": 1.5}) == ["b"]
    assert await ids({"end": None}) == ["a"]
    assert await ids({"kind": "plan", "done": True}) == []


async def test_where_with_a_list_value_is_invalid_input(store: QdrantStore) -> None:
    with pytest.raises(InvalidInput):
        await store.search("alice", _unit_rows(1, 0)[0], limit=3, where={"tags": ["a"]})


async def test_records_and_fingerprint_survive_a_restart(tmp_path: Path) -> None:
    config = {"path": str(tmp_path / "q")}
    first = await _started(config)
    await first.upsert("alice", [VectorRecord("r1", _unit_rows(1, 4)[0], {"text": "kept"})])
    await first.stop()
    second = QdrantStore(QdrantStoreConfig.model_validate(config))
    await second.start()
    try:
        fp = await second.fingerprint()
        assert fp is not None and fp.model == "test-model"
        await second.open(FINGERPRINT)
        assert [r.payload["text"] for r in await second.scroll("alice")] == ["kept"]
    finally:
        await second.stop()


async def test_a_path_open_elsewhere_is_a_clear_error_naming_it(tmp_path: Path,
                                                                store: QdrantStore) -> None:
    path = store.config.path
    other = QdrantStore(QdrantStoreConfig.model_validate({"path": path}))
    with pytest.raises(ComponentError, match="another process") as info:
        await other.start()
    assert str(path) in str(info.value)
    await other.stop()


async def test_reset_drops_records_and_fingerprint(store: QdrantStore) -> None:
    await store.upsert("alice", [VectorRecord("r1", _unit_rows(1, 6)[0], {"text": "x"})])
    await store.reset()
    assert await store.fingerprint() is None
    await store.open(FINGERPRINT)
    assert await store.count("alice") == 0


@pytest.mark.parametrize("config", [
    {},
    {"path": "/tmp/a", "location": ":memory:"},
    {"path": "/tmp/a", "url": "http://localhost:6333"},
    {"location": "somewhere"},
    {"path": "/tmp/a", "prefer_grpc": True},
])
def test_config_needs_exactly_one_place(config: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        QdrantStoreConfig.model_validate(config)


def test_config_refuses_a_literal_api_key() -> None:
    with pytest.raises(ValueError, match=r"\$env"):
        QdrantStoreConfig.model_validate({"url": "http://localhost:6333", "api_key": "abc"})


async def test_an_unreachable_server_is_a_retryable_component_error() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    store = QdrantStore(QdrantStoreConfig.model_validate(
        {"url": f"http://127.0.0.1:{port}", "retries": 0, "timeout_s": 5}))
    await store.start()
    with pytest.raises(ComponentError) as info:
        await store.open(FINGERPRINT)
    assert info.value.retryable
    await store.stop()


async def test_embedded_mode_keeps_each_user_in_a_collection_of_their_own(
        store: QdrantStore) -> None:
    await store.upsert("alice", _records(2, "a"))
    await store.upsert("bob", _records(3, "b"))
    client = store._client
    assert client is not None
    names = sorted(c.name for c in client.get_collections().collections)
    per_user = [n for n in names if "__u_" in n]
    assert len(per_user) == 2
    assert store._collection_for("alice") in per_user
    assert store._collection_for("bob") in per_user
    assert "alice" not in "".join(per_user)  # names are hashes, not user ids
    assert client.count(store._collection_for("bob")).count == 3


async def test_reset_drops_every_users_collection(store: QdrantStore) -> None:
    await store.upsert("alice", _records(2, "a"))
    await store.reset()
    client = store._client
    assert client is not None
    assert [c.name for c in client.get_collections().collections] == []
