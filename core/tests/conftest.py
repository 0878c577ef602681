"""Fixtures for the core's tests: the test-double components, loaded as a plugin."""

from __future__ import annotations

import pytest

from omoide.plugins import PluginRegistry, build_registry


@pytest.fixture
def registry() -> PluginRegistry:
    """A registry with the ``testing`` plugin (the doubles) and omoide's ``memory`` plugin
    (the memory stages every config uses) loaded."""
    return build_registry([("asr", "fake"), ("memory_engine", "robust")])
