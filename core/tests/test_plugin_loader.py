"""The plugin loader: discovery by entry point, failure isolation, selective loading."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from omoide.plugins import PluginRegistry


def _dist(site: Path, dist: str, plugin: str, module: str, code: str,
          provides: dict[str, str] | None = None) -> None:
    """Write a minimal installed distribution (dist-info + module) into ``site``."""
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    eps = f"[omoide.plugins]\n{plugin} = {module}\n"
    if provides:
        eps += "[omoide.components]\n" + "".join(f"{k} = {v}\n" for k, v in provides.items())
    (info / "entry_points.txt").write_text(eps)
    (site / f"{module}.py").write_text(textwrap.dedent(code))


GOOD_TTS = """
from omoide.hookspecs import hookimpl
from omoide.testing.doubles import FakeTTS

class GoodTTS(FakeTTS):
    name = "good"

@hookimpl
def register_tts(register):
    register(GoodTTS)
"""


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Path]:
    sys.path.insert(0, str(tmp_path))
    yield tmp_path
    sys.path.remove(str(tmp_path))
    for name in [m for m in sys.modules if m.startswith("omoidetest_")]:
        del sys.modules[name]


def _registry() -> PluginRegistry:
    registry = PluginRegistry()
    registry.discover()
    return registry


def test_a_plugin_is_found_by_entry_point_and_registers_components(site: Path) -> None:
    _dist(site, "omoide-good", "good", "omoidetest_good", GOOD_TTS, {"tts.good": "good"})
    registry = _registry()
    registry.load("good")
    info = registry.plugins["good"]
    assert info.error is None and info.loaded
    assert info.components == [("tts", "good")]
    assert info.distribution == "omoide-good" and info.version == "1.0"
    assert "register_tts" in info.hooks
    assert registry.components["tts"]["good"].__name__ == "GoodTTS"


def test_a_plugin_that_raises_on_import_is_reported_not_fatal(site: Path) -> None:
    _dist(site, "omoide-broken", "broken", "omoidetest_broken", "raise RuntimeError('boom')")
    _dist(site, "omoide-good", "good", "omoidetest_good", GOOD_TTS)
    registry = _registry()
    registry.load_all()
    assert "RuntimeError: boom" in (registry.plugins["broken"].error or "")
    assert registry.plugins["good"].loaded


def test_two_distributions_claiming_one_name_is_an_error_naming_both(site: Path) -> None:
    _dist(site, "omoide-first", "clash", "omoidetest_first", GOOD_TTS)
    _dist(site, "omoide-second", "clash", "omoidetest_second", GOOD_TTS)
    registry = _registry()
    registry.load_all()
    error = registry.plugins["clash"].error or ""
    assert "omoide-first" in error and "omoide-second" in error
    assert not registry.plugins["clash"].loaded
    assert any("clash" in p for p in registry.problems)


def test_a_misspelled_hook_fails_check_pending_for_that_plugin_only(site: Path) -> None:
    _dist(site, "omoide-typo", "typo", "omoidetest_typo", """
        from omoide.hookspecs import hookimpl
        @hookimpl
        def register_ttts(register):
            pass
    """)
    _dist(site, "omoide-good", "good", "omoidetest_good", GOOD_TTS)
    registry = _registry()
    registry.load_all()
    assert "register_ttts" in (registry.plugins["typo"].error or "")
    assert registry.plugins["good"].loaded
    registry.pm.check_pending()  # the broken plugin was unregistered


def test_two_plugins_registering_one_component_name_conflict(site: Path) -> None:
    _dist(site, "omoide-a", "a_plugin", "omoidetest_a", GOOD_TTS)
    _dist(site, "omoide-b", "b_plugin", "omoidetest_b", GOOD_TTS)
    registry = _registry()
    registry.load_all()
    assert registry.plugins["a_plugin"].loaded
    assert "already registered by plugin a_plugin" in (registry.plugins["b_plugin"].error or "")


def test_registering_a_non_component_is_an_error(site: Path) -> None:
    _dist(site, "omoide-bad", "bad", "omoidetest_bad", """
        from omoide.hookspecs import hookimpl
        @hookimpl
        def register_asr(register):
            register(object)
    """)
    registry = _registry()
    registry.load("bad")
    assert "not a subclass of ASR" in (registry.plugins["bad"].error or "")


def test_only_plugins_the_config_uses_are_imported(site: Path) -> None:
    _dist(site, "omoide-good", "good", "omoidetest_good", GOOD_TTS, {"tts.good": "good"})
    _dist(site, "omoide-other", "other", "omoidetest_other", GOOD_TTS.replace('"good"', '"other"'),
          {"tts.other": "other"})
    registry = _registry()
    registry.load_for([("tts", "good")])
    assert registry.plugins["good"].loaded
    assert not registry.plugins["other"].loaded
    assert "omoidetest_other" not in sys.modules


def test_an_undeclared_name_makes_the_loader_look_everywhere(site: Path) -> None:
    _dist(site, "omoide-good", "good", "omoidetest_good", GOOD_TTS)  # declares nothing
    registry = _registry()
    registry.load_for([("tts", "good")])
    assert "good" in registry.components["tts"]
