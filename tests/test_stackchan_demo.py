"""``omoide demo``: the scenario runs end to end and shows what was heard and misheard."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("omoide_device_stackchan")
pytest.importorskip("pyopenjtalk")

from omoide.commands.demo import RECALL_QUESTIONS, SETUP_LINES, mishearings, prepare_config

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


def test_prepared_config_moves_the_data_into_the_demo_folder(tmp_path: Path) -> None:
    source = tmp_path / "offline.yaml"
    source.write_text(yaml.safe_dump({
        "server": {"data_dir": "./data"}, "store": {"use": "qdrant", "path": "./data/q"},
        "asr": {"use": "whisper"}}, allow_unicode=True))
    data = prepare_config(source, tmp_path / "demo")
    assert data["server"]["data_dir"] == str(tmp_path / "demo")
    assert data["store"]["path"].startswith(str(tmp_path / "demo"))
    assert data["asr"] == {"use": "whisper"}


def test_mishearings_are_shown_piece_by_piece_ignoring_punctuation() -> None:
    heard = "来週の土曜日に友達と箱寝に行くんだ。"
    assert mishearings("来週の土曜日に友達と箱根に行くんだ", heard) == [("根", "寝")]
    assert mishearings("週末の予定覚えてる?", "週末の予定覚えてる？") == []
    assert mishearings("週末の予定覚えてる?", "週末の予定を覚えている") == [("", "を"), ("", "い")]


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
    assert "heard exactly: 1 of 10 lines" in out   # the double hears one line for all
    assert len(list((tmp_path / "replies").glob("reply-*.wav"))) == 10
