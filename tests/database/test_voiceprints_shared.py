"""Contract: voiceprints answer alike in the data dir's files (``voices/<person>.json``)
and in PostgreSQL (``database.url``), and two stores opened on the same place (two
workers, or a worker and ``omoide voices``) see each other's enrolments and erasures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from omoide.voices import VoiceprintStore, open_voiceprints
from omoide.voices.shared_store import PostgresVoiceprintStore


@pytest.fixture(params=["files", "postgresql"])
def where(request: pytest.FixtureRequest) -> str | None:
    """None: the data dir's files; else the database URL."""
    if request.param == "files":
        return None
    return str(request.getfixturevalue("postgres_url"))


def unit(seed: int, dims: int = 8) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=dims).astype(np.float32)
    return v / np.linalg.norm(v)


@pytest.fixture
def voices(where: str | None, tmp_path: Path) -> Iterator[Callable[[], VoiceprintStore]]:
    opened: list[VoiceprintStore] = []

    def make() -> VoiceprintStore:
        store = open_voiceprints(tmp_path / "data", where)
        opened.append(store)
        return store

    yield make
    for store in opened:
        if isinstance(store, PostgresVoiceprintStore):
            store.close()


def test_a_voice_enrolled_on_one_worker_is_known_to_the_other(
        where: str | None, voices: Callable[[], VoiceprintStore]) -> None:
    a, b = voices(), voices()
    assert isinstance(a, PostgresVoiceprintStore) == (where is not None)
    assert b.people() == [] and b.enrolled(["alice"], "m1") == {}
    a.enrol("alice", "m1", [unit(1), unit(2)], source="api")
    [print_b] = b.voiceprints("alice")
    assert print_b.model_id == "m1" and len(print_b.vectors) == 2
    assert np.allclose(print_b.vectors[0], unit(1), atol=1e-5)

    b.enrol("alice", "m1", [unit(3)], source="console")   # b adds to what a enrolled
    assert len(a.enrolled(["alice", "bob"], "m1")["alice"].vectors) == 3
    assert a.voiceprints("alice")[0].source == "console"
    assert a.people() == ["alice"]
    assert a.export("alice") == b.export("alice")

    assert a.erase("alice") == 1
    assert b.voiceprints("alice") == [] and b.people() == []


def test_two_workers_enrolling_one_person_at_once_both_count(postgres_url: str) -> None:
    workers = [PostgresVoiceprintStore(postgres_url, pool_size=2) for _ in range(2)]
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(lambda n: workers[n % 2].enrol("alice", "m1", [unit(n)],
                                                         source="api"), range(8)))
        [stored] = workers[0].voiceprints("alice")
        assert len(stored.vectors) == 8
        assert {tuple(np.round(v, 4)) for v in stored.vectors} == {
            tuple(np.round(unit(n), 4)) for n in range(8)}
    finally:
        for store in workers:
            store.close()
