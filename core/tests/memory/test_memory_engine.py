"""Dedup and update, supersession, forgetting, export/import and the time budget."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from omoide.components import ScrollPage
from omoide.testing.doubles import InMemoryStore, MemoryStoreConfig
from omoide.types import Exchange, FloatArray, Memory, VectorHit

from .conftest import fake_chat

JST = ZoneInfo("Asia/Tokyo")
NOW = datetime(2026, 9, 27, 21, 0, tzinfo=JST)


def facts(*texts: str) -> str:
    return json.dumps({"facts": [{"text": t, "kind": "plan"} for t in texts]},
                      ensure_ascii=False)


async def extract(engine: Any, reply: str, n: int) -> Any:
    engine.chat = fake_chat(reply)
    await engine.chat.start()
    await engine.record_exchange(Exchange(f"ex{n}", "me", "話", "うん", NOW))
    return await engine.extract_now("me")


async def test_an_exact_duplicate_is_skipped(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine()
    await extract(engine, facts("あなたはギターの練習をしている。"), 1)
    report = await extract(engine, facts("あなたはギターの練習をしている"), 2)
    assert (len(report.stored), report.skipped_duplicates) == (0, 1)
    assert len(await engine.list_memories("me")) == 1


async def test_a_moved_plan_supersedes_the_old_one_which_is_never_injected(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(extraction={"dedup_cosine": 0.7})
    first = await extract(engine, facts("あなたは来週の土曜日（2026年10月3日）に友達と箱根に行く予定だ。"), 1)
    second = await extract(engine, facts("あなたは来週の日曜日（2026年10月4日）に友達と箱根に行く予定だ。"), 2)
    old, new = first.stored[0], second.stored[0]
    assert second.superseded == [old.id]
    kept = {m.id: m for m in await engine.list_memories("me")}
    assert kept[old.id].superseded_by == new.id
    recall = await engine.recall("me", "週末の予定覚えてる?", NOW)
    assert [r.memory.id for r in recall.memories] == [new.id]
    baseline = await engine.recall("me", "週末の予定覚えてる?", NOW, engine="baseline")
    assert old.id not in [r.memory.id for r in baseline.memories]


async def test_a_fact_without_a_date_has_no_event_dates(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine()
    report = await extract(engine, facts("あなたは辛い料理が好きだ。"), 1)
    assert report.stored[0].event_dates == ()


async def test_forget_removes_the_memory_from_store_and_recall(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine()
    m = Memory("g", "me", "あなたは来週の土曜日（2026年10月3日）にギターの発表会に出る。", NOW)
    await engine.add_memories("me", [m])
    assert (await engine.recall("me", "ギターの発表会っていつだっけ?", NOW)).memories
    assert await engine.forget("me", "g")
    assert await engine.get("me", "g") is None
    assert (await engine.recall("me", "ギターの発表会っていつだっけ?", NOW)).memories == []
    assert not await engine.forget("me", "g")


async def test_forget_removes_a_profile_fact_from_the_profile(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine()
    await engine.add_memories("me", [Memory("p", "me", "あなたはそばアレルギーがある。", NOW)])
    assert "p" in (await engine.recall("me", "こんにちは", NOW)).profile.ids
    assert await engine.forget("me", "p")
    assert not (await engine.recall("me", "こんにちは", NOW)).profile


async def test_export_then_import_into_another_user_copies_under_new_ids(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine()
    await engine.add_memories("a", [Memory("x", "a", "あなたは猫のむぎを飼っている。", NOW)])
    exported = await engine.export("a")
    imported = (await engine.import_memories("b", exported)).stored
    assert [m.text for m in imported] == ["あなたは猫のむぎを飼っている。"]
    assert imported[0].id != "x" and imported[0].user == "b"
    assert [m.id for m in await engine.list_memories("a")] == ["x"]


class SlowStore(InMemoryStore):
    """The in-memory store double, with searches and pages that take ``delay`` seconds."""

    delay = 1.0

    async def _search(self, user: str, vector: FloatArray, limit: int,
                      where: dict[str, Any] | None) -> list[VectorHit]:
        await asyncio.sleep(self.delay)
        return await super()._search(user, vector, limit, where)

    async def _scroll_page(self, user: str, cursor: str | None, limit: int) -> ScrollPage:
        await asyncio.sleep(self.delay)
        return await super()._scroll_page(user, cursor, limit)


async def test_a_slow_store_degrades_to_no_memory_within_the_budget(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(store=SlowStore(MemoryStoreConfig(timeout_s=5)),
                               time_budget_ms=100)
    await engine.add_memories("me", [Memory("h", "me", "あなたは来週の土曜日（2026年10月3日）に箱根に行く。",
                                            NOW)])
    started = asyncio.get_running_loop().time()
    recall = await engine.recall("me", "週末の予定覚えてる?", NOW)
    elapsed = asyncio.get_running_loop().time() - started
    assert recall.timed_out and recall.memories == []
    assert elapsed < 0.5
    baseline = await engine.recall("me", "週末の予定覚えてる?", NOW, engine="baseline")
    assert baseline.timed_out and baseline.memories == []


async def test_a_failing_store_degrades_to_no_memory_with_the_error(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine()
    await engine.add_memories("me", [Memory("h", "me", "あなたは箱根に行く予定だ。", NOW)])

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("store down")

    engine.store.search = broken  # type: ignore[method-assign]
    engine.store.scroll = broken  # type: ignore[method-assign]
    engine.store.scroll_page = broken  # type: ignore[method-assign]
    recall = await engine.recall("me", "箱根の予定覚えてる?", NOW)
    assert recall.memories == [] and "store down" in (recall.error or "")


async def test_recall_reports_timings(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine()
    recall = await engine.recall("me", "週末の予定覚えてる?", NOW)
    assert {"embed", "search", "total"} <= set(recall.timings_ms)


async def test_reembed_moves_every_memory_to_the_new_embedder(make_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from omoide.errors import EmbedderMismatch
    from omoide.testing.doubles import HashEmbedder, HashEmbedderConfig

    engine = await make_engine()
    await engine.add_memories("a", [Memory("x", "a", "あなたは猫のむぎを飼っている。", NOW)])
    await engine.add_memories("b", [Memory("y", "b", "あなたはギターの練習をしている。", NOW)])
    new = HashEmbedder(HashEmbedderConfig(dims=32))
    await new.start()
    try:
        await engine.store.open(await new.fingerprint())
        raise AssertionError("the store accepted a different embedder")
    except EmbedderMismatch:
        pass
    engine.embedder = new
    counts = await engine.reembed(backup=tmp_path / "backup.jsonl")
    assert counts == {"a": 1, "b": 1}
    assert (await engine.store.fingerprint()).dims == 32  # type: ignore[union-attr]
    assert [m.text for m in await engine.list_memories("a")] == ["あなたは猫のむぎを飼っている。"]
    assert len((tmp_path / "backup.jsonl").read_text(encoding="utf-8").splitlines()) == 2


async def test_a_word_match_outside_the_date_range_still_competes(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine()
    said = datetime(2026, 4, 20, 20, 0, tzinfo=JST)
    await engine.add_memories("me", [
        Memory("dentist", "me", "あなたは来週の火曜日（2026年4月28日）の夜7時に歯医者の予約がある。", said),
        Memory("party", "me", "あなたは明日（2026年4月21日）、部署の歓迎会で幹事をする。", said)])
    now = datetime(2026, 4, 20, 21, 0, tzinfo=JST)
    recall = await engine.recall("me", "明日の歯医者って何時だっけ", now)
    assert "dentist" in [r.memory.id for r in recall.memories]


async def test_names_reported_by_extraction_are_matched(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine()
    await engine.add_memories("me", [
        Memory("cafe", "me", "あなたは来週の土曜日（2026年10月3日）に駅前の新しい店に行く。", NOW,
               entities=("ひだまり",)),
        Memory("other", "me", "あなたは猫が好きだ。", NOW)])
    recall = await engine.recall("me", "ひだまりって覚えてる?", NOW)
    assert [r.memory.id for r in recall.memories] == ["cafe"]
