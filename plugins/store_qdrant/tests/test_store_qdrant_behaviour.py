"""What the `qdrant` store promises beyond the contract: point ids, None filters, locking,
restarts, per-user collections in embedded mode."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from omoide.errors import ComponentError, InvalidInput
from omoide.types import EmbedderFingerprint, VectorRecord
from omoide_store_qdrant.config import QdrantStoreConfig
from omoide_store_qdrant.shards import user_digest
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


def _records(n: int, prefix: str) -> list[VectorRecord]:
    return [VectorRecord(f"{prefix}{i}", row, {"text": f"{prefix}{i}"})
            for i, row in enumerate(_unit_rows(n, seed=n))]


def test_point_ids_mix_in_the_user_so_one_record_id_is_two_points() -> None:
    assert point_id("alice", "shared-id") != point_id("bob", "shared-id")
    assert point_id("alice", "shared-id") == point_id("alice", "shared-id")


async def test_where_matches_none(store: QdrantStore) -> None:
    v = _unit_rows(2, seed=3)
    await store.upsert("alice", [VectorRecord("a", v[0], {"end": None}),
                                 VectorRecord("b", v[1], {"end": "x"})])
    hits = await store.search("alice", v[0], limit=10, where={"end": None})
    assert [h.id for h in hits] == ["a"]


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


async def test_a_local_directory_keeps_each_user_in_a_store_of_their_own(
        store: QdrantStore, tmp_path: Path) -> None:
    await store.upsert("alice", _records(2, "a"))
    await store.upsert("bob", _records(3, "b"))
    stores = sorted(p.name for p in (tmp_path / "q" / "shards" / "memories").glob("*/*"))
    assert stores == sorted([user_digest("alice"), user_digest("bob")])
    assert "alice" not in "".join(stores)  # names are hashes, not user ids
    assert await store.count("bob") == 3


async def test_nothing_is_opened_at_start(tmp_path: Path) -> None:
    config = {"path": str(tmp_path / "q")}
    first = await _started(config)
    for user in ("alice", "bob", "carol"):
        await first.upsert(user, _records(2, user))
    await first.stop()
    second = await _started(config)
    try:
        assert second.describe()["people_open"] == 0
        assert await second.count("bob") == 2
        assert second.describe()["people_open"] == 1
    finally:
        await second.stop()


async def test_at_most_max_open_people_stay_open_and_the_rest_reopen_on_demand(
        tmp_path: Path) -> None:
    store = await _started({"path": str(tmp_path / "q"), "max_open_people": 2})
    try:
        users = [f"user{i}" for i in range(5)]
        for i, user in enumerate(users):
            await store.upsert(user, _records(i + 1, user))
            assert store.describe()["people_open"] <= 2
        for i, user in enumerate(users):
            assert await store.count(user) == i + 1
            assert len(await store.scroll(user)) == i + 1
        assert store.describe()["people_open"] == 2
    finally:
        await store.stop()


async def test_reading_someone_with_nothing_stored_creates_nothing(
        store: QdrantStore, tmp_path: Path) -> None:
    assert await store.search("nobody", _unit_rows(1, 0)[0], limit=3) == []
    assert await store.count("nobody") == 0
    assert await store.scroll("nobody") == []
    assert not (tmp_path / "q" / "shards" / "memories" / user_digest("nobody")[:2]).exists()


async def test_reset_drops_every_users_store(store: QdrantStore, tmp_path: Path) -> None:
    await store.upsert("alice", _records(2, "a"))
    await store.reset()
    assert not (tmp_path / "q" / "shards" / "memories").exists()
    await store.open(FINGERPRINT)
    assert await store.count("alice") == 0


async def test_memory_mode_keeps_each_user_in_a_collection_of_their_own() -> None:
    store = await _started({"location": ":memory:"})
    try:
        await store.upsert("alice", _records(2, "a"))
        await store.upsert("bob", _records(3, "b"))
        client = store._client
        assert client is not None
        names = sorted(c.name for c in client.get_collections().collections)
        assert [n for n in names if "__u_" in n] == sorted(
            [f"memories__u_{user_digest('alice')}", f"memories__u_{user_digest('bob')}"])
    finally:
        await store.stop()
