"""No memory crosses users: many users, overlapping content, every read and write.

Runs against the in-memory store double and against Qdrant local mode (the
``store_qdrant`` plugin) when it is installed.
"""

from __future__ import annotations

import importlib.util
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from omoide.memory.engine import MemoryEngine
from omoide.testing.doubles import InMemoryStore, MemoryStoreConfig
from omoide.types import Memory

from .conftest import in_prompt

NOW = datetime(2026, 9, 27, 21, 0, tzinfo=ZoneInfo("Asia/Tokyo"))
USERS = [f"user{i}" for i in range(12)]
TEMPLATES = ["あなたは来週の土曜日（2026年10月3日）に{who}と箱根に行く予定だ。",
             "あなたは最近、仕事終わりに{who}とギターの練習をしている。",
             "あなたの猫の名前は{who}だ。"]
QUERIES = ["週末の予定覚えてる?", "最近私が練習してることって何？", "私の猫の名前覚えてる?"]


def _stores() -> list[Any]:
    params: list[Any] = [pytest.param("memory", id="in-memory-double")]
    marks = [] if importlib.util.find_spec("omoide_store_qdrant") else [
        pytest.mark.skip(reason="plugin store_qdrant is not installed")]
    params.append(pytest.param("qdrant", id="qdrant-local", marks=marks))
    return params


@pytest.fixture(params=_stores())
async def engine(request: pytest.FixtureRequest, make_engine, tmp_path: Path) -> MemoryEngine:  # type: ignore[no-untyped-def]
    if request.param == "qdrant":
        from omoide_store_qdrant.config import QdrantStoreConfig
        from omoide_store_qdrant.store import QdrantStore
        store: Any = QdrantStore(QdrantStoreConfig(path=str(tmp_path / "qdrant")))
    else:
        store = InMemoryStore(MemoryStoreConfig())
    engine = await make_engine(store=store, time_budget_ms=30_000)
    for user in USERS:
        # the same memory ids for everyone, and texts that differ only in the name
        await engine.add_memories(user, [
            Memory(f"m{j}", user, t.format(who=f"{user}-friend"), NOW)
            for j, t in enumerate(TEMPLATES)])
    return engine


async def test_recall_returns_only_the_asking_users_memories(engine: MemoryEngine) -> None:
    for user in USERS:
        for q in QUERIES:
            recall = await engine.recall(user, q, NOW)
            assert in_prompt(recall), (user, q)
            for m in in_prompt(recall):
                assert m.user == user and f"{user}-friend" in m.text
            baseline = await engine.recall(user, q, NOW, engine="baseline")
            assert all(r.memory.user == user for r in baseline.memories)


async def test_list_search_get_and_export_stay_inside_one_user(engine: MemoryEngine) -> None:
    for user in USERS:
        listed = await engine.list_memories(user)
        assert len(listed) == len(TEMPLATES)
        assert all(m.user == user and f"{user}-friend" in m.text for m in listed)
        found = await engine.search(user, "箱根", limit=10)
        assert all(r.memory.user == user for r in found)
        got = await engine.get(user, "m0")
        assert got is not None and f"{user}-friend" in got.text
        assert all(f"{user}-friend" in item["text"] for item in await engine.export(user))


async def test_forgetting_one_users_memory_leaves_the_others(engine: MemoryEngine) -> None:
    assert await engine.forget(USERS[0], "m0")
    assert await engine.get(USERS[0], "m0") is None
    for user in USERS[1:]:
        assert await engine.get(user, "m0") is not None


async def test_an_unknown_user_sees_nothing(engine: MemoryEngine) -> None:
    for q in QUERIES:
        assert (await engine.recall("stranger", q, NOW)).memories == []
    assert await engine.list_memories("stranger") == []
    assert await engine.get("stranger", "m0") is None
