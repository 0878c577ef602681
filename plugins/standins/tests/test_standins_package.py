"""The standins distribution passes the package contract and labels its stand-in and its
test double."""

from __future__ import annotations

from typing import ClassVar

from omoide.plugins import PluginRegistry
from omoide.testing import PluginPackageContract


class TestStandinsPackage(PluginPackageContract):
    plugin_name = "standins"
    expected_components: ClassVar[set[tuple[str, str]]] = {("chat", "standin"),
                                                           ("asr", "phrasebook")}


def test_every_component_says_what_it_stands_in_for_or_that_it_is_a_test_double() -> None:
    registry = PluginRegistry()
    registry.discover()
    registry.load("standins")
    for kind, name in registry.plugins["standins"].components:
        stand_in = registry.components[kind][name].stand_in
        assert stand_in and stand_in.startswith(("stands in for", "a test double")), \
            (kind, name)
