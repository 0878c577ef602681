"""``omoide demo``: the scenario runs end to end, and the shipped config knows its lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("omoide_device_stackchan")
pytest.importorskip("pyopenjtalk")

from omoide.commands.demo import RECALL_QUESTIONS, SETUP_LINES, prepare_config
from omoide.commands.demo_skills import SKILL_LINES

DOUBLES = """
assistant: {name: かな, timezone: Asia/Tokyo}
server: {data_dir: ./unused}
vad:   {use: fake}
asr:   {use: fake, text: 駅前に新しいラーメン屋ができたから行ってきたよ}
embed: {use: fake}
store: {use: fake}
chat:  {use: fake, reply: "[laughing] へえ。"}
tts:   {use: fake}
devices:
  - {use: stackchan}
"""


def test_the_offline_phrase_book_knows_every_line_the_demo_user_says(configs: Path) -> None:
    asr = yaml.safe_load((configs / "offline.yaml").read_text(encoding="utf-8"))["asr"]
    if asr.get("use") != "phrasebook":
        pytest.skip("offline.yaml does not use the phrase-book recogniser")
    missing = [p for p in (*SETUP_LINES, *RECALL_QUESTIONS) if p not in asr["phrases"]]
    assert missing == []


def test_prepared_config_moves_data_and_completes_the_phrase_list(tmp_path: Path) -> None:
    source = tmp_path / "offline.yaml"
    source.write_text(yaml.safe_dump({
        "server": {"data_dir": "./data"}, "store": {"use": "qdrant", "path": "./data/q"},
        "asr": {"use": "phrasebook", "phrases": [SETUP_LINES[0]]}}, allow_unicode=True))
    data = prepare_config(source, tmp_path / "demo")
    assert data["server"]["data_dir"] == str(tmp_path / "demo")
    assert data["store"]["path"].startswith(str(tmp_path / "demo"))
    assert set(data["asr"]["phrases"]) == {*SETUP_LINES, *RECALL_QUESTIONS, *SKILL_LINES}


@pytest.mark.slow
def test_demo_runs_the_whole_scenario_with_test_doubles(omoide_cli: Any,
                                                        tmp_path: Path) -> None:
    config = tmp_path / "demo.yaml"
    config.write_text(DOUBLES, encoding="utf-8")
    result = omoide_cli("demo", "--config", str(config), "--fast", "--out",
                        str(tmp_path / "replies"), timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    for line in (*SETUP_LINES, *RECALL_QUESTIONS):
        assert f"user : {line}" in out
    assert out.count("robot 😆 [laughing]: へえ。") == 10
    assert out.count("ms after end of speech") == 10
    assert "activation code" in out and "== forced extraction" in out
    assert "what stood in for a real model" in out
    assert len(list((tmp_path / "replies").glob("reply-*.wav"))) == 10
