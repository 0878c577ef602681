"""omoide-bench is a plugin like any other: its entry point loads, cheaply, and its hooks
match the specifications."""

from __future__ import annotations

from typing import ClassVar

from omoide.testing import PluginPackageContract


class TestBenchPackage(PluginPackageContract):
    plugin_name = "bench"
    expected_components: ClassVar[set[tuple[str, str]] | None] = set()
