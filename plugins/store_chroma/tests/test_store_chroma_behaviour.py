"""What the `chroma` store promises beyond the contract: isolation at scale, payloads, config."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from omoide.errors import InvalidInput
from omoide.types import EmbedderFingerprint, VectorRecord
from omoide_store_chroma.config import ChromaStoreConfig
from omoide_store_chroma.store import ChromaStore, entry_id

DIMS = 16
FINGERPRINT = EmbedderFingerprint("test-model", DIMS, "probe", tuple([1.0] + [0.0] * (DIMS - 1)))


def _unit_rows(n: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, DIMS)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


async def _started(config: dict[str, object]) -> ChromaStore:
    store = ChromaStore(ChromaStoreConfig.model_validate(config))
    await store.start()
    await store.open(FINGERPRINT)
    return store


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[ChromaStore]:
    s = await _started({"path": str(tmp_path / "c")})
    yield s
    await s.stop()


async def test_two_users_with_identical_records_never_see_each_other_at_high_limits(
        store: ChromaStore) -> None:
    vectors = _unit_rows(300, seed=5)
    for user in ("alice", "bob"):
        # Same ids, same vectors, same texts for both users: only the filter tells them apart.
        await store.upsert(user, [VectorRecord(f"m{i}", vectors[i], {"text": f"t{i}",
                                                                      "owner": user})
                                  for i in range(len(vectors))])
    for user in ("alice", "bob"):
        for q in vectors[:10]:
            hits = await store.search(user, q, limit=1000)
            assert len(hits) == 300
            assert {h.payload["owner"] for h in hits} == {user}
        assert await store.count(user) == 300
        assert {r.payload["owner"] for r in await store.scroll(user)} == {user}


async def test_the_same_record_id_for_two_users_is_two_entries(store: ChromaStore) -> None:
    v = _unit_rows(2, seed=1)
    await store.upsert("alice", [VectorRecord("shared-id", v[0], {"text": "alice's"})])
    await store.upsert("bob", [VectorRecord("shared-id", v[1], {"text": "bob's"})])
    assert entry_id("alice", "shared-id") != entry_id("bob", "shared-id")
    await store.delete("bob", ["shared-id"])
    assert [r.payload["text"] for r in await store.get("alice", ["shared-id"])] == ["alice's"]
    assert await store.get("bob", ["shared-id"]) == []


async def test_nested_and_empty_payload_values_round_trip(store: ChromaStore) -> None:
    payload = {"user": "someone else", "tags": [], "dates": ["2026-12-05"],
               "nested": {"a": [1, {"b": None}]}, "note": None, "text": "x"}
    await store.upsert("alice", [VectorRecord("r1", _unit_rows(1, 2)[0], payload)])
    [got] = await store.get("alice", ["r1"])
    assert got.id == "r1" and got.payload == payload
    assert await store.count("someone else") == 0


async def test_where_matches_strings_bools_and_floats(store: ChromaStore) -> None:
    v = _unit_rows(2, seed=3)
    await store.upsert("alice", [
        VectorRecord("a", v[0], {"kind": "plan", "done": False, "w": 0.5}),
        VectorRecord("b", v[1], {"kind": "fact", "done": True, "w": 1.5}),
    ])

    async def ids(where: dict[str, object]) -> list[str]:
        return [h.id for h in await store.search("alice", v[0], limit=10, where=where)]

    assert await ids({"kind": "fact"}) == ["b"]
    assert await ids({"done": False}) == ["a"]
    assert await ids({"w": 1.5}) == ["b"]
    assert await ids({"kind": "plan", "done": True}) == []


async def test_scores_are_cosine_similarities(store: ChromaStore) -> None:
    v = _unit_rows(5, seed=8)
    await store.upsert("alice", [VectorRecord(f"r{i}", v[i], {}) for i in range(5)])
    hits = await store.search("alice", v[0], limit=5)
    expected = {f"r{i}": float(v[i] @ v[0]) for i in range(5)}
    for h in hits:
        assert h.score == pytest.approx(expected[h.id], abs=1e-4)


async def test_where_with_none_or_a_list_is_invalid_input(store: ChromaStore) -> None:
    for where in ({"end": None}, {"tags": ["a"]}):
        with pytest.raises(InvalidInput):
            await store.search("alice", _unit_rows(1, 0)[0], limit=3, where=where)


async def test_a_payload_that_is_not_json_is_invalid_input(store: ChromaStore) -> None:
    with pytest.raises(InvalidInput, match="r1"):
        await store.upsert("alice", [VectorRecord("r1", _unit_rows(1, 0)[0], {"x": object()})])


async def test_records_and_fingerprint_survive_a_restart(tmp_path: Path) -> None:
    config = {"path": str(tmp_path / "c")}
    first = await _started(config)
    await first.upsert("alice", [VectorRecord("r1", _unit_rows(1, 4)[0], {"text": "kept"})])
    await first.stop()
    second = ChromaStore(ChromaStoreConfig.model_validate(config))
    await second.start()
    try:
        fp = await second.fingerprint()
        assert fp is not None and fp.model == "test-model"
        await second.open(FINGERPRINT)
        assert [r.payload["text"] for r in await second.scroll("alice")] == ["kept"]
    finally:
        await second.stop()


async def test_reset_drops_records_and_fingerprint(store: ChromaStore) -> None:
    await store.upsert("alice", [VectorRecord("r1", _unit_rows(1, 6)[0], {"text": "x"})])
    await store.reset()
    assert await store.fingerprint() is None
    await store.open(FINGERPRINT)
    assert await store.count("alice") == 0


@pytest.mark.parametrize("config", [
    {},
    {"path": "/tmp/a", "host": "localhost"},
    {"path": "/tmp/a", "ssl": True},
])
def test_config_needs_exactly_one_place(config: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        ChromaStoreConfig.model_validate(config)


def test_config_refuses_a_literal_token() -> None:
    with pytest.raises(ValueError, match=r"\$env"):
        ChromaStoreConfig.model_validate({"host": "localhost", "token": "abc"})
