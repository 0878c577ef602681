"""A plugin's memory engine and extractor are chosen by ``use:`` and run like omoide's own;
the core keeps its guarantees whatever the engine does."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from omoide.config import Settings, load_yaml, validate_config
from omoide.errors import ConfigError
from omoide.memory.engine import MemoryEngine
from omoide.plugins import PluginRegistry, build_registry
from omoide.testing import ExtractorContract, MemoryEngineContract
from omoide.testing.doubles import (
    HashEmbedder,
    HashEmbedderConfig,
    InMemoryStore,
    MemoryStoreConfig,
)
from omoide.types import Exchange

from . import notebook_plugin
from .notebook_plugin import NotebookEngine, SaidExtractor

TZ = "Asia/Tokyo"
NOW = datetime(2026, 9, 28, 12, 0, tzinfo=ZoneInfo(TZ))
FAKES = """
asr: {use: fake}
embed: {use: fake}
store: {use: fake}
chat: {use: fake}
tts: {use: fake}
"""


@pytest.fixture(scope="module")
def registry() -> PluginRegistry:
    """The doubles, omoide's memory plugin and the notebook plugin."""
    registry = build_registry([("asr", "fake"), ("memory_engine", "robust")])
    registry.load_module("notebook", notebook_plugin)
    return registry


def _settings(memory: str, registry: PluginRegistry) -> Settings:
    return validate_config(load_yaml(FAKES + memory), source="t.yaml", registry=registry,
                           environ={})


def _problems(memory: str, registry: PluginRegistry) -> dict[str, str]:
    with pytest.raises(ConfigError) as info:
        _settings(memory, registry)
    return {p.path: p.message for p in info.value.problems}


async def _core(settings: Settings, tmp_path: Path) -> MemoryEngine:
    stages = {path: choice.cls(choice.config) for path, choice in settings.components.items()
              if path in ("memory.retrieve", "memory.extract")}
    embedder = HashEmbedder(HashEmbedderConfig(dims=64))
    store = InMemoryStore(MemoryStoreConfig())
    await embedder.start()
    await store.start()
    core = MemoryEngine(settings.memory.model_copy(update={"time_budget_ms": 10_000.0}),
                        embedder=embedder, store=store, chat=None, data_dir=tmp_path,
                        timezone=TZ, read_engine=stages["memory.retrieve"],  # type: ignore[arg-type]
                        extractor=stages["memory.extract"])  # type: ignore[arg-type]
    await core.start()
    return core


@pytest.fixture
async def notebook_core(registry: PluginRegistry, tmp_path: Path,
                        ) -> AsyncIterator[MemoryEngine]:
    settings = _settings("memory: {retrieve: {use: notebook, min_shared: 4},"
                         " extract: {use: said}}", registry)
    core = await _core(settings, tmp_path)
    yield core
    await core.stop()


def test_use_picks_a_plugins_engine_and_extractor_with_their_options(
        registry: PluginRegistry) -> None:
    settings = _settings("memory: {retrieve: {use: notebook, min_shared: 4},"
                         " extract: {use: said, prefix: 'あなたは「'}}", registry)
    engine, extractor = settings.components["memory.retrieve"], settings.components[
        "memory.extract"]
    assert (engine.cls, engine.config.min_shared) == (NotebookEngine, 4)  # type: ignore[attr-defined]
    assert extractor.cls is SaidExtractor


def test_omoide_picks_robust_and_chat_when_the_config_says_nothing(
        registry: PluginRegistry) -> None:
    settings = _settings("", registry)
    assert settings.components["memory.retrieve"].cls.name == "robust"
    assert settings.components["memory.extract"].cls.name == "chat"


def test_the_engine_shorthand_still_picks_an_engine(registry: PluginRegistry) -> None:
    settings = _settings("memory: {engine: baseline}", registry)
    assert settings.components["memory.retrieve"].cls.name == "baseline"


def test_every_memory_stage_problem_is_listed_with_its_yaml_path(
        registry: PluginRegistry) -> None:
    problems = _problems("memory: {retrieve: {use: notebok}, extract: {use: said, prefx: x},"
                         " robust: {rrf_k: 5}, max_results: -1}", registry)
    assert "did you mean 'notebook'" in problems["memory.retrieve.use"]
    assert "unknown setting" in problems["memory.extract.prefx"]
    assert "memory: {retrieve: {use: robust" in problems["memory.robust"]
    assert "memory.max_results" in problems


def test_an_unknown_engine_named_by_the_shorthand_is_reported_where_it_was_written(
        registry: PluginRegistry) -> None:
    problems = _problems("memory: {engine: robst}", registry)
    assert "did you mean 'robust'" in problems["memory.engine"]


def test_the_shorthand_and_retrieve_together_are_refused(registry: PluginRegistry) -> None:
    problems = _problems("memory: {engine: baseline, retrieve: {use: robust}}", registry)
    assert "one or the other" in problems["memory.engine"]


def test_options_of_the_robust_engine_sit_beside_use(registry: PluginRegistry) -> None:
    settings = _settings("memory: {retrieve: {use: robust, rrf_k: 5}}", registry)
    assert settings.components["memory.retrieve"].config.rrf_k == 5  # type: ignore[attr-defined]


async def test_a_plugins_stages_extract_and_recall_through_the_core(
        notebook_core: MemoryEngine) -> None:
    await notebook_core.record_exchange(Exchange("x1", "me", "来週の土曜日は箱根で温泉に入るんだ",
                                                 "いいね！", NOW - timedelta(minutes=3)))
    report = await notebook_core.extract_now("me")
    assert [m.text for m in report.stored] == [
        "あなたは「来週の土曜日は箱根で温泉に入るんだ」と言った。"]
    recall = await notebook_core.recall("me", "箱根で温泉って話したっけ", NOW)
    assert recall.engine == "notebook"
    assert [r.memory.id for r in recall.memories] == [report.stored[0].id]


async def test_a_plugin_engine_hears_of_forgotten_memories(
        notebook_core: MemoryEngine) -> None:
    await notebook_core.record_exchange(Exchange("x1", "me", "来週の土曜日は箱根で温泉に入るんだ",
                                                 "いいね！", NOW - timedelta(minutes=3)))
    stored = (await notebook_core.extract_now("me")).stored[0]
    assert await notebook_core.forget("me", stored.id)
    recall = await notebook_core.recall("me", "箱根で温泉って話したっけ", NOW)
    assert recall.memories == []


async def _recall_with(engine: str, registry: PluginRegistry, tmp_path: Path,
                       **memory: Any) -> Any:
    options = ", ".join(f"{k}: {v}" for k, v in memory.items())
    settings = _settings(f"memory: {{retrieve: {{use: {engine}}}, {options}}}"
                         if options else f"memory: {{retrieve: {{use: {engine}}}}}", registry)
    core = await _core(settings, tmp_path)
    core.config = core.config.model_copy(update=memory)
    try:
        await core.add_memories("me", [])
        return await core.recall("me", "週末の予定覚えてる?", NOW)
    finally:
        await core.stop()


async def test_an_engine_that_never_answers_costs_the_turn_only_its_memory(
        registry: PluginRegistry, tmp_path: Path) -> None:
    recall = await _recall_with("stalled", registry, tmp_path, time_budget_ms=30.0)
    assert recall.timed_out and recall.memories == [] and recall.error is None


async def test_an_engine_that_fails_costs_the_turn_only_its_memory(
        registry: PluginRegistry, tmp_path: Path) -> None:
    recall = await _recall_with("broken", registry, tmp_path)
    assert recall.memories == [] and "store down" in (recall.error or "")


async def test_another_persons_memory_from_an_engine_is_dropped(
        registry: PluginRegistry, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="omoide.memory"):
        recall = await _recall_with("leaky", registry, tmp_path)
    assert all(r.memory.user == "me" for r in recall.memories)
    assert "another person" in caplog.text


class TestNotebookEngineContract(MemoryEngineContract):
    component_cls = NotebookEngine

    @pytest.fixture
    def sample(self) -> tuple[str, str]:
        # no dates, no meaning: the notebook matches character pairs only
        return "あなたは箱根の温泉が好きだ。", "箱根の温泉って話したっけ"


class TestSaidExtractorContract(ExtractorContract):
    component_cls = SaidExtractor
