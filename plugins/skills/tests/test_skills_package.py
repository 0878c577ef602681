"""The skills distribution passes the package contract."""

from typing import ClassVar

from omoide.testing import PluginPackageContract


class TestPackage(PluginPackageContract):
    plugin_name = "skills"
    expected_components: ClassVar[set[tuple[str, str]] | None] = {("tool", name) for name in (
        "clock", "timers", "memory", "weather", "home_assistant", "mcp")}
