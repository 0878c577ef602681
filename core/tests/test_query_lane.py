"""Query embeddings keep up with many people: batched together, shared when identical,
cached, ahead of queued document work, and a caller that gives up cancels nothing."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from omoide.errors import ComponentError
from omoide.testing.doubles import HashEmbedder, HashEmbedderConfig
from omoide.types import EmbedPurpose, FloatArray, Priority


class CountingEmbedder(HashEmbedder):
    """The hashing double, recording each model call; ``hold`` (when set) keeps calls
    waiting until it is opened; ``fail`` makes calls fail."""

    def __init__(self, config: HashEmbedderConfig) -> None:
        super().__init__(config)
        self.calls: list[tuple[EmbedPurpose, list[str]]] = []
        self.hold: asyncio.Event | None = None
        self.fail = False

    async def _embed(self, texts: Sequence[str], purpose: EmbedPurpose,
                     priority: Priority) -> FloatArray:
        self.calls.append((purpose, list(texts)))
        if self.hold is not None:
            await self.hold.wait()
        if self.fail:
            raise ComponentError("model failed", retryable=False)
        return await super()._embed(texts, purpose, priority)


@pytest.fixture
async def embedder() -> CountingEmbedder:
    e = CountingEmbedder(HashEmbedderConfig(dims=32, query_batch=8, query_cache=4))
    await e.start()
    return e


async def test_a_query_vector_is_the_query_embedding_of_its_text(
        embedder: CountingEmbedder) -> None:
    direct = (await embedder.embed(["週末の予定覚えてる?"], "query"))[0]
    np.testing.assert_allclose(await embedder.embed_query("週末の予定覚えてる?"), direct,
                               atol=1e-6)


async def test_queries_asked_together_share_model_calls_and_keep_their_own_vectors(
        embedder: CountingEmbedder) -> None:
    texts = [f"{i}回目の質問、覚えてる?" for i in range(10)]
    vectors = await asyncio.gather(*(embedder.embed_query(t) for t in texts))
    assert [len(batch) for _, batch in embedder.calls] == [8, 2]
    for text, vector in zip(texts, vectors, strict=True):
        np.testing.assert_allclose(vector, (await embedder.embed([text], "query"))[0],
                                   atol=1e-6)


async def first_call_held(embedder: CountingEmbedder) -> asyncio.Task[Any]:
    """A first query whose model call has started and is held (``embedder.hold``)."""
    embedder.hold = asyncio.Event()
    first = asyncio.create_task(embedder.embed_query("最初の質問"))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    return first


async def test_queries_that_arrive_during_a_call_go_together_in_the_next(
        embedder: CountingEmbedder) -> None:
    first = await first_call_held(embedder)
    later = [asyncio.create_task(embedder.embed_query(f"質問{i}")) for i in range(3)]
    await asyncio.sleep(0)
    assert embedder.hold is not None
    embedder.hold.set()
    await asyncio.gather(first, *later)
    assert [sorted(batch) for _, batch in embedder.calls] == [
        ["最初の質問"], ["質問0", "質問1", "質問2"]]


async def test_urgent_queries_go_into_the_next_call_ahead_of_earlier_ones(
        embedder: CountingEmbedder) -> None:
    first = await first_call_held(embedder)
    # the lane takes 8 at a time: 9 ordinary queries wait, then two urgent ones come
    later = [asyncio.create_task(embedder.embed_query(f"質問{i}")) for i in range(9)]
    urgent = [asyncio.create_task(embedder.embed_query(f"初めての人{i}", urgent=True))
              for i in range(2)]
    # an ordinary query asked again as urgent moves ahead too
    again = asyncio.create_task(embedder.embed_query("質問8", urgent=True))
    await asyncio.sleep(0)
    assert embedder.hold is not None
    embedder.hold.set()
    await asyncio.gather(first, *later, *urgent, again)
    next_call = embedder.calls[1][1]
    assert set(next_call[:3]) == {"質問8", "初めての人0", "初めての人1"}
    assert len(next_call) == 8 and [b for _, b in embedder.calls][2:] == [
        ["質問2", "質問1", "質問0"]]


async def test_the_newest_waiting_queries_go_first(embedder: CountingEmbedder) -> None:
    # under load each caller waits only part of its budget: the oldest are the likeliest
    # to have given up by the time their vector comes
    first = await first_call_held(embedder)
    later = [asyncio.create_task(embedder.embed_query(f"質問{i}")) for i in range(10)]
    await asyncio.sleep(0)
    urgent = [asyncio.create_task(embedder.embed_query(f"初めての人{i}", urgent=True))
              for i in range(2)]
    await asyncio.sleep(0)
    # asked again by another person just now: as new as that ask
    again = asyncio.create_task(embedder.embed_query("質問0"))
    await asyncio.sleep(0)
    assert embedder.hold is not None
    embedder.hold.set()
    await asyncio.gather(first, *later, *urgent, again)
    assert [batch for _, batch in embedder.calls] == [
        ["最初の質問"],
        ["初めての人1", "初めての人0", "質問0", "質問9", "質問8", "質問7", "質問6", "質問5"],
        ["質問4", "質問3", "質問2", "質問1"]]


async def test_identical_queries_are_embedded_once(embedder: CountingEmbedder) -> None:
    vectors = await asyncio.gather(*(embedder.embed_query("箱根っていつだっけ") for _ in range(5)))
    assert embedder.calls == [("query", ["箱根っていつだっけ"])]
    assert all(np.array_equal(v, vectors[0]) for v in vectors)
    stats = embedder.query_stats()
    assert stats is not None and (stats.asked, stats.shared, stats.embedded) == (5, 4, 1)


async def test_a_recent_query_comes_from_the_cache(embedder: CountingEmbedder) -> None:
    first = await embedder.embed_query("猫の名前覚えてる?")
    first[0] = 99.0  # the caller's copy: changing it changes nothing cached
    again = await embedder.embed_query("猫の名前覚えてる?")
    assert len(embedder.calls) == 1 and again[0] != 99.0


async def test_the_cache_keeps_only_the_most_recent_queries(embedder: CountingEmbedder) -> None:
    for i in range(5):  # the cache holds 4
        await embedder.embed_query(f"質問{i}")
    await embedder.embed_query("質問0")
    assert len(embedder.calls) == 6


async def test_a_caller_that_gives_up_leaves_the_vector_for_the_next_turn(
        embedder: CountingEmbedder) -> None:
    embedder.hold = asyncio.Event()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(embedder.embed_query("遅い質問"), timeout=0.01)
    embedder.hold.set()
    await embedder.embed_query("遅い質問")
    assert embedder.calls == [("query", ["遅い質問"])]


async def test_a_failed_call_fails_its_queries_and_the_next_ones_are_tried_again(
        embedder: CountingEmbedder) -> None:
    embedder.fail = True
    results = await asyncio.gather(embedder.embed_query("a"), embedder.embed_query("b"),
                                   return_exceptions=True)
    assert all(isinstance(r, ComponentError) for r in results)
    embedder.fail = False
    assert (await embedder.embed_query("a")).shape == (32,)


class ThreadedEmbedder(HashEmbedder):
    """The hashing double computed on the component's worker thread, like a local model;
    the first call waits for ``release``."""

    def __init__(self, config: HashEmbedderConfig) -> None:
        super().__init__(config)
        self.order: list[str] = []
        self.release = threading.Event()
        self.running = threading.Event()

    async def _embed(self, texts: Sequence[str], purpose: EmbedPurpose,
                     priority: Priority) -> FloatArray:
        def run() -> FloatArray:
            if not self.order:
                self.running.set()
                self.release.wait(timeout=30)
            self.order.append(texts[0])
            return np.stack([self._vector(t) for t in texts])

        return await self.run_blocking(run, priority)


async def test_a_query_goes_ahead_of_document_work_queued_before_it() -> None:
    embedder = ThreadedEmbedder(HashEmbedderConfig(dims=32))
    await embedder.start()
    try:
        documents = [asyncio.create_task(embedder.embed([f"文書{i}"], "document"))
                     for i in range(3)]
        await asyncio.to_thread(embedder.running.wait, 30)  # the first runs, two are queued
        query = asyncio.create_task(embedder.embed_query("質問"))
        while embedder.query_stats() is None or embedder.query_stats().batches == 0:  # type: ignore[union-attr]
            await asyncio.sleep(0.001)  # the query's call is submitted
        await asyncio.sleep(0.01)
        embedder.release.set()
        await asyncio.gather(query, *documents)
        assert embedder.order == ["文書0", "質問", "文書1", "文書2"]
    finally:
        await embedder.stop()


async def test_stopping_the_embedder_while_a_query_runs_ends_the_query_cleanly() -> None:
    import gc

    embedder = CountingEmbedder(HashEmbedderConfig(dims=32))
    await embedder.start()
    embedder.hold = asyncio.Event()
    problems: list[dict[str, object]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _loop, ctx: problems.append(ctx))
    query = asyncio.create_task(embedder.embed_query("止める前の質問"))
    await asyncio.sleep(0.01)
    await embedder.stop()
    embedder.hold.set()
    result = (await asyncio.gather(query, return_exceptions=True))[0]
    assert isinstance(result, asyncio.CancelledError)
    await asyncio.sleep(0.01)
    gc.collect()
    assert problems == []


async def test_a_queued_query_nobody_waits_for_is_dropped_before_its_model_call(
        embedder: CountingEmbedder) -> None:
    embedder.hold = asyncio.Event()
    running = asyncio.create_task(embedder.embed_query("走っている質問"))
    await asyncio.sleep(0.01)
    given_up = asyncio.create_task(embedder.embed_query("諦められた質問"))
    await asyncio.sleep(0.01)
    given_up.cancel()  # its recall went on without the vector
    await asyncio.sleep(0)
    embedder.hold.set()
    await running
    assert [batch for _, batch in embedder.calls] == [["走っている質問"]]
    stats = embedder.query_stats()
    assert stats is not None and stats.dropped == 1


async def test_a_queued_query_someone_still_waits_for_is_embedded(
        embedder: CountingEmbedder) -> None:
    embedder.hold = asyncio.Event()
    running = asyncio.create_task(embedder.embed_query("走っている質問"))
    await asyncio.sleep(0.01)
    impatient = asyncio.create_task(embedder.embed_query("同じ質問"))
    patient = asyncio.create_task(embedder.embed_query("同じ質問"))
    await asyncio.sleep(0.01)
    impatient.cancel()
    embedder.hold.set()
    await asyncio.gather(running, patient)
    assert [batch for _, batch in embedder.calls] == [["走っている質問"], ["同じ質問"]]
