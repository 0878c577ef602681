"""Per-person indexes: built on a person's first recall from bounded pages, dense recall
from the store until then, writes during a build kept, a memory budget, refreshes only
for stores other processes write."""

from __future__ import annotations

import asyncio
import gzip
import threading
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from omoide.components import ScrollPage
from omoide.memory.index.cache import ENTRY_BYTES
from omoide.memory.index.lru import vector_bytes
from omoide.memory.stage_views import DENSE_WOULD_NOT_FIT, PersonView
from omoide.testing.doubles import (
    HashEmbedder,
    HashEmbedderConfig,
    InMemoryStore,
    MemoryStoreConfig,
)
from omoide.types import EmbedPurpose, Exchange, FloatArray, Memory, Priority

JST = ZoneInfo("Asia/Tokyo")
NOW = datetime(2026, 9, 27, 21, 0, tzinfo=JST)
QUESTION = "箱根の予定覚えてる?"


def hakone(i: int, user: str = "me") -> Memory:
    return Memory(f"h{i:03d}", user, f"あなたは{i + 1}月に箱根に行く予定だ。", NOW)


def guitar(i: int, user: str = "me") -> Memory:
    return Memory(f"g{i:03d}", user, f"あなたは毎週{i}回ギターの練習をしている。", NOW)


class PagedStore(InMemoryStore):
    """The in-memory store double, recording every page read; ``gate`` (when set) holds
    every page after the first until it is opened."""

    def __init__(self, config: MemoryStoreConfig) -> None:
        super().__init__(config)
        self.pages: list[tuple[str, str | None, int]] = []
        self.gate: asyncio.Event | None = None
        self.paged = asyncio.Event()
        self.shared_store = False
        self.search_limits: list[int] = []

    async def _search(self, user: str, vector: Any, limit: int,
                      where: dict[str, Any] | None) -> Any:
        self.search_limits.append(limit)
        return await super()._search(user, vector, limit, where)

    async def _scroll_page(self, user: str, cursor: str | None, limit: int) -> ScrollPage:
        self.pages.append((user, cursor, limit))
        self.paged.set()
        if cursor is not None and self.gate is not None:
            await self.gate.wait()
        return await super()._scroll_page(user, cursor, limit)

    @property
    def shared(self) -> bool:
        return self.shared_store


class SlowQueries(HashEmbedder):
    """The hashing double, answering queries (only) after ``seconds``."""

    def __init__(self, ms: float) -> None:
        super().__init__(HashEmbedderConfig(dims=64))
        self.delay_s = ms / 1000

    async def _embed(self, texts: Sequence[str], purpose: EmbedPurpose,
                     priority: Priority) -> FloatArray:
        if purpose == "query":
            await asyncio.sleep(self.delay_s)
        return await super()._embed(texts, purpose, priority)


async def _until(condition: Any, what: str) -> None:
    """Wait for a background task to reach ``condition`` (generous, not a timing check)."""
    for _ in range(2000):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"never happened: {what}")


async def test_no_index_is_built_at_start(make_engine) -> None:  # type: ignore[no-untyped-def]
    first = await make_engine()
    await first.add_memories("me", [hakone(0)])
    await first.add_memories("you", [hakone(1, "you")])
    store = PagedStore(MemoryStoreConfig())
    engine = await make_engine(store=store)
    assert store.pages == []
    assert engine.indexes.stats().people == 0


async def test_after_a_restart_saved_indexes_load_before_anyone_asks(
        make_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = PagedStore(MemoryStoreConfig())
    first = await make_engine(store=store, data_dir=tmp_path / "data")
    for user in ("me", "you"):
        await first.add_memories(user, [hakone(0, user), guitar(1, user)])
        await first.index(user)
    await first.stop()  # saves the indexes
    again = await make_engine(store=store, data_dir=tmp_path / "data")
    again.warm_indexes()  # what a server does once its memory has started
    await again.indexes.settle()
    assert again.indexes.peek("me") is not None and again.indexes.peek("you") is not None
    assert again.indexes.loads_done == 2 and again.indexes.builds_done == 0


async def test_with_warm_people_0_a_saved_index_loads_on_its_first_turn_only(
        make_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = PagedStore(MemoryStoreConfig())
    first = await make_engine(store=store, data_dir=tmp_path / "data")
    await first.add_memories("me", [hakone(0)])
    await first.index("me")
    await first.stop()
    again = await make_engine(store=store, data_dir=tmp_path / "data",
                              index={"warm_people": 0})
    again.warm_indexes()
    await again.indexes.settle()
    assert again.indexes.peek("me") is None
    assert (await again.recall("me", QUESTION, NOW)).memories
    assert again.indexes.loads_done == 1


async def test_an_index_is_read_in_pages_of_the_configured_size(make_engine) -> None:  # type: ignore[no-untyped-def]
    store = PagedStore(MemoryStoreConfig())
    engine = await make_engine(store=store, index={"page_size": 16})
    await engine.add_memories("me", [guitar(i) for i in range(40)])
    index = await engine.index("me")
    assert len(index) == 40
    assert [(u, limit) for u, _, limit in store.pages] == [("me", 16)] * 3


async def test_a_person_whose_index_is_not_ready_gets_dense_recall_from_the_store(
        make_engine) -> None:  # type: ignore[no-untyped-def]
    store = PagedStore(MemoryStoreConfig())
    # fewer memories than the dense search returns: the hashing double ranks poorly
    engine = await make_engine(store=store, index={"page_size": 4, "first_turn_wait_share": 0})
    await engine.add_memories("me", [hakone(0)] + [guitar(i) for i in range(15)])
    store.gate = asyncio.Event()  # the build stops after its first page
    recall = await engine.recall("me", QUESTION, NOW)
    assert recall.details["index"] == "not ready: dense recall from the store"
    assert [r.memory.id for r in recall.memories] == ["h000"]
    store.gate.set()
    await engine.index("me")
    again = await engine.recall("me", QUESTION, NOW)
    assert "index" not in again.details
    assert [r.memory.id for r in again.memories] == ["h000"]


async def test_a_first_recall_uses_an_index_that_is_built_within_the_wait(
        make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(time_budget_ms=60_000, index={"first_turn_wait_share": 0.9})
    await engine.add_memories("me", [hakone(0), guitar(1)])
    recall = await engine.recall("me", QUESTION, NOW)
    assert "index" not in recall.details
    assert [r.memory.id for r in recall.memories] == ["h000"]


async def test_writes_made_during_a_build_win_over_the_pages_read_after_them(
        make_engine) -> None:  # type: ignore[no-untyped-def]
    store = PagedStore(MemoryStoreConfig())
    engine = await make_engine(store=store, index={"page_size": 4, "first_turn_wait_share": 0})
    await engine.add_memories("me", [guitar(i) for i in range(12)])
    store.gate = asyncio.Event()
    engine.indexes.request("me")
    await _until(lambda: len(store.pages) >= 2, "the build reads its second page")
    # g011 (on the last page) is forgotten and g010 rewritten while the build waits
    assert await engine.forget("me", "g011")
    await engine.add_memories("me", [Memory("g010", "me", "あなたは箱根に住んでいる。", NOW)])
    store.gate.set()
    index = await engine.index("me")
    assert "g011" not in index
    assert index.get("g010").text == "あなたは箱根に住んでいる。"  # type: ignore[union-attr]
    assert len(index) == 11


async def test_the_least_recently_used_index_is_dropped_beyond_the_budget(
        make_engine) -> None:  # type: ignore[no-untyped-def]
    per_person = 10 * (ENTRY_BYTES + vector_bytes(64))
    budget_mb = 2.5 * per_person / 2**20  # room for two people of ten memories
    engine = await make_engine(index={"budget_mb": budget_mb})
    for user in ("a", "b", "c"):
        await engine.add_memories(user, [hakone(i, user) for i in range(10)])
    await engine.index("a")
    await engine.index("b")
    await engine.recall("a", QUESTION, NOW)  # a is now more recent than b
    await engine.index("c")
    assert engine.indexes.stats().people == 2
    assert engine.indexes.peek("b") is None
    assert engine.indexes.peek("a") is not None
    assert (await engine.recall("b", QUESTION, NOW)).memories  # rebuilt on demand


async def test_an_index_larger_than_the_whole_budget_is_not_kept(make_engine) -> None:  # type: ignore[no-untyped-def]
    budget_mb = 5 * (ENTRY_BYTES + vector_bytes(64)) / 2**20  # five memories' worth
    engine = await make_engine(index={"budget_mb": budget_mb, "page_size": 4})
    await engine.add_memories("me", [hakone(0)] + [guitar(i) for i in range(15)])
    recall = await engine.recall("me", QUESTION, NOW)
    assert recall.details["index"] == "not ready: dense recall from the store"
    assert [r.memory.id for r in recall.memories] == ["h000"]
    assert len(await engine.index("me")) == 0  # once the build gave up: nothing kept
    stats = engine.indexes.stats()
    assert (stats.people, stats.too_big) == (0, 1)


async def test_an_index_over_a_shared_store_picks_up_other_processes_writes(
        make_engine) -> None:  # type: ignore[no-untyped-def]
    store = PagedStore(MemoryStoreConfig())
    store.shared_store = True
    engine = await make_engine(store=store, index={"refresh_s": 0.001})
    await engine.add_memories("me", [guitar(1)])
    await engine.index("me")
    other = await make_engine(store=store)  # another process writing the same store
    await other.add_memories("me", [hakone(0)])
    await asyncio.sleep(0.01)
    engine.indexes.peek("me")  # stale: refreshed in the background
    await _until(lambda: "h000" in (engine.indexes.peek("me") or ()), "the refresh")


async def test_a_check_against_a_shared_store_waits_while_people_are_recalling(
        make_engine, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from omoide.memory.index import shared_store_refresh
    monkeypatch.setattr(shared_store_refresh, "RENEW_PAUSE_S", 0.01)

    class CountedStore(PagedStore):
        counted = 0

        async def _count(self, user: str) -> int:
            self.counted += 1
            return await super()._count(user)

    store = CountedStore(MemoryStoreConfig())
    store.shared_store = True
    engine = await make_engine(store=store, index={"refresh_s": 0.05})
    await engine.add_memories("me", [guitar(1)])
    await engine.index("me")
    await asyncio.sleep(0.06)
    with engine.indexes.foreground.recalling():  # somebody's recall runs
        assert engine.indexes.peek("me") is not None  # due for its check
        for _ in range(3):
            await asyncio.sleep(0.01)
        assert store.counted == 0
    await _until(lambda: store.counted == 1, "the check once nobody recalls")

    await asyncio.sleep(0.06)
    with engine.indexes.foreground.recalling():  # recalls that never end ...
        engine.indexes.peek("me")
        await _until(lambda: store.counted == 2, "the check, another refresh_s later")


async def test_an_index_over_a_store_only_this_process_opens_is_never_reread(
        make_engine) -> None:  # type: ignore[no-untyped-def]
    store = PagedStore(MemoryStoreConfig())
    engine = await make_engine(store=store, index={"refresh_s": 0.001})
    await engine.add_memories("me", [guitar(1)])
    await engine.index("me")
    read = len(store.pages)
    await asyncio.sleep(0.01)
    assert engine.indexes.peek("me") is not None
    await engine.recall("me", QUESTION, NOW)
    assert len(store.pages) == read


async def test_extracted_memories_reach_a_ready_index_at_once(make_engine) -> None:  # type: ignore[no-untyped-def]
    import json

    from .conftest import fake_chat

    engine = await make_engine()
    await engine.add_memories("me", [guitar(1)])
    await engine.index("me")
    engine.chat = fake_chat(json.dumps({"facts": [
        {"text": "あなたは来月箱根に行く予定だ。", "kind": "plan"}]}, ensure_ascii=False))
    await engine.chat.start()
    await engine.record_exchange(Exchange("ex1", "me", "来月箱根に行くんだ", "いいね", NOW))
    report = await engine.extract_now("me")
    index = engine.indexes.peek("me")
    assert index is not None and report.stored[0].id in index


async def test_a_recall_whose_embedding_is_late_answers_from_the_other_channels(
        make_engine) -> None:  # type: ignore[no-untyped-def]
    slow = SlowQueries(400)
    engine = await make_engine(embedder=slow, query_embed_wait_share=0.01, time_budget_ms=2_000)
    await engine.add_memories("me", [hakone(0), guitar(1)])
    await engine.index("me")
    recall = await engine.recall("me", QUESTION, NOW)
    assert recall.details["embedding"] == "late: recalled without the dense channel"
    assert not recall.timed_out
    assert [r.memory.id for r in recall.memories] == ["h000"]


async def test_a_late_query_embedding_is_kept_for_the_next_turn(make_engine) -> None:  # type: ignore[no-untyped-def]
    slow = SlowQueries(200)
    engine = await make_engine(embedder=slow, query_embed_wait_share=0.01, time_budget_ms=2_000)
    await engine.add_memories("me", [hakone(0)])
    await engine.index("me")
    first = await engine.recall("me", QUESTION, NOW)
    assert "embedding" in first.details
    for _ in range(400):
        again = await engine.recall("me", QUESTION, NOW)
        if "embedding" not in again.details:
            break
        await asyncio.sleep(0.01)
    else:
        raise AssertionError("the late embedding never reached a later turn")
    stats = slow.query_stats()
    assert stats is not None and stats.embedded == 1  # embedded once, for every turn


async def test_with_neither_index_nor_vector_in_time_a_recall_takes_whichever_comes_first(
        make_engine) -> None:  # type: ignore[no-untyped-def]
    store = PagedStore(MemoryStoreConfig())
    slow = SlowQueries(1_500)
    engine = await make_engine(store=store, embedder=slow, time_budget_ms=2_000,
                               query_embed_wait_share=0.01,
                               index={"page_size": 4, "first_turn_wait_share": 0.01})
    await engine.add_memories("me", [hakone(0)] + [guitar(i) for i in range(6)])
    store.gate = asyncio.Event()

    async def open_gate_soon() -> None:
        await asyncio.sleep(0.1)
        assert store.gate is not None
        store.gate.set()

    opener = asyncio.create_task(open_gate_soon())
    recall = await engine.recall("me", QUESTION, NOW)
    await opener
    assert "index" not in recall.details  # the index came first ...
    assert recall.details["embedding"] == "late: recalled without the dense channel"
    assert [r.memory.id for r in recall.memories] == ["h000"]  # ... and found it


async def test_a_built_index_is_kept_out_of_full_garbage_collections(
        make_engine, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from omoide import long_lived
    from omoide.memory.index import builds
    settled: list[str] = []
    monkeypatch.setattr(long_lived, "settle", settled.append)
    monkeypatch.setattr(builds, "SETTLE_EVERY", 16)
    engine = await make_engine(index={"page_size": 8})
    await engine.add_memories("me", [guitar(i) for i in range(40)])
    await engine.index("me")
    # every 16 memories while it is built (pages of 8), then once it is installed
    assert settled == ["the index of me, 16 memories so far",
                       "the index of me, 32 memories so far", "the index of me"]


async def test_a_new_index_is_prepared_whole_before_any_reader_sees_it() -> None:
    from omoide.memory.config import IndexSettings
    from omoide.memory.index.cache import IndexCache
    from omoide.memory.index.person_index import UserIndex
    from omoide.memory.store_payload import to_payload
    from omoide.types import VectorRecord

    store = InMemoryStore(MemoryStoreConfig())
    await store.start()
    emb = HashEmbedder(HashEmbedderConfig(dims=64))
    await emb.start()
    await store.open(await emb.fingerprint())
    memories = [guitar(i) for i in range(10)]
    vectors = await emb.embed([m.text for m in memories], "document")
    await store.upsert("me", [VectorRecord(m.id, v, to_payload(m))
                              for m, v in zip(memories, vectors, strict=True)])
    cache: IndexCache | None = None
    seen: list[tuple[int, bool]] = []

    def prepare(idx: UserIndex) -> None:
        assert cache is not None
        seen.append((len(idx), cache.peek("me") is not None))

    cache = IndexCache(store, "Asia/Tokyo", IndexSettings(page_size=4), 300.0,
                       prepare=prepare)
    assert await cache.wait("me", None) is not None
    await cache.stop()
    assert seen == [(10, False)]


async def test_a_recall_without_its_index_searches_the_store_once(make_engine) -> None:  # type: ignore[no-untyped-def]
    store = PagedStore(MemoryStoreConfig())
    engine = await make_engine(store=store, index={"page_size": 4, "first_turn_wait_share": 0})
    await engine.add_memories("me", [hakone(0)] + [guitar(i) for i in range(15)])
    store.gate = asyncio.Event()
    recall = await engine.recall("me", QUESTION, NOW)
    assert recall.details["index"] == "not ready: dense recall from the store"
    # the nearest memories found for the throwaway index also serve the dense channel
    assert store.search_limits == [24]
    store.gate.set()


async def test_the_dense_search_starts_while_a_recall_still_waits_for_the_index(
        make_engine) -> None:  # type: ignore[no-untyped-def]
    store = PagedStore(MemoryStoreConfig())
    engine = await make_engine(store=store, index={"page_size": 4,
                                                   "first_turn_wait_share": 0.5})
    await engine.add_memories("me", [hakone(0)] + [guitar(i) for i in range(15)])
    store.gate = asyncio.Event()
    recall = asyncio.create_task(engine.recall("me", QUESTION, NOW))
    await _until(lambda: store.search_limits, "a store search")
    assert not recall.done()  # still waiting for the index (up to 5 s) ...
    store.gate.set()  # ... which now comes in time: the recall reads it
    result = await recall
    assert "index" not in result.details
    assert [r.memory.id for r in result.memories] == ["h000"]


async def test_a_build_whose_turn_stopped_waiting_gives_way_to_one_still_waited_for(
        make_engine) -> None:  # type: ignore[no-untyped-def]
    store = PagedStore(MemoryStoreConfig())
    engine = await make_engine(store=store, index={"page_size": 4, "concurrent_builds": 1})
    await engine.add_memories("busy", [guitar(i, "busy") for i in range(8)])
    for user in ("waited", "gave up"):
        await engine.add_memories(user, [hakone(0, user)])
    store.gate = asyncio.Event()  # "busy" holds the one slot after its first page
    indexes = engine.indexes
    indexes.request("busy")
    await _until(lambda: store.pages, "the first page of busy")
    with indexes.awaited("waited"):
        indexes.request("waited")
        with indexes.awaited("gave up"):
            indexes.request("gave up")
        # the turn of "gave up" went on without its index: its build waits at batch
        # priority, behind the build a turn still waits for (though that one asked first)
        assert indexes.queued("gave up") and indexes.queued("waited")
        # nor does its dense search of the store race the build (a build takes tens of
        # milliseconds at least: racing builds slowed turns under load)
        assert await indexes.built("gave up") is None
        store.gate.set()
        await indexes.wait("waited", None)
    await indexes.wait("gave up", None)
    assert [user for user, cursor, _ in store.pages if cursor is None] == [
        "busy", "waited", "gave up"]
    assert await indexes.built("gave up") is indexes.peek("gave up") is not None


async def test_a_recall_with_its_vector_does_not_wait_for_a_build_not_begun(
        make_engine) -> None:  # type: ignore[no-untyped-def]
    store = PagedStore(MemoryStoreConfig())
    # a minute's budget, most of it for the index: only "not begun" can end the wait early
    engine = await make_engine(store=store, time_budget_ms=60_000,
                               index={"page_size": 4, "concurrent_builds": 1,
                                      "first_turn_wait_share": 0.9})
    await engine.add_memories("busy", [guitar(i, "busy") for i in range(8)])
    await engine.add_memories("me", [hakone(0)] + [guitar(i) for i in range(3)])
    store.gate = asyncio.Event()
    engine.indexes.request("busy")  # holds the one slot
    await _until(lambda: store.pages, "the first page of busy")
    recall = asyncio.create_task(engine.recall("me", QUESTION, NOW))
    await _until(recall.done, "the recall, answered from the dense search of the store")
    result = recall.result()
    assert result.details["index"] == "not ready: dense recall from the store"
    assert [r.memory.id for r in result.memories] == ["h000"]
    store.gate.set()


def test_a_large_build_steps_aside_while_a_recall_runs(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from omoide.memory.index import foreground_recalls as foreground
    monkeypatch.setattr(foreground, "MAX_PAUSE_S", 60.0)
    fg = foreground.Foreground()
    small = threading.Thread(target=fg.step_aside, args=(foreground.LARGE_BUILD - 1,))
    large = threading.Thread(target=fg.step_aside, args=(foreground.LARGE_BUILD,))
    with fg.recalling():
        small.start()
        small.join()  # a small build never waits: the turn that started it waits for it
        large.start()
        large.join(0.05)
        assert large.is_alive()
    large.join()  # the recall ended: the build goes on
    assert not fg.busy


@pytest.fixture
def held_analysis(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """Index builds read their records, then hold before analysing them until the event
    is set (set at the end of the test in any case)."""
    from omoide.memory.index import builds
    analysing = threading.Event()
    add_page = builds._add_page

    def held(*args: Any) -> None:
        analysing.wait()
        add_page(*args)

    monkeypatch.setattr(builds, "_add_page", held)
    yield analysing
    analysing.set()


async def test_while_a_large_index_is_analysed_recalls_read_the_records_already_read(
        make_engine, held_analysis: threading.Event) -> None:  # type: ignore[no-untyped-def]
    analysing = held_analysis
    store = PagedStore(MemoryStoreConfig())
    engine = await make_engine(store=store, index={"page_size": 4, "first_turn_wait_share": 0})
    await engine.add_memories("me", [hakone(0)] + [guitar(i) for i in range(15)])
    engine.indexes.request("me")
    try:
        await _until(lambda: engine.indexes.dense("me") is not None, "the records read")
        recall = await engine.recall("me", QUESTION, NOW)
    finally:
        analysing.set()
    assert recall.details["index"] == "not ready: dense recall from the store"
    assert [r.memory.id for r in recall.memories] == ["h000"]
    assert store.search_limits == []  # the nearest came from the records, not the store
    await engine.index("me")
    assert engine.indexes.dense("me") is None  # dropped once the index is ready


async def test_a_recall_takes_its_nearest_from_the_records_being_read_not_the_store(
        make_engine, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    store = PagedStore(MemoryStoreConfig())
    engine = await make_engine(store=store, index={"page_size": 64,
                                                   "first_turn_wait_share": 0})
    await engine.add_memories("me", [hakone(0)] + [guitar(i) for i in range(10)])
    reading, read_held, asked = asyncio.Event(), asyncio.Event(), asyncio.Event()
    scroll_page = store._scroll_page

    async def held_read(*args: Any) -> ScrollPage:
        reading.set()
        await read_held.wait()  # the store is slow to answer this person's read
        return await scroll_page(*args)

    dense_loaded = engine.indexes.dense_loaded

    async def asking(user: str) -> Any:
        asked.set()
        return await dense_loaded(user)

    monkeypatch.setattr(store, "_scroll_page", held_read)
    monkeypatch.setattr(engine.indexes, "dense_loaded", asking)
    engine.indexes.request("me")
    await reading.wait()
    recall = asyncio.create_task(engine.recall("me", QUESTION, NOW))
    await asked.wait()  # the recall has its vector, not its index: it wants the nearest
    read_held.set()
    result = await recall
    assert result.details["index"] == "not ready: dense recall from the store"
    assert [r.memory.id for r in result.memories] == ["h000"]
    assert store.search_limits == []  # from the records read, not a second store call


async def test_a_recall_does_not_wait_for_a_large_index_being_analysed(
        make_engine, held_analysis: threading.Event) -> None:  # type: ignore[no-untyped-def]
    analysing = held_analysis
    store = PagedStore(MemoryStoreConfig())
    # the whole (large) budget would go to waiting for the index, were it waited for
    engine = await make_engine(store=store, time_budget_ms=600_000,
                               index={"page_size": 4, "first_turn_wait_share": 1.0})
    await engine.add_memories("me", [hakone(0)] + [guitar(i) for i in range(15)])
    engine.indexes.request("me")
    try:
        await _until(lambda: engine.indexes.dense("me") is not None, "the records read")
        # generous, not a timing check: waiting for the held analysis would never end
        recall = await asyncio.wait_for(engine.recall("me", QUESTION, NOW), 60)
    finally:
        analysing.set()
    assert recall.details["index"] == "not ready: dense recall from the store"
    assert [r.memory.id for r in recall.memories] == ["h000"]


async def test_after_a_restart_a_person_too_large_to_keep_an_index_gets_dense_recall_from_their_saved_records(
        make_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = PagedStore(MemoryStoreConfig())
    large = {"page_size": 4, "keep_max_memories": 8, "first_turn_wait_share": 0}
    first = await make_engine(store=store, data_dir=tmp_path / "data", index=large)
    await first.add_memories("me", [guitar(i) for i in range(15)] + [hakone(0)])
    await first.index("me")
    await first.indexes.settle()
    # written after the records were saved: kept in their log
    await first.add_memories("me", [hakone(1)])
    await first.stop()
    store.gate = asyncio.Event()  # the store is slow to read after a start
    store.pages.clear()
    again = await make_engine(store=store, data_dir=tmp_path / "data", index=large)
    try:
        again.indexes.request("me")
        await _until(lambda: again.indexes.dense("me") is not None, "the saved records")
        recall = await again.recall("me", QUESTION, NOW)
        assert again.indexes.peek("me") is None  # its read is held at the second page
    finally:
        store.gate.set()
    assert recall.details["index"] == "not ready: dense recall from the store"
    assert {r.memory.id for r in recall.memories} == {"h000", "h001"}
    assert store.search_limits == []  # the nearest came from the saved records


async def test_a_forget_deletes_the_saved_records_of_a_large_person(
        make_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(data_dir=tmp_path / "data",
                               index={"page_size": 4, "keep_max_memories": 8})
    await engine.add_memories("me", [guitar(i) for i in range(15)] + [hakone(0)])
    await engine.index("me")
    await engine.indexes.settle()
    saved = tmp_path / "data" / "dense"
    assert any("箱根" in gzip.decompress(p.read_bytes()).decode()
               for p in saved.glob("*.rows.gz"))
    await engine.forget("me", "h000")
    await engine.indexes.settle()
    assert not list(saved.iterdir())  # no copy of the forgotten text stays on disk


async def test_a_person_within_keep_max_memories_has_no_saved_records(
        make_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(data_dir=tmp_path / "data",
                               index={"page_size": 4, "keep_max_memories": 100})
    await engine.add_memories("me", [guitar(i) for i in range(15)])
    await engine.index("me")
    await engine.indexes.settle()
    assert not (tmp_path / "data" / "dense").exists() or \
        not list((tmp_path / "data" / "dense").iterdir())


async def test_a_store_search_a_recall_no_longer_waits_for_is_cancelled(
        make_engine) -> None:  # type: ignore[no-untyped-def]
    class HeldSearches(PagedStore):
        """Searches wait for ``release``; counts those begun and those ended."""

        def __init__(self, config: MemoryStoreConfig) -> None:
            super().__init__(config)
            self.release = asyncio.Event()
            self.begun = self.finished = 0

        async def _search(self, user: str, vector: Any, limit: int,
                          where: dict[str, Any] | None) -> Any:
            self.begun += 1
            await self.release.wait()
            hits = await super()._search(user, vector, limit, where)
            self.finished += 1
            return hits

    store = HeldSearches(MemoryStoreConfig())
    engine = await make_engine(store=store, time_budget_ms=300,
                               index={"page_size": 4, "first_turn_wait_share": 0.1})
    await engine.add_memories("me", [hakone(0)] + [guitar(i) for i in range(15)])
    store.gate = asyncio.Event()  # the index is not ready in time
    recall = await engine.recall("me", QUESTION, NOW)
    assert recall.timed_out and store.begun == 1  # its search began, then time ran out
    store.release.set()
    await asyncio.sleep(0.05)
    assert store.finished == 0  # nobody waited for it any more: it was cancelled
    store.gate.set()


async def test_a_recall_whose_saved_index_loads_before_the_store_answers_uses_it(
        make_engine, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    # Right after a restart a store search can queue behind other calls longer than
    # the person's saved index takes to load.
    from omoide.memory.index import saved_indexes as index_store
    class HeldSearches(PagedStore):
        async def _search(self, user: str, vector: Any, limit: int,
                          where: dict[str, Any] | None) -> Any:
            self.search_limits.append(limit)
            await asyncio.Event().wait()  # never answers

    store = HeldSearches(MemoryStoreConfig())
    first = await make_engine(store=store, data_dir=tmp_path / "data")
    await first.add_memories("me", [hakone(0)] + [guitar(i) for i in range(15)])
    await first.index("me")
    await first.stop()  # saves the index

    loads = threading.Event()  # the load waits ...
    load = index_store.IndexStore.load

    def held_load(self: Any, user: str) -> Any:
        loads.wait(10)
        return load(self, user)

    monkeypatch.setattr(index_store.IndexStore, "load", held_load)
    turned_to_store = asyncio.Event()
    dense_path = PersonView.index_of_nearest

    async def spied(self: PersonView, vector: FloatArray, limit: int) -> Any:
        turned_to_store.set()
        return await dense_path(self, vector, limit)

    monkeypatch.setattr(PersonView, "index_of_nearest", spied)
    again = await make_engine(store=store, data_dir=tmp_path / "data", time_budget_ms=5000,
                              index={"warm_people": 0, "first_turn_wait_share": 0.02})

    async def release_once_searching() -> None:
        await turned_to_store.wait()
        loads.set()  # ... until the recall has turned to the store

    releaser = asyncio.ensure_future(release_once_searching())
    recall = await again.recall("me", QUESTION, NOW)
    await releaser
    assert store.search_limits  # the store was asked, and never answered
    assert not recall.timed_out
    assert "h000" in [m.memory.id for m in recall.memories]
    assert recall.details["index"] == "loaded during the dense search of the store"
    assert recall.shortfalls == ()


async def test_a_recall_starts_no_store_search_that_would_end_after_its_budget(
        make_engine) -> None:  # type: ignore[no-untyped-def]
    store = PagedStore(MemoryStoreConfig())
    engine = await make_engine(store=store, time_budget_ms=300,
                               index={"page_size": 4, "first_turn_wait_share": 0.1})
    await engine.add_memories("me", [hakone(0)] + [guitar(i) for i in range(15)])
    store.gate = asyncio.Event()  # the index is not ready in time
    for _ in range(3):
        engine.dense_paths.record(0.5)  # lately, dense recalls from the store took 500 ms
    recall = await engine.recall("me", QUESTION, NOW)
    assert not recall.timed_out and recall.memories == []
    assert recall.shortfalls == (DENSE_WOULD_NOT_FIT,)
    assert store.search_limits == []
    store.gate.set()


async def test_a_recall_whose_build_waits_for_a_slot_stops_waiting_for_a_useless_vector(
        make_engine) -> None:  # type: ignore[no-untyped-def]
    store = PagedStore(MemoryStoreConfig())
    engine = await make_engine(store=store, embedder=SlowQueries(20_000),
                               time_budget_ms=10_000, query_embed_wait_share=0.01,
                               index={"page_size": 4, "concurrent_builds": 1,
                                      "first_turn_wait_share": 0.01})
    await engine.add_memories("busy", [guitar(i, "busy") for i in range(8)])
    await engine.add_memories("me", [hakone(0)])
    store.gate = asyncio.Event()
    engine.indexes.request("busy")  # holds the one slot
    await _until(lambda: store.pages, "the first page of busy")
    for _ in range(3):
        engine.dense_paths.record(9.5)  # a dense search from the store takes 9.5 s lately
    # so a vector later than 0.5 s into the 10 s budget is of no use: the recall ends
    # then, not at 7 s (READ_SHARE) as it would while the build might still come
    recall = await asyncio.wait_for(engine.recall("me", QUESTION, NOW), 4.0)
    assert recall.memories == [] and not recall.timed_out
    store.gate.set()


async def saved_by_an_earlier_version(make_engine, store: PagedStore, data_dir: Any,  # type: ignore[no-untyped-def]
                                      users: Sequence[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Indexes of ``users`` saved in ``data_dir`` by a version of omoide before this one."""
    from omoide.memory.index import saved_indexes as index_store
    with monkeypatch.context() as earlier_version:
        earlier_version.setattr(index_store, "index_version", lambda: "an earlier omoide")
        first = await make_engine(store=store, data_dir=data_dir)
        for user in users:
            await first.add_memories(user, [hakone(0, user), guitar(1, user)])
            await first.index(user)
        await first.stop()


async def test_after_an_upgrade_outdated_saved_indexes_are_renewed_before_anyone_asks(
        make_engine, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from omoide.memory.index import saved_indexes as index_store
    store = PagedStore(MemoryStoreConfig())
    await saved_by_an_earlier_version(make_engine, store, tmp_path / "data", ["me", "you"],
                                      monkeypatch)
    again = await make_engine(store=store, data_dir=tmp_path / "data")
    saved = index_store.IndexStore(tmp_path / "data" / "indexes.sqlite3", 1000)
    assert sorted(u for u, _ in saved.outdated()) == ["me", "you"]
    again.warm_indexes()
    await again.indexes.settle()
    assert again.indexes.builds_done == 2 and saved.outdated() == []
    assert sorted(u for u, _ in saved.recent(10)) == ["me", "you"]
    # their next start loads them
    await again.stop()
    third = await make_engine(store=store, data_dir=tmp_path / "data", index={"warm_people": 0})
    assert (await third.recall("me", QUESTION, NOW)).memories
    assert third.indexes.loads_done == 1 and third.indexes.builds_done == 0
    saved.close()


async def test_outdated_saved_indexes_wait_while_people_are_recalling(
        make_engine, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from omoide.memory.index import shared_store_refresh
    monkeypatch.setattr(shared_store_refresh, "RENEW_PAUSE_S", 0.01)
    store = PagedStore(MemoryStoreConfig())
    await saved_by_an_earlier_version(make_engine, store, tmp_path / "data", ["me"],
                                      monkeypatch)
    again = await make_engine(store=store, data_dir=tmp_path / "data",
                              index={"warm_people": 0})
    with again.indexes.foreground.recalling():  # somebody's recall runs
        again.warm_indexes()
        for _ in range(20):
            await asyncio.sleep(0.01)
        assert again.indexes.builds_done == 0
    await again.indexes.settle()
    assert again.indexes.builds_done == 1
