"""A person's index is small: compact postings, quantised vectors, shared words, and a
measured size per memory within what the cache's budget counts (ENTRY_BYTES)."""

from __future__ import annotations

import heapq
import pickle
import random
import tracemalloc
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import numpy as np

from omoide.memory.index.lru import ENTRY_BYTES, vector_bytes
from omoide.memory.index.person_index import UserIndex, _Credits
from omoide.memory.index.postings import (
    SET_KEPT_FROM,
    TUPLE_AT_MOST,
    MemoryNumbers,
    Postings,
)
from omoide.memory.index.quantised_vectors import QuantisedVectors
from omoide.memory.language.lexicon import analyzer
from omoide.types import Memory

WHEN = datetime(2026, 9, 27, 21, 0, tzinfo=ZoneInfo("Asia/Tokyo"))
PLACES = ["箱根", "京都", "金沢", "沖縄", "新宿", "渋谷", "横浜", "札幌", "別府", "松本"]
NAMES = ["健太", "美咲", "あや", "翔太", "亮", "真由", "大輝", "さくら", "蓮", "陽菜"]
ACTS = ["映画を観る", "ラーメンを食べる", "温泉に行く", "キャンプをする", "釣りに行く"]


def _memories(n: int, seed: int = 3) -> list[Memory]:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        said = WHEN - timedelta(days=rnd.randint(0, 700))
        d = said.date() + timedelta(days=rnd.randint(1, 40))
        text = (f"あなたは{d.month}月{d.day}日に{rnd.choice(NAMES)}と{rnd.choice(PLACES)}で"
                f"{rnd.choice(ACTS)}予定だ。")
        out.append(Memory(f"m{i}", "me", text, said))
    return out


def _unit(rng: np.random.Generator, n: int, dims: int) -> np.ndarray:
    v = rng.standard_normal((n, dims)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_postings_give_the_same_ids_however_many_memories_hold_a_key() -> None:
    postings: Postings[str] = Postings(MemoryNumbers())
    for count in (1, TUPLE_AT_MOST, TUPLE_AT_MOST + 5):
        ids = {f"m{i}" for i in range(count)}
        for mid in sorted(ids):
            postings.add(f"k{count}", mid)
            postings.add(f"k{count}", mid)  # a memory holds a key once
        assert postings.get(f"k{count}") == ids
        assert postings.count(f"k{count}") == count
    assert postings.get("nobody") is None


def test_postings_shrink_back_as_memories_leave() -> None:
    numbers = MemoryNumbers()
    postings: Postings[int] = Postings(numbers)
    for i in range(20):
        postings.add(7, f"m{i}")
    for i in range(19):
        postings.discard(7, f"m{i}")
        numbers.release(f"m{i}")
        assert postings.get(7) == {f"m{j}" for j in range(i + 1, 20)}
    postings.discard(7, "m19")
    assert 7 not in postings and postings.get(7) is None


def test_a_released_number_is_given_to_the_next_memory() -> None:
    numbers = MemoryNumbers()
    first = numbers.number("a")
    numbers.number("b")
    numbers.release("a")
    assert numbers.number("c") == first
    assert numbers.ids[first] == "c"


def test_quantised_cosines_stay_within_a_hundredth_of_the_float_ones() -> None:
    rng = np.random.default_rng(1)
    vectors = _unit(rng, 300, 384)
    query = _unit(rng, 1, 384)[0]
    store = QuantisedVectors()
    rows = [store.put(v) for v in vectors]
    exact = vectors @ query
    assert np.max(np.abs(store.similarities(query) - exact)) < 0.01
    assert np.max(np.abs(store.similarities(query, rows[:10]) - exact[:10])) < 0.01
    assert np.allclose(store.get(rows[5]), vectors[5], atol=0.01)


def test_a_freed_vector_row_is_never_a_neighbour_and_is_reused() -> None:
    rng = np.random.default_rng(2)
    vectors = _unit(rng, 5, 16)
    store = QuantisedVectors()
    rows = [store.put(v) for v in vectors]
    store.free(rows[2])
    assert store.similarities(vectors[2])[rows[2]] == -np.inf
    assert len(store) == 4
    assert store.put(vectors[2]) == rows[2]


def test_the_index_ranks_by_its_quantised_vectors_as_by_the_float_ones() -> None:
    rng = np.random.default_rng(4)
    memories = _memories(200)
    vectors = _unit(rng, 200, 64)
    idx = UserIndex("me", "Asia/Tokyo")
    for m, v in zip(memories, vectors, strict=True):
        idx.add(m, v)
    query = vectors[17] + 0.3 * _unit(rng, 1, 64)[0]
    exact = vectors @ query
    top = idx.dense_top(query, 5)
    assert set(top) == {memories[i].id for i in np.argsort(-exact)[:5]}
    idx.remove(memories[17].id)
    assert memories[17].id not in idx.dense_top(query, 5)
    assert idx.cosine([memories[17].id, memories[3].id], query).keys() == {memories[3].id}
    idx.add(memories[3])  # re-indexed without a vector: it keeps the one it had
    assert np.allclose(idx.vector(memories[3].id), vectors[3], atol=0.01)  # type: ignore[arg-type]


def test_an_indexed_memory_takes_no_more_than_the_budget_counts() -> None:
    """tracemalloc over building an index of 3,000 memories, the memories themselves
    and their 384-dimension vectors included (as the store hands them over)."""
    analyzer().analyse("ウォームアップ", query=False)  # the dictionary, before measuring
    n, dims = 3000, 384
    rng = np.random.default_rng(5)
    tracemalloc.start()
    try:
        idx = UserIndex("me", "Asia/Tokyo")
        for m in _memories(n):
            idx.add(m, _unit(rng, 1, dims)[0])
        used, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(idx) == n
    assert used / n <= ENTRY_BYTES + vector_bytes(dims)
    assert used / n <= 2048


def test_a_kept_set_follows_the_changes_of_its_key() -> None:
    postings: Postings[str] = Postings(MemoryNumbers())
    many = [f"m{i}" for i in range(SET_KEPT_FROM + 10)]
    for mid in many:
        postings.add("予定", mid)
    assert postings.get("予定") is postings.get("予定")  # made once, then kept
    postings.add("予定", "new")
    assert "new" in postings.get("予定")  # type: ignore[operator]
    postings.discard("予定", "m0")
    assert "m0" not in postings.get("予定")  # type: ignore[operator]
    copy = pickle.loads(pickle.dumps(postings))
    assert copy.get("予定") == postings.get("予定")


def _random_credits(memories: list[str]) -> tuple[_Credits, list[set[str]]]:
    rnd = random.Random(9)
    words = [set(rnd.sample(memories, rnd.randrange(50, 3000))) for _ in range(6)]
    credits = _Credits(len(memories), None)
    for i, ids in enumerate(words):
        credits.give(ids, rnd.choice([0.8, 1.0, 1.5]), i % 2 == 0, f"w{i}", 1.0)
    return credits, words


def test_each_memory_earns_the_credits_of_the_words_it_holds() -> None:
    memories = [f"m{i}" for i in range(5000)]
    credits, words = _random_credits(memories)
    matches = credits.matches(6.0, None)
    assert set(matches) == set().union(*words)
    for mid, match in matches.items():
        assert match.matched == tuple(f"w{i}" for i, ids in enumerate(words) if mid in ids)


def test_the_best_lexical_matches_are_those_a_full_sort_gives() -> None:
    memories = [f"m{i}" for i in range(5000)]
    credits, _ = _random_credits(memories)
    everything = credits.matches(6.0, None)
    for keep in (1, 100, 1024, len(everything) - 1):
        best = credits.matches(6.0, keep)
        expected = heapq.nlargest(keep, everything, key=lambda mid: everything[mid].score)
        assert len(best) == keep
        # (which of equal matches are kept is not specified)
        assert sorted(m.score for m in best.values()) == \
            sorted(everything[mid].score for mid in expected)
        assert all(everything[mid] == match for mid, match in best.items())
