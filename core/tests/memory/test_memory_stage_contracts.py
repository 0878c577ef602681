"""omoide's own memory stages pass the contracts a plugin's would."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from omoide.memory.extract.chat_extractor import ChatExtractor
from omoide.memory.recall.baseline import BaselineEngine
from omoide.memory.recall.robust import RobustEngine
from omoide.testing import ExtractorContract, MemoryEngineContract, PluginPackageContract


class TestRobustEngine(MemoryEngineContract):
    component_cls = RobustEngine


class TestBaselineEngine(MemoryEngineContract):
    component_cls = BaselineEngine

    @pytest.fixture
    def config(self) -> dict[str, Any]:
        # The reference's threshold is tuned for a real embedder; the hashing double's
        # cosines are lower, and this keeps every candidate the reference would rank.
        return {"threshold": -1.0}


class TestChatExtractor(ExtractorContract):
    component_cls = ChatExtractor


class TestMemoryPluginPackage(PluginPackageContract):
    """The built-in ``memory`` plugin is checked as any plugin's package is."""

    plugin_name = "memory"
    expected_components: ClassVar[set[tuple[str, str]]] = {
        ("memory_engine", "baseline"), ("memory_engine", "robust"), ("extractor", "chat")}
