"""The memory skill over omoide's real memory engine (embedder and store are test doubles)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from omoide.components import ToolContext, ToolError
from omoide.memory.config import MemoryConfig
from omoide.memory.engine import MemoryEngine
from omoide.testing import ToolContract
from omoide.testing.doubles import HashEmbedder, InMemoryStore, ToolHostDouble
from omoide.types import Memory
from omoide_skills.memory_voice import MemoryTool

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[MemoryEngine]:
    embedder = HashEmbedder(HashEmbedder.Config(dims=64))
    store = InMemoryStore(InMemoryStore.Config())
    await embedder.start()
    await store.start()
    engine = MemoryEngine(MemoryConfig(), embedder=embedder, store=store, chat=None,
                          data_dir=tmp_path / "memory", timezone="Asia/Tokyo")
    await engine.start()
    await engine.add_memories("alice", [
        Memory("m1", "alice", "あなたは来週の土曜日に友達と箱根に行く予定だ。", NOW),
        Memory("m2", "alice", "あなたは駅前の新しい店のみそラーメンが好きだ。", NOW),
    ])
    await engine.add_memories("bob", [Memory("b1", "bob", "あなたは箱根に住んでいる。", NOW)])
    yield engine
    await engine.stop()


def _context(user: str = "alice", *, confirmed: bool = False) -> ToolContext:
    return ToolContext(user, NOW, "Asia/Tokyo", confirmed=confirmed)


class TestMemoryTool(ToolContract):
    component_cls = MemoryTool

    @pytest.fixture
    def host(self, tmp_path: Path, engine: MemoryEngine) -> Any:
        return ToolHostDouble(tmp_path / "tool", memory=engine)

    @pytest.fixture
    def sample_calls(self) -> dict[str, dict[str, Any]]:
        return {"remember": {"fact": "あなたは猫を飼っている。"}, "what_you_know_about_me": {}}

    async def test_remember_stores_now_without_extraction(
            self, component: MemoryTool, engine: MemoryEngine) -> None:
        said = await component.invoke("remember", {"fact": "あなたは毎朝6時に起きる。"},
                                      _context())
        assert said["message"] == "わかった、覚えておくね。"
        assert "あなたは毎朝6時に起きる。" in [m.text for m in await engine.list_memories("alice")]
        assert [m.text for m in await engine.list_memories("bob")] == ["あなたは箱根に住んでいる。"]

    async def test_forgetting_asks_about_the_memory_it_found(self, component: MemoryTool,
                                                             engine: MemoryEngine) -> None:
        asked = await component.prepare("forget_memory", {"about": "箱根"}, _context())
        assert asked.question == ("「あなたは来週の土曜日に友達と箱根に行く予定だ」"
                                  "という記憶を忘れていい？")
        assert asked.arguments is not None and asked.arguments["memory_ids"] == ["m1"]
        assert len(await engine.list_memories("alice")) == 2

    async def test_a_confirmed_forget_forgets_only_that_memory_of_that_person(
            self, component: MemoryTool, engine: MemoryEngine) -> None:
        asked = await component.prepare("forget_memory", {"about": "箱根"}, _context())
        assert asked.arguments is not None
        said = await component.invoke("forget_memory", dict(asked.arguments),
                                      _context(confirmed=True))
        assert said == {"forgotten": 1, "message": "わかった、忘れたよ。"}
        assert [m.id for m in await engine.list_memories("alice")] == ["m2"]
        assert [m.id for m in await engine.list_memories("bob")] == ["b1"]

    async def test_forgetting_what_nobody_said_is_refused_with_a_sentence(
            self, component: MemoryTool) -> None:
        with pytest.raises(ToolError, match="見つからなかった"):
            await component.prepare("forget_memory", {"about": "宇宙旅行"},
                                    _context("carol"))

    async def test_another_persons_memory_ids_cannot_be_forgotten(
            self, component: MemoryTool, engine: MemoryEngine) -> None:
        said = await component.invoke("forget_memory", {"about": "箱根", "memory_ids": ["b1"]},
                                      _context(confirmed=True))
        assert said["forgotten"] == 0
        assert [m.id for m in await engine.list_memories("bob")] == ["b1"]

    async def test_what_you_know_about_me_is_a_spoken_summary(
            self, component: MemoryTool) -> None:
        said = await component.invoke("what_you_know_about_me", {}, _context())
        assert said["message"].startswith("覚えているのは、")
        assert "箱根に行く予定だ" in said["message"] and "あなたは" not in said["message"]
        empty = await component.invoke("what_you_know_about_me", {}, _context("carol"))
        assert empty["facts"] == [] and "まだ" in empty["message"]

    async def test_an_overlong_fact_is_refused(self, component: MemoryTool) -> None:
        with pytest.raises(ToolError, match="長すぎる"):
            await component.invoke("remember", {"fact": "あ" * 500}, _context())


async def test_without_memory_the_skill_does_not_start(tmp_path: Path) -> None:
    tool = MemoryTool(MemoryTool.Config())
    tool.attach(ToolHostDouble(tmp_path))
    with pytest.raises(ToolError, match="needs omoide's memory"):
        await tool.start()
