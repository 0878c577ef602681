"""Extraction in journaled batches: exactly once across crashes, bounded, never stalled.

The chat model here is :class:`LineFactsChat`, a test double that answers the extraction
call with one fact per user line of the conversation block (so what "the model answered"
is known), and garbage or too many facts for lines containing a marker.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from pydantic import Field

from omoide.blocking import work_priority
from omoide.components import ChatConfig, ChatModel
from omoide.errors import ComponentError
from omoide.memory.journal.exchange_log import Journal
from omoide.memory.journal.extraction_batches import memory_id
from omoide.testing.doubles import InMemoryStore, MemoryStoreConfig
from omoide.types import (
    ChatDelta,
    ChatMessage,
    Exchange,
    FloatArray,
    Memory,
    Priority,
    ToolSpec,
    VectorHit,
)

JST = ZoneInfo("Asia/Tokyo")
AT = datetime(2026, 9, 27, 20, 0, tzinfo=JST)
LINE = re.compile(r"^\[[^\]]*\] user: (.*)$", re.M)


class LineFactsChatConfig(ChatConfig):
    garbage_for: str | None = Field(None, description="Answer garbage when a line has this.")
    many_for: str | None = Field(None, description="Answer 40 facts when a line has this.")
    down: bool = Field(False, description="Fail as an unavailable service (retryable).")


class LineFactsChat(ChatModel):
    """Test double: one fact 「あなたは<line>。」 per user line; records each prompt."""

    name = "line-facts"
    Config = LineFactsChatConfig
    config: LineFactsChatConfig

    def __init__(self, config: LineFactsChatConfig) -> None:
        super().__init__(config)
        self.prompts: list[list[str]] = []

    async def _stream(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec],
                      json_output: bool) -> AsyncIterator[ChatDelta]:
        cfg = self.config
        if cfg.down:
            raise ComponentError("chat service unavailable (503)", retryable=True)
        lines = LINE.findall(messages[-1].content)
        self.prompts.append(lines)
        if cfg.garbage_for and any(cfg.garbage_for in line for line in lines):
            yield ChatDelta(text="ええと、うまく抜き出せませんでした")
            return
        facts = [{"text": f"あなたは{line.rstrip('。')}。", "kind": "other"} for line in lines]
        if cfg.many_for and any(cfg.many_for in line for line in lines):
            facts = [{"text": f"あなたは{i}番目のことを話した。", "kind": "other"}
                     for i in range(40)]
        yield ChatDelta(text=json.dumps({"facts": facts}, ensure_ascii=False))


async def line_chat(**options: Any) -> LineFactsChat:
    chat = LineFactsChat(LineFactsChatConfig(**options))
    await chat.start()
    return chat


def said(i: int, text: str, user: str = "me", at: datetime | None = None) -> Exchange:
    return Exchange(f"ex{i:03d}", user, text, "うん", at or AT + timedelta(minutes=i))


TOPICS = ["猫のむぎを飼っている", "毎朝ジョギングをしている", "ラーメンが好きだ", "ギターを練習している",
          "来週京都に行く予定だ", "妹は看護師だ", "紅茶をよく飲む", "週末はテニスをする",
          "駅前のパン屋が好きだ", "犬を二匹飼っている", "札幌出身だ", "野球をよく見る"]


async def record(engine: Any, texts: Sequence[str], user: str = "me") -> list[Exchange]:
    out = [said(i, t, user) for i, t in enumerate(texts)]
    for ex in out:
        await engine.record_exchange(ex)
    return out


# -- bounded batches, isolation, quarantine ---------------------------------------------
async def test_many_pending_statements_are_extracted_in_bounded_batches(make_engine) -> None:  # type: ignore[no-untyped-def]
    chat = await line_chat()
    engine = await make_engine(chat=chat)
    texts = [f"{TOPICS[i % 12]}（その{i}）" for i in range(35)]
    await record(engine, texts)
    report = await engine.extract_now("me")
    assert not report.pending and report.exchanges == 35
    assert max(len(p) for p in chat.prompts) <= 8
    assert len(await engine.list_memories("me")) == 35
    assert await engine.pending("me") == []


async def test_a_long_statement_is_cut_in_the_prompt(make_engine) -> None:  # type: ignore[no-untyped-def]
    chat = await line_chat()
    engine = await make_engine(chat=chat, extraction={"max_statement_chars": 120})
    await record(engine, ["猫が好きだ。" * 700, "ラーメンが好きだ"])
    report = await engine.extract_now("me")
    assert report.exchanges == 2 and not report.pending
    assert len(chat.prompts[0][0]) == 120 and chat.prompts[0][0].endswith("…")


async def test_one_exchange_with_too_many_facts_keeps_the_first_thirty(make_engine) -> None:  # type: ignore[no-untyped-def]
    chat = await line_chat(many_for="全部話す")
    engine = await make_engine(chat=chat, extraction={"attempts": 1})
    await record(engine, ["ラーメンが好きだ", "全部話す", "猫を飼っている"])
    report = await engine.extract_now("me")
    assert report.exchanges == 3 and not report.pending
    texts = [m.text for m in await engine.list_memories("me")]
    assert "あなたはラーメンが好きだ。" in texts and "あなたは猫を飼っている。" in texts
    assert sum("番目" in t for t in texts) == 30


async def test_garbage_for_one_exchange_never_blocks_the_others(make_engine) -> None:  # type: ignore[no-untyped-def]
    chat = await line_chat(garbage_for="壊れた")
    engine = await make_engine(chat=chat, extraction={"attempts": 1})
    exchanges = await record(engine, [*TOPICS[:3], "壊れた話", *TOPICS[3:8]])
    report = await engine.extract_now("me")
    assert report.exchanges == 8 and report.pending
    assert len(await engine.list_memories("me")) == 8
    [summary] = await engine.pending("me")
    assert (summary.exchanges, summary.attempts, summary.quarantined) == (1, 1, 0)
    assert [e.id for e in await engine.journal.pending("me")] == [exchanges[3].id]


async def test_an_exchange_failing_alone_is_quarantined_after_the_attempt_limit(make_engine) -> None:  # type: ignore[no-untyped-def]
    chat = await line_chat(garbage_for="壊れた")
    engine = await make_engine(chat=chat, extraction={"attempts": 1, "max_attempts": 3})
    exchanges = await record(engine, ["壊れた話", TOPICS[0]])
    for _ in range(3):
        report = await engine.extract_now("me")
    assert report.quarantined == [exchanges[0].id]
    [dead] = await engine.dead_letters("me")
    assert dead.exchange_id == exchanges[0].id and dead.attempts == 3
    assert "failed 3 times" in dead.reason and "not JSON" in dead.reason
    [summary] = await engine.pending("me")
    assert (summary.exchanges, summary.quarantined) == (0, 1)
    calls = len(chat.prompts)
    await engine.extract_now("me")
    assert len(chat.prompts) == calls  # a quarantined exchange is not tried again


async def test_an_exchange_dated_9999_is_quarantined_at_once_and_the_rest_extracted(make_engine) -> None:  # type: ignore[no-untyped-def]
    chat = await line_chat()
    engine = await make_engine(chat=chat)
    far = said(100, "遠い未来の話", at=datetime(9999, 12, 31, 23, 59, tzinfo=ZoneInfo("UTC")))
    await engine.record_exchange(far)
    await record(engine, TOPICS[:2])
    report = await engine.extract_now("me")
    assert report.quarantined == [far.id] and report.exchanges == 2
    [dead] = await engine.dead_letters("me")
    assert "outside the calendar" in dead.reason and dead.attempts == 0
    assert len(await engine.list_memories("me")) == 2


async def test_a_service_outage_counts_no_attempt_and_keeps_everything_pending(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(chat=await line_chat(down=True, retries=0),
                               extraction={"attempts": 1})
    await record(engine, TOPICS[:3])
    for _ in range(5):
        report = await engine.extract_now("me")
    assert report.pending and "unavailable" in (report.error or "")
    [summary] = await engine.pending("me")
    assert (summary.exchanges, summary.attempts, summary.quarantined) == (3, 0, 0)


async def test_a_chat_model_refusing_every_exchange_alike_quarantines_none(make_engine) -> None:  # type: ignore[no-untyped-def]
    from .conftest import fake_chat
    chat = fake_chat("", fail_with="HTTP 401, the API key was refused")
    await chat.start()
    engine = await make_engine(chat=chat, extraction={"attempts": 1, "max_attempts": 2})
    await record(engine, TOPICS[:3])
    for _ in range(4):
        report = await engine.extract_now("me")
    assert report.pending and report.quarantined == []
    assert "failed every exchange the same way" in (report.error or "")
    [summary] = await engine.pending("me")
    assert (summary.exchanges, summary.attempts, summary.quarantined) == (3, 0, 0)
    assert "API key" in (summary.last_error or "")


async def test_retry_releases_a_quarantined_exchange_which_is_then_extracted(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(chat=await line_chat(garbage_for="壊れた"),
                               extraction={"attempts": 1, "max_attempts": 1})
    [ex] = await record(engine, ["壊れた時計を直した"])
    await engine.extract_now("me")
    assert [d.exchange_id for d in await engine.dead_letters("me")] == [ex.id]
    engine.chat = await line_chat()
    assert await engine.retry_quarantined("me", [ex.id]) == [ex.id]
    report = await engine.extract_now("me")
    assert report.exchanges == 1 and await engine.dead_letters("me") == []
    assert [m.text for m in await engine.list_memories("me")] == ["あなたは壊れた時計を直した。"]


async def test_skip_sets_quarantined_exchanges_aside_for_good(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(chat=await line_chat(garbage_for="壊れた"),
                               extraction={"attempts": 1, "max_attempts": 1})
    [ex] = await record(engine, ["壊れた話"])
    await engine.extract_now("me")
    assert await engine.skip_exchanges("me") == [ex.id]
    assert await engine.dead_letters("me") == [] and await engine.pending("me") == []
    assert [e.id for e in await engine.journal.exchanges([ex.id])] == [ex.id]  # still kept


async def test_skip_by_id_touches_only_that_users_exchanges(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(chat=None)
    [mine] = await record(engine, ["猫が好きだ"], user="me")
    assert await engine.skip_exchanges("someone-else", [mine.id]) == []
    assert await engine.skip_exchanges("me", [mine.id]) == [mine.id]


class PriorityNotingStore(InMemoryStore):
    """Test double: the in-memory store, noting the priority of the work each search
    was made for."""

    def __init__(self, config: MemoryStoreConfig) -> None:
        super().__init__(config)
        self.search_priorities: list[Priority] = []

    async def _search(self, user: str, vector: FloatArray, limit: int,
                      where: dict[str, Any] | None) -> list[VectorHit]:
        self.search_priorities.append(work_priority())
        return await super()._search(user, vector, limit, where)


async def test_extraction_searches_the_store_as_batch_work_behind_turns(make_engine) -> None:  # type: ignore[no-untyped-def]
    store = PriorityNotingStore(MemoryStoreConfig())
    engine = await make_engine(chat=await line_chat(), store=store)
    await record(engine, TOPICS[:3])
    await engine.extract_now("me")
    assert store.search_priorities  # the plan looked for what each fact repeats
    assert set(store.search_priorities) == {Priority.BATCH}
    await store.search("me", await engine.embedder.embed_query("猫"), 3)  # a turn's
    assert store.search_priorities[-1] is Priority.INTERACTIVE


# -- supersession order and superseded duplicates -----------------------------------------
HAKONE_SAT = "来週の土曜日（2026年10月3日）に友達と箱根に行く予定だ"
HAKONE_SUN = "来週の日曜日（2026年10月4日）に友達と箱根に行く予定だ"


async def test_a_fact_extracted_after_a_newer_one_is_stored_already_superseded(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(chat=await line_chat(garbage_for="土曜日"),
                               extraction={"attempts": 1})
    await engine.record_exchange(said(1, HAKONE_SAT))
    await engine.record_exchange(said(2, HAKONE_SUN))
    await engine.extract_now("me")          # Saturday fails, Sunday is stored
    engine.chat = await line_chat()
    await engine.extract_now("me")          # Saturday now, although said first
    memories = {m.text: m for m in await engine.list_memories("me")}
    sat, sun = memories[f"あなたは{HAKONE_SAT}。"], memories[f"あなたは{HAKONE_SUN}。"]
    assert sat.superseded_by == sun.id and sun.superseded_by is None


async def test_the_hakone_plan_and_the_dentist_are_two_plans(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(chat=await line_chat())
    await record(engine, [HAKONE_SAT])
    await engine.extract_now("me")
    await engine.record_exchange(said(5, "明日（2026年9月28日）歯医者に行く予定だ"))
    report = await engine.extract_now("me")
    assert report.superseded == [] and len(report.stored) == 1
    assert all(m.superseded_by is None for m in await engine.list_memories("me"))


async def test_six_friends_in_six_cities_are_six_memories(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(chat=await line_chat())
    friends = [("佐藤", "札幌"), ("鈴木", "仙台"), ("田中", "福岡"), ("高橋", "名古屋"),
               ("伊藤", "大阪"), ("渡辺", "京都")]
    await record(engine, [f"友達の{n}さんは{c}に住んでいる" for n, c in friends])
    report = await engine.extract_now("me")
    assert (len(report.stored), report.skipped_duplicates) == (6, 0)


async def test_a_fact_repeating_a_superseded_one_from_the_same_exchanges_is_skipped(make_engine) -> None:  # type: ignore[no-untyped-def]
    # What an abandoned batch stored is recognised when its exchanges are extracted again.
    engine = await make_engine(chat=await line_chat())
    [ex] = await record(engine, [HAKONE_SAT])
    text = f"あなたは{HAKONE_SAT}。"
    await engine.add_memories("me", [
        Memory("old", "me", text, ex.at, source_exchange_ids=(ex.id,), superseded_by="new"),
        Memory("new", "me", f"あなたは{HAKONE_SUN}。", ex.at + timedelta(minutes=1))])
    report = await engine.extract_now("me")
    assert (report.stored, report.skipped_duplicates) == ([], 1)


async def test_a_superseded_fact_said_again_becomes_current(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(chat=await line_chat())
    await engine.record_exchange(said(1, HAKONE_SAT))
    await engine.extract_now("me")
    await engine.record_exchange(said(2, HAKONE_SUN))
    await engine.extract_now("me")
    await engine.record_exchange(said(3, HAKONE_SAT))   # moved back to Saturday
    report = await engine.extract_now("me")
    [current] = [m for m in await engine.list_memories("me") if m.superseded_by is None]
    assert current.text == f"あなたは{HAKONE_SAT}。" and current.id == report.stored[0].id


# -- exactly once under crashes at every step ---------------------------------------------
class Crash(BaseException):
    """Stands for the process dying: no handler in the engine catches it."""


class CrashPoints:
    """Counts steps of extraction (store writes, journal transactions, chat answers) and
    raises :class:`Crash` at step ``at`` (never when ``at`` is None)."""

    def __init__(self, at: int | None) -> None:
        self.at = at
        self.steps = 0

    def step(self) -> None:
        self.steps += 1
        if self.steps == self.at:
            raise Crash(f"crash at step {self.at}")


class CrashingStore(InMemoryStore):
    """The in-memory store double, crashing before or after a write when told to."""

    points: CrashPoints | None = None

    async def _upsert(self, user: str, records: Sequence[Any]) -> None:
        if self.points:
            self.points.step()
        await super()._upsert(user, records)
        if self.points:
            self.points.step()


def crash_journal_commits(journal: Journal, points: CrashPoints) -> None:
    """Make ``journal`` crash right after a committed transaction, at ``points``."""
    commit = journal._transaction

    def crashing(work: Any) -> Any:
        result = commit(work)
        points.step()
        return result

    journal._transaction = crashing  # type: ignore[method-assign]


CONVERSATION = [HAKONE_SAT, "ラーメンが好きだ", "友達の佐藤さんは札幌に住んでいる",
                "友達の鈴木さんは仙台に住んでいる", HAKONE_SUN, "猫を2匹飼っている",
                "ラーメンが好きだ", "猫を3匹飼っている", "毎朝ジョギングをしている",
                "明日（2026年9月28日）歯医者に行く予定だ"]


async def _run_with_crash(make_engine, at: int | None) -> tuple[list[Memory], int]:  # type: ignore[no-untyped-def]
    """Record CONVERSATION, extract with a crash at step ``at``, restart, extract again.

    Returns every memory (superseded ones too) and the number of steps counted."""
    store = CrashingStore(MemoryStoreConfig())
    engine = await make_engine(chat=await line_chat(), store=store,
                               extraction={"batch_exchanges": 4})
    for i, text in enumerate(CONVERSATION):
        await engine.record_exchange(said(i, text))
    points = CrashPoints(at)
    store.points = points
    crash_journal_commits(engine.journal, points)
    with contextlib.suppress(Crash):
        await engine.extract_now("me")
    store.points = None
    await engine.stop()
    restarted = await make_engine(chat=await line_chat(), store=store,
                                  extraction={"batch_exchanges": 4},
                                  data_dir=engine.data_dir)
    await restarted.extract_now("me")
    assert await restarted.pending("me") == []
    return list(await restarted.list_memories("me")), points.steps


def _outcome(memories: Sequence[Memory]) -> Counter[tuple[str, str | None]]:
    by_id = {m.id: m.text for m in memories}
    return Counter((m.text, by_id.get(m.superseded_by or "")) for m in memories)


async def test_a_crash_at_any_step_of_extraction_stores_each_fact_exactly_once(make_engine) -> None:  # type: ignore[no-untyped-def]
    reference, steps = await _run_with_crash(make_engine, None)
    assert steps > 20
    for at in range(1, steps + 1):
        memories, _ = await _run_with_crash(make_engine, at)
        assert _outcome(memories) == _outcome(reference), f"crash at step {at} of {steps}"


def test_memory_ids_are_derived_from_the_batch_and_the_position() -> None:
    assert memory_id("b1", 0) == memory_id("b1", 0)
    assert len({memory_id("b1", 0), memory_id("b1", 1), memory_id("b2", 0)}) == 3


@pytest.mark.parametrize("state", ["answered", "planned"])
async def test_an_unfinished_batch_is_finished_at_start_without_the_chat_model(
        make_engine, state) -> None:  # type: ignore[no-untyped-def]
    from omoide.memory.extract.planning import BatchPlanner
    from omoide.memory.extract.prompt import Fact

    store = InMemoryStore(MemoryStoreConfig())
    engine = await make_engine(chat=None, store=store)
    [ex] = await record(engine, ["猫が好きだ"])
    batch = await engine.journal.open_batch("me", [ex], [Fact("あなたは猫が好きだ。", "preference",
                                                             ())])
    if state == "planned":
        planner = BatchPlanner(engine.embedder, engine.store, "Asia/Tokyo", 0.92)
        plan, _ = await planner.plan(batch)
        await engine.journal.save_plan(batch, plan)
    await engine.stop()
    restarted = await make_engine(chat=None, store=store, data_dir=engine.data_dir)
    [memory] = await restarted.list_memories("me")
    assert memory.id == memory_id(batch.id, 0)
    assert await restarted.pending("me") == []


async def test_exchanges_another_process_extracts_meanwhile_are_left_to_it(make_engine) -> None:  # type: ignore[no-untyped-def]
    store = InMemoryStore(MemoryStoreConfig())
    first = await make_engine(chat=await line_chat(), store=store)
    second = await make_engine(chat=await line_chat(), store=store, data_dir=first.data_dir)
    await record(first, TOPICS[:3])
    ask = first._ask_for_facts

    async def slow_ask(exchanges: Any) -> Any:
        facts = await ask(exchanges)
        await second.extract_now("me")     # the other process gets there first
        return facts

    first._ask_for_facts = slow_ask  # type: ignore[method-assign]
    report = await first.extract_now("me")
    assert (report.exchanges, report.pending) == (0, False)
    assert len(await first.list_memories("me")) == 3
    batches = await first.journal.batches("me")
    assert [b.state for b in batches] == ["done"]
