"""What the `chroma` store promises beyond the contract: entry ids, payload rules, restarts,
config."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from omoide.errors import InvalidInput
from omoide.types import EmbedderFingerprint, VectorRecord
from omoide_store_chroma import store as chroma_store
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


def test_entry_ids_mix_in_the_user_so_one_record_id_is_two_entries() -> None:
    assert entry_id("alice", "shared-id") != entry_id("bob", "shared-id")
    assert entry_id("alice", "shared-id") == entry_id("alice", "shared-id")


async def test_where_with_none_or_a_list_is_invalid_input(store: ChromaStore) -> None:
    for where in ({"end": None}, {"tags": ["a"]}):
        with pytest.raises(InvalidInput):
            await store.search("alice", _unit_rows(1, 0)[0], limit=3, where=where)


async def test_a_payload_that_is_not_json_is_invalid_input(store: ChromaStore) -> None:
    with pytest.raises(InvalidInput, match="r1"):
        await store.upsert("alice", [VectorRecord("r1", _unit_rows(1, 0)[0], {"x": object()})])


@pytest.mark.parametrize("exact_max", [0, 4, 1000], ids=["index", "mixed", "exact"])
async def test_search_ranks_by_cosine_whether_it_ranks_itself_or_asks_the_index(
        store: ChromaStore, exact_max: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # A person with at most EXACT_SEARCH_MAX entries under the where is ranked by omoide,
    # one with more by Chroma's index: the answer is the same either way.
    monkeypatch.setattr(chroma_store, "EXACT_SEARCH_MAX", exact_max)
    rows = _unit_rows(12, 7)
    await store.upsert("alice", [VectorRecord(f"r{i}", rows[i], {"kind": "fact" if i % 3 else
                                                                 "plan", "i": i})
                                 for i in range(10)])
    await store.upsert("bob", [VectorRecord("b", rows[10], {"kind": "fact"})])
    query = rows[11]
    scores = rows[:10] @ query

    for where, kept in (({"kind": "plan"}, (0, 3, 6, 9)), (None, range(10))):
        hits = await store.search("alice", query, limit=3, where=where)
        expected = sorted(kept, key=lambda i: -scores[i])[:3]
        assert [h.id for h in hits] == [f"r{i}" for i in expected]
        assert [h.score for h in hits] == pytest.approx([scores[i] for i in expected], abs=1e-4)
        assert all(h.payload["i"] == int(h.id[1:]) for h in hits)

    # after a forget the person may be few again; the answer still holds
    await store.delete("alice", [f"r{i}" for i in range(2, 10)])
    hits = await store.search("alice", query, limit=5)
    assert [h.id for h in hits] == sorted(["r0", "r1"], key=lambda r: -scores[int(r[1:])])


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


async def test_opening_loads_the_collection_with_a_background_read_whose_failure_is_harmless(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    # A Chroma server loads a collection on its first read (seconds for a million
    # entries): the store makes that read after opening, not the first turn.
    from chromadb.api.models.Collection import Collection
    from chromadb.errors import InternalError

    real_get = Collection.get
    warm_reads: list[object] = []

    def get(self: Collection, *args: object, **kwargs: object) -> object:
        if kwargs.get("where") == {"user": {"$eq": ""}}:
            warm_reads.append(kwargs["where"])
            raise InternalError("the server is still starting")
        return real_get(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Collection, "get", get)
    caplog.set_level("INFO", logger="omoide.store.chroma")
    store = await _started({"path": str(tmp_path / "c")})
    try:
        for _ in range(200):
            if warm_reads:
                break
            await asyncio.sleep(0.01)
        assert len(warm_reads) == 1
        await store.upsert("alice", [VectorRecord("r1", _unit_rows(1, 8)[0], {"text": "x"})])
        assert [h.id for h in await store.search("alice", _unit_rows(1, 8)[0], limit=1)] == ["r1"]
    finally:
        await store.stop()
    assert "loading the collection in the background failed" in caplog.text
