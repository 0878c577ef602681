"""``omoide bench voice``: the simulated StackChan speaks to a real server on the offline
stack, on the streaming path and on today's (its timing targets are measured and
reported, never asserted here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("omoide_device_stackchan")

from omoide_bench.benches.voice import RATE, breakdown, server_config, trim_silence


def test_todays_path_recognises_after_the_end_and_ends_turns_on_silence(
        tmp_path: Path) -> None:
    today = server_config(None, tmp_path, streaming=False)
    streaming = server_config(None, tmp_path, streaming=True)
    assert today["asr"]["streaming"] is False and "turn" not in today
    assert "streaming" not in streaming["asr"] and streaming["turn"]["use"] == "smart_turn"
    for config in (today, streaming):
        assert config["server"]["data_dir"] == str(tmp_path)
        assert config["store"]["path"].startswith(str(tmp_path))
        assert config["devices"][0]["pairing_required"] is False


def test_todays_path_ends_turns_on_the_vads_default_silence(tmp_path: Path) -> None:
    config = tmp_path / "short.yaml"
    config.write_text("vad: {use: silero, min_silence_ms: 250}\nturn: {use: smart_turn}\n"
                      "asr: {use: whisper}\n", encoding="utf-8")
    assert server_config(str(config), tmp_path, streaming=True)["vad"]["min_silence_ms"] == 250
    assert server_config(str(config), tmp_path, streaming=False)["vad"] == {"use": "silero"}


def test_the_breakdown_splits_the_wait_for_the_first_reply_audio_into_steps() -> None:
    trace = {"stages": {"asr": {"end_ms": 100.0}, "prompt": {"end_ms": 160.0},
                        "chat_first_token": {"end_ms": 170.0},
                        "first_sentence_audio": {"end_ms": 320.0}}}
    # the last word ended at 10.0 s, the VAD heard it 0.4 s later, the turn ended 0.2 s
    # after that, the robot got the first reply frame at 11.0 s
    steps = breakdown((10.0, 10.4, 10.6, 11.0), trace)
    assert steps == {"vad": 400.0, "turn": 200.0, "asr": 100.0, "recall": 60.0,
                     "chat": 10.0, "tts": 150.0, "send": 80.0}
    assert sum(v for v in steps.values() if v is not None) == pytest.approx(1000.0)


def test_a_step_not_traced_is_unknown_not_zero() -> None:
    steps = breakdown((10.0, 10.4, 10.6, None), {"stages": {"asr": {"end_ms": 100.0}}})
    assert steps["asr"] == 100.0 and steps["recall"] is None and steps["send"] is None


def test_the_end_of_the_last_word_is_where_the_voice_stops() -> None:
    t = np.arange(RATE, dtype=np.float32) / RATE
    voice = (0.2 * np.sin(2 * np.pi * 200 * t)).astype(np.float32)
    quiet = np.zeros(RATE // 2, dtype=np.float32)
    trimmed = trim_silence(np.concatenate([quiet, voice, quiet]))
    assert abs(len(trimmed) - RATE) <= RATE // 100


@pytest.mark.slow
def test_bench_voice_times_each_utterance_on_both_paths(omoide_cli: Any) -> None:
    result = omoide_cli("bench", "voice", "--utterances", "2", "--voices", "openjtalk",
                        "--json", timeout=900)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [r["path"] for r in report["results"]] == ["streaming", "today"]
    for run in report["results"]:
        assert len(run["rows"]) == 2 and run["summary"]["lost"] == 0
        assert all(r["heard"] and r["first_audio_ms"] is not None for r in run["rows"])
        assert set(run["summary"]["first_audio_ms"]) == {"p50", "p95", "max"}
    assert report["comparison"]["first_audio_p50_ratio_2_4s"] > 0
