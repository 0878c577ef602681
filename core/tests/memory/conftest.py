"""Fixtures for the memory engine's tests: an engine over the test doubles."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from omoide.memory.config import MemoryConfig
from omoide.memory.engine import MemoryEngine
from omoide.testing.doubles import (
    FakeChat,
    FakeChatConfig,
    HashEmbedder,
    HashEmbedderConfig,
    InMemoryStore,
    MemoryStoreConfig,
)
from omoide.types import Memory

TZ = "Asia/Tokyo"
EngineFactory = Callable[..., Awaitable[MemoryEngine]]


@pytest.fixture
async def make_engine(tmp_path: Path) -> AsyncIterator[EngineFactory]:
    """Builds started engines over HashEmbedder + InMemoryStore (test doubles)."""
    engines: list[MemoryEngine] = []

    async def make(chat: Any = None, store: Any = None, embedder: Any = None,
                   data_dir: Path | None = None, **config: Any) -> MemoryEngine:
        emb = embedder or HashEmbedder(HashEmbedderConfig(dims=64))
        await emb.start()
        st = store or InMemoryStore(MemoryStoreConfig())
        await st.start()
        # A generous time budget unless a test sets one: these tests judge what recall
        # finds, and a loaded machine must not turn that into a race with the clock.
        config = {"time_budget_ms": 10_000.0, **config}
        engine = MemoryEngine(MemoryConfig(**config), embedder=emb, store=st, chat=chat,
                              data_dir=data_dir or tmp_path / f"data{len(engines)}", timezone=TZ)
        await engine.start()
        engines.append(engine)
        return engine

    yield make
    for e in engines:
        await e.stop()


def fake_chat(reply: str, **options: Any) -> FakeChat:
    """The chat test double answering ``reply`` to every request."""
    return FakeChat(FakeChatConfig(reply=reply, **options))


def in_prompt(recall: Any) -> list[Any]:
    """Every memory a recall puts in the prompt: the episodic ones, then the profile."""
    return [r.memory for r in recall.memories] + [f.memory for f in recall.profile.facts]


@pytest.fixture
def engine_told(make_engine: EngineFactory) -> Callable[..., Awaitable[MemoryEngine]]:
    """Builds an engine over the test doubles told ``memories`` (id -> (day, text), said
    at 20:00 that day) as the memories of user ``me``; other arguments configure it."""
    async def build(memories: dict[str, tuple[str, str]], **config: Any) -> MemoryEngine:
        engine = await make_engine(**{"time_budget_ms": 30_000, **config})
        await engine.add_memories("me", [
            Memory(k, "me", text, datetime.fromisoformat(day + "T20:00:00+09:00"))
            for k, (day, text) in memories.items()])
        return engine
    return build


@pytest.fixture
async def engine(request: pytest.FixtureRequest,
                 engine_told: Callable[..., Awaitable[MemoryEngine]]) -> MemoryEngine:
    """An engine over the test doubles told the test module's ``MEMORIES``
    (:func:`engine_told`), configured by its ``ENGINE_CONFIG`` when it has one. A module
    whose engine is built otherwise defines its own ``engine`` fixture."""
    told: MemoryEngine = await engine_told(request.module.MEMORIES,
                                           **getattr(request.module, "ENGINE_CONFIG", {}))
    return told


async def recalled(engine: MemoryEngine, text: str, now: datetime) -> list[str]:
    """The ids of the memories ``engine`` recalls for user ``me`` saying ``text`` at
    ``now``, in the order recalled."""
    return [r.memory.id for r in (await engine.recall("me", text, now)).memories]
