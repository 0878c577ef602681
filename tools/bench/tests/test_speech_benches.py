"""``omoide bench asr`` and ``omoide bench tts``: their metrics, and that they run and
report every figure (on test doubles here; the figures themselves come from real runs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from omoide.cli import main
from omoide_bench.benches._speech import load_phrases, parse_overrides
from omoide_bench.benches.asr import Utterance, character_error_rate, entity_hits, with_contexts
from omoide_bench.benches.tts import replies


def test_identical_text_has_no_character_errors_whatever_the_punctuation() -> None:
    assert character_error_rate(["週末の予定覚えてる?"], ["週末の予定、覚えてる？"]) == 0.0


def test_one_wrong_character_in_ten_is_a_cer_of_a_tenth() -> None:
    assert character_error_rate(["来週箱根に行くんだよ"], ["来週箱寝に行くんだよ"]) == \
        pytest.approx(0.1)


def test_an_entity_counts_only_when_spelled_as_given() -> None:
    assert entity_hits(["箱根", "ゆき"], "妹の雪と箱根に行く") == 1


def test_the_phrase_set_is_varied_and_its_entities_are_in_their_sentences() -> None:
    phrases = load_phrases()
    assert len(phrases) >= 100
    assert {p.kind for p in phrases} >= {"statement", "question", "name", "date", "number"}
    assert all(e in p.text for p in phrases for e in p.entities)


def test_each_context_holds_the_sentences_entities_among_others() -> None:
    phrases = load_phrases()
    utterances = with_contexts([Utterance(p, None) for p in phrases], 12)
    for u in utterances:
        assert set(u.phrase.entities) <= set(u.context) and len(u.context) == 12
        assert all(w in u.phrase.entities or w not in u.phrase.text for w in u.context)


def test_settings_are_parsed_as_yaml_values() -> None:
    assert parse_overrides("beam_size=5, context_as=prompt") == {"beam_size": 5,
                                                                  "context_as": "prompt"}


def test_every_reply_is_cut_into_sentences() -> None:
    cut = replies()
    assert len(cut) == 40 and all(cut)
    assert any(len(sentences) > 1 for sentences in cut)


def _doubles(tmp_path: Path, heard: str) -> Path:
    config = tmp_path / "doubles.yaml"
    config.write_text(f"asr: {{use: fake, text: {heard}}}\ntts: {{use: fake}}\n",
                      encoding="utf-8")
    return config


def test_bench_asr_reports_speed_accuracy_and_the_memory_context(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = load_phrases(1)[0]
    config = _doubles(tmp_path, first.text)
    assert main(["bench", "asr", "--config", str(config), "--limit", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (row,) = report["settings"]
    assert row["cer"] == 0.0 and row["entity_hit_rate"] == 1.0
    assert {"latency_ms", "rtf", "latency_ms_p50_2.5-3.5s", "transcripts"} <= set(row)
    assert [r["context"] for r in report["memory_context"]] == ["none", "(config)"]


def test_bench_asr_stream_compares_recognition_while_speaking_with_todays_path(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = load_phrases(1)[0]
    config = _doubles(tmp_path, first.text)
    assert main(["bench", "asr", "--config", str(config), "--limit", "2", "--no-context",
                 "--stream", "--stream-speed", "50", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (row,) = report["streaming"]
    assert row["speed"] == 50 and row["utterances"] == 2
    assert row["cer_stream"] == row["cer_today"]  # the fake hears the same either way
    assert row["cer_delta"] == 0.0
    assert {"p50", "p95"} <= set(row["ms_stream"]) and {"p50", "p95"} <= set(row["ms_today"])
    assert row["decoded_at_finish"] == 2  # the default stream decodes at finish


def test_bench_asr_prints_the_streaming_table(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _doubles(tmp_path, load_phrases(1)[0].text)
    assert main(["bench", "asr", "--config", str(config), "--limit", "1", "--no-context",
                 "--stream", "--stream-speed", "50"]) == 0
    out = capsys.readouterr().out
    assert "recognition while speaking (60 ms frames, 50x faster than real time)" in out


def test_bench_tts_reports_first_audio_and_real_time_factor(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "tts", "--voice", "fake", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["voices"]
    assert row["first_audio_ms"]["p50"] >= 0 and row["rtf"]["overall"] >= 0
    assert row["sentences"] > 40 and row["speech_s"] > 0
    assert row["within_first_audio_budget"]
