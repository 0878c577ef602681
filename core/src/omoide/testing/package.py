"""The package contract every plugin distribution passes.

    from omoide.testing import PluginPackageContract

    class TestPackage(PluginPackageContract):
        plugin_name = "store_qdrant"
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import ClassVar

import pytest

from omoide.plugins import PluginRegistry
from omoide.testing.contracts import assert_config_strict_and_described

HEAVY_MODULES = ("torch", "transformers", "onnxruntime", "tensorflow", "jax")


class PluginPackageContract:
    plugin_name: ClassVar[str]
    expected_components: ClassVar[set[tuple[str, str]] | None] = None
    """Set it to the ``(kind, name)`` pairs the plugin must register, to pin them."""

    @pytest.fixture(scope="class")
    @classmethod
    def registry(cls) -> PluginRegistry:
        registry = PluginRegistry()
        registry.discover()
        registry.load(cls.plugin_name)
        return registry

    def test_entry_point_resolves_and_loads(self, registry: PluginRegistry) -> None:
        info = registry.plugins.get(self.plugin_name)
        assert info is not None, f"no entry point {self.plugin_name!r} in group omoide.plugins"
        assert info.error is None, info.error
        assert info.loaded

    def test_import_leaves_heavy_modules_out(self, registry: PluginRegistry) -> None:
        module = registry.plugins[self.plugin_name].module.split(":")[0]
        code = (f"import sys, json, importlib; importlib.import_module({module!r});"
                f"print(json.dumps([m for m in {list(HEAVY_MODULES)!r} if m in sys.modules]))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=120, check=True)
        assert json.loads(out.stdout.strip().splitlines()[-1]) == []

    def test_hooks_match_specs(self, registry: PluginRegistry) -> None:
        registry.pm.check_pending()
        assert registry.plugins[self.plugin_name].error is None

    def test_component_configs_are_strict_and_described(self, registry: PluginRegistry) -> None:
        for kind, name in registry.plugins[self.plugin_name].components:
            assert_config_strict_and_described(registry.components[kind][name].Config)

    def test_declared_components_match_registered(self, registry: PluginRegistry) -> None:
        info = registry.plugins[self.plugin_name]
        declared = [d for d in info.declared if d[0] != "command"]   # commands: see below
        assert sorted(declared) == sorted(info.components), (
            "declare every registered component in [project.entry-points.\"omoide.components\"]"
            " as `<kind>.<name> = <plugin id>` so configs load only the plugins they use")

    def test_a_plugin_adding_commands_declares_them(self, registry: PluginRegistry) -> None:
        info = registry.plugins[self.plugin_name]
        if "register_commands" not in info.hooks:
            pytest.skip("adds no commands")
        assert any(kind == "command" for kind, _ in info.declared), (
            "declare each command as `\"command.NAME\" = <plugin id>` in"
            " [project.entry-points.\"omoide.components\"]: the command line loads only"
            " the plugins that declare one")

    def test_registers_the_expected_components(self, registry: PluginRegistry) -> None:
        if self.expected_components is None:
            pytest.skip("expected_components not pinned")
        assert set(registry.plugins[self.plugin_name].components) == self.expected_components
