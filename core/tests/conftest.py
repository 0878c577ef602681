"""Fixtures for the core's tests: the test-double components, loaded as a plugin."""

from __future__ import annotations

import pytest

from omoide.plugins import PluginRegistry, build_registry


@pytest.fixture
def registry() -> PluginRegistry:
    """A registry with only the ``testing`` plugin (the doubles) loaded."""
    return build_registry([("asr", "fake")])
