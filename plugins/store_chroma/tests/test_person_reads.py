"""Reads of whole people that wait for the Chroma store's worker are answered together."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from omoide.types import EmbedderFingerprint, Priority, VectorRecord
from omoide_store_chroma.config import ChromaStoreConfig
from omoide_store_chroma.person_reads import PersonReads
from omoide_store_chroma.store import ChromaStore


class RecordingGet:
    """Test double of a Chroma ``get`` over a fixed table: records each call's people."""

    def __init__(self, rows: dict[str, int], fail: Exception | None = None) -> None:
        self.rows = rows
        self.fail = fail
        self.calls: list[list[str]] = []

    def __call__(self, users: list[str], limit: int) -> dict[str, Any]:
        self.calls.append(list(users))
        if self.fail is not None:
            raise self.fail
        table = [(u, n) for u in users for n in range(self.rows.get(u, 0))][:limit]
        return {"ids": [f"{u}-{n}" for u, n in table],
                "metadatas": [{"user": u, "id": f"r{n}"} for u, n in table],
                "embeddings": [[float(n)] for _, n in table]}


def test_waiting_reads_share_one_call_and_each_gets_only_its_own_person() -> None:
    reads = PersonReads(most_people=8)
    get = RecordingGet({"ann": 3, "bob": 2, "cy": 0})
    first = reads.add("ann", 10, Priority.INTERACTIVE)
    others = [reads.add("bob", 10, Priority.BATCH), reads.add("cy", 10, Priority.INTERACTIVE)]

    reads.serve(first, get)

    assert get.calls == [["ann", "cy", "bob"]]  # the interactive read goes before the batch one
    got = {r.user: r.done.result() for r in [first, *others]}
    assert got["ann"] is not None and got["ann"]["ids"] == ["ann-0", "ann-1", "ann-2"]
    assert got["bob"] is not None and len(got["bob"]["ids"]) == 2
    assert got["cy"] is not None and len(got["cy"]["ids"]) == 0
    for r in others:  # their own turn on the worker finds nothing left to do
        reads.serve(r, get)
    assert len(get.calls) == 1


def test_a_person_with_more_than_wanted_gets_none() -> None:
    reads = PersonReads()
    read = reads.add("ann", 2, Priority.INTERACTIVE)
    reads.serve(read, RecordingGet({"ann": 5}))
    assert read.done.result() is None


def test_a_call_filled_to_its_limit_is_asked_again_person_by_person() -> None:
    # ann's 50 rows fill the call before bob's come: bob must not look empty
    reads = PersonReads()
    get = RecordingGet({"ann": 50, "bob": 2})
    ann, bob = reads.add("ann", 3, Priority.INTERACTIVE), reads.add("bob", 3, Priority.INTERACTIVE)
    reads.serve(ann, get)
    assert get.calls == [["ann", "bob"], ["ann"], ["bob"]]
    assert ann.done.result() is None
    bob_entries = bob.done.result()
    assert bob_entries is not None and bob_entries["ids"] == ["bob-0", "bob-1"]


def test_one_call_reads_at_most_most_people() -> None:
    reads = PersonReads(most_people=2)
    get = RecordingGet({})
    first = reads.add("a", 5, Priority.INTERACTIVE)
    rest = [reads.add(u, 5, Priority.INTERACTIVE) for u in ("b", "a", "c")]
    reads.serve(first, get)
    assert get.calls == [["a", "b"]]  # a's second read rides along; c waits for its own call
    assert [r.done.done() for r in rest] == [True, True, False]


def test_a_failed_call_fails_every_read_in_it_and_a_dropped_read_is_not_asked() -> None:
    reads = PersonReads()
    get = RecordingGet({}, fail=ConnectionError("down"))
    ann, bob, gone = (reads.add(u, 5, Priority.INTERACTIVE) for u in ("ann", "bob", "gone"))
    reads.drop(gone)
    reads.serve(ann, get)
    assert get.calls == [["ann", "bob"]]
    for r in (ann, bob):
        with pytest.raises(ConnectionError):
            r.done.result()


DIMS = 8
FINGERPRINT = EmbedderFingerprint("test-model", DIMS, "probe", tuple([1.0] + [0.0] * (DIMS - 1)))


async def test_concurrent_searches_and_first_pages_answer_as_one_by_one(tmp_path: Path) -> None:
    store = ChromaStore(ChromaStoreConfig.model_validate({"path": str(tmp_path / "c")}))
    await store.start()
    await store.open(FINGERPRINT)
    try:
        rng = np.random.default_rng(3)
        people = [f"p{i}" for i in range(12)]
        for i, user in enumerate(people):
            rows = rng.standard_normal((3 + i, DIMS)).astype(np.float32)
            await store.upsert(user, [VectorRecord(f"r{k}", rows[k], {"k": k})
                                      for k in range(len(rows))])
        query = rng.standard_normal(DIMS).astype(np.float32)
        alone = [[h.id for h in await store.search(u, query, 4)] for u in people]
        pages_alone = [sorted(r.id for r in (await store.scroll_page(u, None, 8)).records)
                       for u in people]

        together = await asyncio.gather(*(store.search(u, query, 4) for u in people))
        pages = await asyncio.gather(*(store.scroll_page(u, None, 8) for u in people))

        assert [[h.id for h in hits] for hits in together] == alone
        assert [sorted(r.id for r in p.records) for p in pages] == pages_alone
        # a person who fits the page is read whole; a larger one goes on from a cursor
        assert [p.cursor is None for p in pages] == [3 + i <= 8 for i in range(12)]
        assert all(len(p.records) == min(3 + i, 8) for i, p in enumerate(pages))
    finally:
        await store.stop()
