"""``omoide bench turn``: its sentences cut mid-way, its pauses, its arithmetic, and a real
run (OpenJTalk, Silero, Smart Turn) that reports every figure."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from omoide.cli import main
from omoide_bench.benches.turn import (
    Judgements,
    Stop,
    ceiling_row,
    detector_wait,
    find_gap,
    split_sentence,
    summary,
    threshold_wait,
)


def test_a_sentence_with_a_comma_is_cut_at_its_comma() -> None:
    assert split_sentence("最近、仕事終わりにギターの練習をしてるんだ") == \
        ("最近", "仕事終わりにギターの練習をしてるんだ")


def test_a_sentence_is_cut_after_the_particle_nearest_its_middle() -> None:
    assert split_sentence("来週の土曜日に友達と箱根に行くんだ") == ("来週の土曜日に",
                                                                 "友達と箱根に行くんだ")


def test_a_sentence_without_a_phrase_boundary_is_not_cut() -> None:
    assert split_sentence("今何時") is None


def test_the_gap_found_is_the_quiet_stretch_nearest_the_cut() -> None:
    tone = (0.3 * np.sin(np.arange(16000) / 5)).astype(np.float32)
    quiet = np.zeros(1600, np.float32)
    samples = np.concatenate([tone, quiet, tone, quiet, tone])
    assert find_gap(samples, 0.33) == (16000, 17600)
    assert find_gap(samples, 0.66) == (33600, 35200)


INF = float("inf")


def _run() -> Judgements:
    run = Judgements("v", "(config)")
    run.probabilities = {"complete": [0.9, 0.2, 0.8], "cut": [0.7, 0.1]}
    run.latencies_ms = [100.0, 100.0, 100.0, 100.0, 100.0]
    run.pauses_s = [0.7, 0.9, 0.8]
    run.stops = [[Stop(0.7, 700.0, False), Stop(0.9, INF, True)],
                 [Stop(0.1, 900.0, False), Stop(0.2, INF, True)],
                 [Stop(0.8, INF, True)]]   # the VAD heard no end in the third one's pause
    return run


def test_a_pause_is_cut_when_judged_finished_or_longer_than_the_ceiling() -> None:
    assert ceiling_row(_run(), threshold_wait(0.5), 1000, 700.0)["pauses_cut"] == 1
    assert ceiling_row(_run(), threshold_wait(0.5), 800, 700.0)["pauses_cut"] == 2


def test_any_stop_inside_the_sentence_can_cut_it_not_only_the_stretched_pause() -> None:
    run = Judgements("v", "(config)")
    run.pauses_s = [0.8]
    run.stops = [[Stop(0.9, 300.0, False), Stop(0.1, 800.0, False), Stop(0.9, INF, True)]]
    assert ceiling_row(run, threshold_wait(0.5), 1200, 400.0)["pauses_cut"] == 1
    assert ceiling_row(run, threshold_wait(0.95), 1200, 400.0)["pauses_cut"] == 0


def test_a_wait_between_at_once_and_the_ceiling_bridges_the_shorter_pauses() -> None:
    def graded(p: float, ceiling: int, _text: str | None = None) -> float:
        return 0.0 if p >= 0.95 else 750.0 if p >= 0.5 else float(ceiling)

    assert ceiling_row(_run(), graded, 1000, 700.0)["pauses_cut"] == 0
    ends = ceiling_row(_run(), graded, 1000, 700.0)["end_of_turn_ms"]
    assert ends["p50"] == 750 and ends["max"] == 1000


def test_the_text_heard_at_each_stop_reaches_the_detectors_wait() -> None:
    from omoide.components.turn import TurnConfig, TurnDetector

    class Fixed(TurnDetector):
        name = "fixed"

        def _finished_probability(self, audio: object) -> float:
            return 0.5

    detector = Fixed(TurnConfig(max_silence_ms=1200, text_complete_silence_ms=400,
                                text_open_silence_ms=1200))
    run = Judgements("v", "(config)")
    run.pauses_s = [0.8, 0.8]
    run.stops = [[Stop(0.95, 800.0, False, "来週の土曜日に"), Stop(0.2, INF, True, "行くんだ")],
                 [Stop(0.95, 800.0, False, "そうだね"), Stop(0.9, INF, True, "行くんだ")]]
    row = ceiling_row(run, detector_wait(detector), 1200, 300.0)
    assert row["pauses_cut"] == 1          # only the pause after a complete 「そうだね」
    assert row["end_of_turn_ms"]["max"] == 400   # not the ceiling the audio alone gives
    ends = summary(run, detector_wait(detector), 0.5, 300)["text_ends"]
    assert ends == {"complete": {"complete": 2, "request": 0, "open": 0, "None": 0},
                    "cut": {"complete": 1, "request": 0, "open": 1, "None": 0}}


def test_a_failed_judgement_at_a_pause_falls_back_to_silence_alone() -> None:
    run = _run()
    run.stops[0][0] = Stop(float("nan"), 700.0, False)
    run.stops[1][0] = Stop(float("nan"), 900.0, False)
    run.failed["cut"] = 2
    assert ceiling_row(run, threshold_wait(0.5), 2000, 700.0,
                       fallback_ms=750)["pauses_cut"] == 1


def test_a_complete_sentence_judged_unfinished_ends_at_the_ceiling() -> None:
    ends = ceiling_row(_run(), threshold_wait(0.5), 1500, 700.0)["end_of_turn_ms"]
    assert ends["p50"] == 700 and ends["max"] == 1500


def test_the_summary_counts_each_class_and_silence_alone() -> None:
    row = summary(_run(), threshold_wait(0.5), 0.5, 600)
    assert row["classes"]["complete"]["judged_finished"] == 2
    assert row["classes"]["cut"]["judged_finished"] == 1
    assert row["silence_only"]["pauses_cut"] == 2   # the VAD ended speech in two pauses


needs_parts = pytest.mark.skipif(
    importlib.util.find_spec("omoide_turn_smart") is None
    or importlib.util.find_spec("omoide_tts_openjtalk") is None,
    reason="the offline turn detector and voice are not installed")


@needs_parts
def test_bench_turn_reports_both_classes_latency_and_the_ceilings(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from omoide_turn_smart import bundled

    if bundled.cached_model() is None:
        pytest.skip(f"model not prepared: {bundled.INSTALL_HINT}")
    config = tmp_path / "turn.yaml"
    config.write_text("vad: {use: silero}\nturn: {use: smart_turn, timeout_s: 30}\n"
                      "tts: {use: openjtalk}\n", encoding="utf-8")
    assert main(["bench", "turn", "--config", str(config), "--voice", "openjtalk",
                 "--limit", "3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (run,) = report["runs"]
    assert run["voice"] == "openjtalk" and run["sentences"] == 3
    assert run["classes"]["complete"]["judged"] == 3
    assert run["latency_ms"]["p50"] > 0
    assert [c["max_silence_ms"] for c in run["ceilings"]][:2] == [600, 800]
    assert report["vad_min_silence_ms"] == [600] and "load_average" in report
    assert run["vad_min_silence_ms"] == 600
