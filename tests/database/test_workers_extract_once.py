"""Several workers (memory engines) on one PostgreSQL journal and one vector store: every
exchange is extracted once — asked of the chat model once, stored once — when they
extract at the same time, and when one dies mid-batch and another takes over.

The engines run in this process over the test doubles' store and embedder (standing in
for a vector-store server); each has its own data dir, as workers on different machines
would; the chat model is a double answering one fact per user line, so what it was
asked is known.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from omoide.components import ChatConfig, ChatModel
from omoide.components.extractor import Fact
from omoide.config_schema import DatabaseSettings
from omoide.memory.api import ExtractionReport
from omoide.memory.config import MemoryConfig
from omoide.memory.engine import MemoryEngine
from omoide.memory.journal.extraction_batches import memory_id
from omoide.memory.journal.postgres_journal import PostgresJournal
from omoide.testing.doubles import (
    HashEmbedder,
    HashEmbedderConfig,
    InMemoryStore,
    MemoryStoreConfig,
)
from omoide.types import ChatDelta, ChatMessage, Exchange, ToolSpec

JST = ZoneInfo("Asia/Tokyo")
AT = datetime(2026, 11, 30, 20, 0, tzinfo=JST)
LINE = re.compile(r"^\[[^\]]*\] user: (.*)$", re.M)
TOPICS = ["猫のむぎを飼っている", "毎朝ジョギングをしている", "ラーメンが好きだ",
          "ギターを練習している", "妹は看護師だ", "紅茶をよく飲む", "札幌出身だ"]


class LineFactsChat(ChatModel):
    """Test double: one fact 「あなたは<line>。」 per user line; records every line asked."""

    name = "line-facts"
    Config = ChatConfig

    def __init__(self, config: ChatConfig) -> None:
        super().__init__(config)
        self.asked: list[str] = []

    async def _stream(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec],
                      json_output: bool) -> AsyncIterator[ChatDelta]:
        lines = LINE.findall(messages[-1].content)
        self.asked += lines
        await asyncio.sleep(0)  # let the other worker run between asking and journaling
        facts = [{"text": f"あなたは{line.rstrip('。')}。", "kind": "other"} for line in lines]
        yield ChatDelta(text=json.dumps({"facts": facts}, ensure_ascii=False))


Worker = Callable[..., Awaitable[MemoryEngine]]


@pytest.fixture
async def make_worker(postgres_url: str, tmp_path: Path) -> AsyncIterator[Worker]:
    store = InMemoryStore(MemoryStoreConfig())
    await store.start()
    embedder = HashEmbedder(HashEmbedderConfig(dims=64))
    await embedder.start()
    engines: list[MemoryEngine] = []

    async def make(chat: ChatModel | None = None, lease_seconds: float = 300.0,
                   ) -> MemoryEngine:
        database = DatabaseSettings(url=postgres_url, pool_size=4,
                                    lease_seconds=lease_seconds)
        engine = MemoryEngine(MemoryConfig(time_budget_ms=10_000.0), embedder=embedder,
                              store=store, chat=chat, timezone="Asia/Tokyo",
                              data_dir=tmp_path / f"worker{len(engines)}",
                              database=database)
        await engine.start()
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        await engine.stop()


async def chat_model() -> LineFactsChat:
    chat = LineFactsChat(ChatConfig())
    await chat.start()
    return chat


def said(i: int, user: str = "mika") -> Exchange:
    return Exchange(f"{user}-{i:03d}", user, f"{TOPICS[i % len(TOPICS)]}（その{i}）", "うん",
                    AT + timedelta(minutes=i))


async def test_workers_extracting_at_once_extract_each_exchange_once(make_worker: Worker,
                                                                     ) -> None:
    chats = [await chat_model() for _ in range(3)]
    workers = [await make_worker(chat) for chat in chats]
    assert all(isinstance(w.journal, PostgresJournal) for w in workers)
    exchanges = [said(i) for i in range(30)]
    for n, ex in enumerate(exchanges):
        await workers[n % 3].record_exchange(ex)  # turns land on any worker
    reports = await asyncio.gather(*(w.extract_now("mika") for w in workers))
    asked = Counter(line for chat in chats for line in chat.asked)
    assert sorted(asked) == sorted(ex.user_text for ex in exchanges)
    assert set(asked.values()) == {1}  # no exchange asked of the chat model twice
    assert sum(r.exchanges for r in reports) == 30
    memories = await workers[0].list_memories("mika")
    assert sorted(m.text for m in memories) == sorted(
        f"あなたは{ex.user_text}。" for ex in exchanges)
    assert await workers[1].pending("mika") == []


async def test_a_batch_left_by_a_dead_worker_is_finished_by_another_without_asking_again(
        make_worker: Worker) -> None:
    dead_chat, live_chat = await chat_model(), await chat_model()
    dead = await make_worker(dead_chat, lease_seconds=0.3)
    live = await make_worker(live_chat)
    exchanges = [said(i) for i in range(3)]
    for ex in exchanges:
        await dead.record_exchange(ex)
    # The dead worker got as far as journaling the chat model's facts, then died.
    work = await dead.journal.pending_work("mika")
    facts = [f"あなたは{ex.user_text}。" for ex in exchanges]
    batch = await dead.journal.open_batch(
        "mika", [w.exchange for w in work], [Fact(t, "other", ()) for t in facts])
    assert (await live.extract_now("mika")).exchanges == 0  # the lease still holds
    await asyncio.sleep(0.6)  # past the lease: the worker is gone
    report = await live.extract_now("mika")
    assert report.exchanges == 3 and not report.pending
    assert live_chat.asked == []  # its facts were journaled: the chat model not asked
    stored = await live.list_memories("mika")
    assert sorted(m.id for m in stored) == sorted(memory_id(batch.id, n) for n in range(3))
    assert [b.state for b in await live.journal.batches("mika")] == ["done"]


class LocalFilesStoreConfig(MemoryStoreConfig):
    path: str = "./data/qdrant"


class LocalFilesStore(InMemoryStore):
    """The store double, configured as a store in local files (Qdrant's path:)."""

    Config = LocalFilesStoreConfig


async def test_a_shared_journal_with_a_store_in_local_files_is_reported(
        postgres_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = LocalFilesStore(LocalFilesStoreConfig())
    await store.start()
    embedder = HashEmbedder(HashEmbedderConfig(dims=64))
    await embedder.start()
    engine = MemoryEngine(MemoryConfig(), embedder=embedder, store=store, chat=None,
                          data_dir=tmp_path / "worker", timezone="Asia/Tokyo",
                          database=DatabaseSettings(url=postgres_url))
    with caplog.at_level("WARNING", logger="omoide.memory.journal"):
        await engine.start()
    await engine.stop()
    [warning] = [r.getMessage() for r in caplog.records if "shared" in r.getMessage()]
    assert "./data/qdrant" in warning and "store server" in warning


class GatedChat(LineFactsChat):
    """:class:`LineFactsChat` that answers only once :attr:`go` is set (a chat model
    slower than any lease), saying when it was first asked."""

    def __init__(self, config: ChatConfig) -> None:
        super().__init__(config)
        self.asking = asyncio.Event()
        self.go = asyncio.Event()

    async def _stream(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec],
                      json_output: bool) -> AsyncIterator[ChatDelta]:
        self.asking.set()
        await self.go.wait()
        async for delta in super()._stream(messages, tools, json_output):
            yield delta


async def _past_the_leases_given(url: str) -> None:
    """Until the database's clock is past every lease as it stands now (leases that were
    not extended since have run out)."""
    import psycopg
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        row = await (await conn.execute("SELECT max(lease_until) FROM exchanges")).fetchone()
        assert row is not None and row[0] is not None
        while True:
            past = await (await conn.execute("SELECT now() > %s", (row[0],))).fetchone()
            if past and past[0]:
                return
            await asyncio.sleep(0.2)


@dataclass
class HeldJob:
    """An extraction under way on one worker, its chat model not answering yet, and a
    second worker beside it."""

    chat: GatedChat
    other: MemoryEngine
    other_chat: LineFactsChat
    asked_about: list[str]
    running: asyncio.Task[ExtractionReport]


async def _held_job(make_worker: Worker, lease_seconds: float) -> HeldJob:
    chat, other_chat = GatedChat(ChatConfig()), await chat_model()
    await chat.start()
    holder = await make_worker(chat, lease_seconds=lease_seconds)
    other = await make_worker(other_chat, lease_seconds=lease_seconds)
    exchanges = [said(i) for i in range(3)]
    for ex in exchanges:
        await holder.record_exchange(ex)
    running = asyncio.create_task(holder.extract_now("mika"))
    await chat.asking.wait()
    return HeldJob(chat, other, other_chat, sorted(ex.user_text for ex in exchanges),
                   running)


async def test_a_job_slower_than_its_lease_is_not_taken_over_while_it_runs(
        make_worker: Worker, postgres_url: str) -> None:
    job = await _held_job(make_worker, lease_seconds=3.0)
    await _past_the_leases_given(postgres_url)   # the first lease is over: it was extended
    assert (await job.other.extract_now("mika")).exchanges == 0
    job.chat.go.set()
    report = await job.running
    assert report.exchanges == 3 and not report.pending
    assert sorted(job.chat.asked) == job.asked_about
    assert job.other_chat.asked == []   # asked once, of the worker that held them
    assert len(await job.other.list_memories("mika")) == 3


async def test_the_leases_of_a_job_that_died_run_out_and_another_worker_takes_it(
        make_worker: Worker, postgres_url: str) -> None:
    job = await _held_job(make_worker, lease_seconds=1.0)
    job.running.cancel()   # the job ends mid-ask: its beat stops with it
    with pytest.raises(asyncio.CancelledError):
        await job.running
    for _ in range(5):   # a beat already under way when it stopped may land once more
        await _past_the_leases_given(postgres_url)
        report = await job.other.extract_now("mika")
        if report.exchanges:
            break
    assert report.exchanges == 3
    assert sorted(job.other_chat.asked) == job.asked_about
