"""`omoide plugins` sees every in-tree plugin, and a broken plugin is contained."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

SEVEN = {"asr_qwen", "embed_qwen", "store_qdrant", "store_chroma", "chat_modelscope",
         "tts_irodori", "device_stackchan"}
OFFLINE = {"embed_e5", "embed_use", "vad_silero", "tts_openjtalk", "standins", "asr_whisper",
           "tts_kokoro"}


def test_plugins_lists_the_seven_production_plugins_and_the_offline_ones(omoide_cli) -> None:
    out = omoide_cli("plugins", "--json")
    assert out.returncode == 0, out.stderr
    plugins = {p["name"]: p for p in json.loads(out.stdout)}
    assert set(plugins) >= SEVEN | OFFLINE
    for name in SEVEN | OFFLINE:
        assert plugins[name]["error"] is None, (name, plugins[name]["error"])
        assert plugins[name]["distribution"] == "omoide-" + name.replace("_", "-")
        assert plugins[name]["components"], f"{name} registers nothing"


def test_plugins_table_is_readable(omoide_cli) -> None:
    out = omoide_cli("plugins")
    assert out.returncode == 0
    assert out.stdout.splitlines()[0].split()[:3] == ["NAME", "DISTRIBUTION", "VERSION"]
    assert "store_qdrant" in out.stdout


def _broken_distribution(site: Path) -> None:
    info = site / "omoide_broken-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: omoide-broken\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[omoide.plugins]\nbroken = omoidetest_broken_plugin\n"
        "[omoide.components]\ntts.broken = broken\n")
    (site / "omoidetest_broken_plugin.py").write_text(textwrap.dedent("""
        raise ImportError("this plugin needs libfoo, which is not installed")
    """))


def test_a_plugin_that_raises_on_import_is_shown_and_does_not_block_other_configs(omoide_cli,
        tmp_path: Path) -> None:
    _broken_distribution(tmp_path)
    env = {"PYTHONPATH": str(tmp_path)}
    listing = omoide_cli("plugins", env=env)
    assert "FAILED: import failed: ImportError: this plugin needs libfoo" in listing.stdout
    config = tmp_path / "fakes.yaml"
    config.write_text("asr: {use: fake}\nembed: {use: fake}\nstore: {use: fake}\n"
                      "chat: {use: fake}\ntts: {use: fake}\n")
    assert omoide_cli("config", "check", str(config), env=env).returncode == 0
    uses_it = tmp_path / "broken.yaml"
    uses_it.write_text(config.read_text().replace("tts: {use: fake}", "tts: {use: broken}"))
    check = omoide_cli("config", "check", str(uses_it), env=env)
    assert check.returncode == 2
    assert "tts.use: tts 'broken' comes from plugin broken, which failed to load" in check.stderr
