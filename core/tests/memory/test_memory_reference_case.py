"""The reference's own failure, as a test: recall must not hang on one punctuation mark.

Memories and "now" (Sunday 2026-09-27 21:00 JST) are those of issue 3. Runs with the
real multilingual-e5-small embedder when its plugin is installed, and with the
hashing test double always (the robust engine must not depend on one embedder).
"""

from __future__ import annotations

import importlib.util
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from omoide.memory.engine import MemoryEngine
from omoide.testing.doubles import HashEmbedder, HashEmbedderConfig
from omoide.types import Memory

from .conftest import in_prompt

NOW = datetime(2026, 9, 27, 21, 0, tzinfo=ZoneInfo("Asia/Tokyo"))
RAMEN = "あなたは駅前の新しいラーメン屋でみそラーメンを食べ、とても気に入りまた行きたいと思っている。"
HAKONE = "あなたは来週の土曜日（2026年10月3日）に友達と箱根に行く予定だ。"
GUITAR = "あなたは最近、仕事終わりにギターの練習をしている。"


def _embedders() -> list[object]:
    params: list[object] = [pytest.param("hash", id="hash-double")]
    if importlib.util.find_spec("omoide_embed_e5") is not None:
        params.append(pytest.param("e5", id="e5"))
    else:
        params.append(pytest.param("e5", id="e5", marks=pytest.mark.skip(
            reason="plugin embed_e5 (multilingual-e5-small) is not installed")))
    return params


@pytest.fixture(params=_embedders())
async def engine(request: pytest.FixtureRequest, make_engine) -> MemoryEngine:  # type: ignore[no-untyped-def]
    if request.param == "e5":
        from omoide_embed_e5.embedder import E5Config, E5Embedder
        embedder = E5Embedder(E5Config())
    else:
        embedder = HashEmbedder(HashEmbedderConfig(dims=256))
    # a generous budget: this is about what is recalled, not how fast (a busy CI machine)
    engine = await make_engine(embedder=embedder, time_budget_ms=30_000)
    said = datetime(2026, 9, 27, 20, 50, tzinfo=ZoneInfo("Asia/Tokyo"))
    await engine.add_memories("me", [Memory("ramen", "me", RAMEN, said),
                                     Memory("hakone", "me", HAKONE, said),
                                     Memory("guitar", "me", GUITAR, said)])
    return engine


@pytest.mark.parametrize("query", ["週末の予定覚えてる?", "週末の予定覚えてる？", "週末の予定覚えてる"])
async def test_weekend_plan_is_recalled_whatever_the_punctuation(engine: MemoryEngine,
                                                                 query: str) -> None:
    recall = await engine.recall("me", query, NOW)
    assert not recall.timed_out
    assert [r.memory.id for r in recall.memories][:1] == ["hakone"]


async def test_what_i_practise_finds_the_guitar_in_the_prompt(engine: MemoryEngine) -> None:
    # An ongoing habit is a profile fact: it is in every prompt, not retrieved per turn.
    recall = await engine.recall("me", "最近私が練習してることって何？", NOW)
    assert "guitar" in [m.id for m in in_prompt(recall)]
    assert "guitar" not in [r.memory.id for r in recall.memories]


@pytest.mark.parametrize("query", ["おすすめの映画ある？", "日本で一番高い山は？"])
async def test_general_questions_inject_nothing(engine: MemoryEngine, query: str) -> None:
    recall = await engine.recall("me", query, NOW)
    assert recall.memories == []


async def test_the_baseline_engine_is_the_reference_algorithm(engine: MemoryEngine) -> None:
    recall = await engine.recall("me", "週末の予定覚えてる?", NOW, engine="baseline")
    assert recall.engine == "baseline"
    assert len(recall.memories) <= 3
    for r in recall.memories:
        assert r.score == pytest.approx(r.channels["dense"] + r.channels["recency"])
        assert r.score >= 0.45
