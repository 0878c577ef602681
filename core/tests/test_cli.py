"""The ``omoide`` command: config check/schema, plugins, cheap start-up."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from omoide.cli import main

VALID = """
asr: {use: fake}
embed: {use: fake}
store: {use: fake}
chat: {use: fake}
tts: {use: fake}
"""


def test_config_check_exits_0_for_a_valid_file(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text(VALID)
    assert main(["config", "check", str(path)]) == 0
    assert "valid" in capsys.readouterr().out


def test_config_check_exits_2_listing_every_problem(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(VALID.replace("tts: {use: fake}", "tts: {use: fak}")
                    .replace("chat: {use: fake}", "chat: {use: fake, first_token_ms: -1}")
                    + "server: {prot: 80}\n")
    assert main(["config", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "3 problem(s)" in err
    for path_text in ("tts.use", "chat.first_token_ms", "server.prot"):
        assert path_text in err


def test_config_check_of_invalid_yaml_exits_2(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("asr: [unclosed\n")
    assert main(["config", "check", str(path)]) == 2
    assert "not valid YAML" in capsys.readouterr().err


def test_config_schema_describes_envelope_and_components(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert "assistant" in schema["properties"]
    assert "fake" in schema["x-omoide-components"]["tts"]


def test_plugins_json_lists_name_distribution_version_hooks_components(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins", "--json"]) == 0
    plugins = {p["name"]: p for p in json.loads(capsys.readouterr().out)}
    testing = plugins["testing"]
    assert testing["distribution"] == "omoide-test-doubles"
    assert "register_tts" in testing["hooks"]
    assert {"kind": "tts", "name": "fake"} in testing["components"]


def test_help_does_not_import_heavy_libraries() -> None:
    code = ("import sys; from omoide.cli import build_parser; build_parser();"
            "print([m for m in ('torch', 'transformers', 'onnxruntime') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "[]"
