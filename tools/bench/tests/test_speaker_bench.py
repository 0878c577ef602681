"""``omoide bench speaker``: its voice set, its variants, its arithmetic (EER, the sweep),
its cache, and a real run (OpenJTalk voices, the Resemblyzer encoder) reporting every
figure and saying unknown for bad input."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from omoide.api import SpeakerEmbedding, SpeakerReason, VoiceQuality
from omoide.cli import main
from omoide.components.speaker import SpeakerConfig
from omoide.pipeline.voice_enrolment import SENTENCES
from omoide.testing.doubles import SpectrumSpeakerEncoder
from omoide_bench.benches._speech import load_phrases
from omoide_bench.benches.speaker import (
    DEV_SENTENCES_PER_VOICE,
    ClipCache,
    Embedded,
    Sweep,
    Trial,
    Voice,
    best_setting,
    decide,
    dev_texts,
    embed_voice_set,
    enrolled_again,
    equal_error_rate,
    load_dev_sentences,
    tally,
    variants,
    voice_rms,
    voice_texts,
    with_babble,
    with_noise,
)

RATE = 16000


def _tone(seconds: float = 3.0, amplitude: float = 0.25) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    return (amplitude * np.sin(2 * np.pi * 220 * t)).astype(np.float32)


def test_each_voice_speaks_its_own_sentences_two_phrases_to_a_test_sentence() -> None:
    phrases = [p.text for p in load_phrases()]
    enrol_a, tests_a = voice_texts(0, 3, 4, phrases)
    enrol_b, tests_b = voice_texts(1, 3, 4, phrases)
    assert len(enrol_a) == 3 and len(tests_a) == 4
    assert not set(enrol_a + tests_a) & set(enrol_b + tests_b)
    assert tests_a[0].startswith(phrases[3]) and tests_a[0].endswith(phrases[4])


def test_more_enrolment_phrases_keep_the_test_sentences() -> None:
    phrases = [p.text for p in load_phrases()]
    enrol3, tests3 = voice_texts(2, 3, 4, phrases)
    enrol6, tests6 = voice_texts(2, 6, 4, phrases)
    assert tests6 == tests3 and enrol6[:3] == enrol3 and len(enrol6) == 6


def test_the_dev_split_is_ten_sentences_a_voice_none_enrolled_or_tested() -> None:
    """Its own file: no dev sentence is a phrase of the phrase set (enrolment and test
    sentences are made of those) or a sentence the robot has a person read to enrol."""
    sentences = load_dev_sentences()
    blocks = [dev_texts(index, DEV_SENTENCES_PER_VOICE, sentences) for index in range(6)]
    assert all(len(block) == DEV_SENTENCES_PER_VOICE for block in blocks)
    assert len({s for block in blocks for s in block}) == 6 * DEV_SENTENCES_PER_VOICE
    phrases = [p.text for p in load_phrases()]
    assert not any(p in s or s in p for s in sentences for p in [*phrases, *SENTENCES])
    assert dev_texts(1, 3, sentences) == blocks[1][:3]
    with pytest.raises(SystemExit, match="0 to 10"):
        dev_texts(0, DEV_SENTENCES_PER_VOICE + 1, sentences)


def test_noise_is_added_at_the_stated_signal_to_noise_ratio() -> None:
    clean = _tone()
    noisy = with_noise(clean, 10, np.random.default_rng(0))
    snr = 20 * np.log10(voice_rms(clean) / np.sqrt(np.mean((noisy - clean) ** 2)))
    assert snr == pytest.approx(10, abs=0.2)


def test_twelve_db_quieter_is_a_quarter_and_six_louder_clips_at_full_scale() -> None:
    clean = _tone(amplitude=0.7)
    heard = variants(clean, np.random.default_rng(0))
    assert list(heard) == ["clean", "noise 20 dB", "noise 10 dB", "-12 dB", "+6 dB clipped"]
    assert np.max(np.abs(heard["-12 dB"])) == pytest.approx(0.7 / 3.98, rel=0.01)
    assert np.max(np.abs(heard["+6 dB clipped"])) == 1.0
    assert np.mean(np.abs(heard["+6 dB clipped"]) >= 1.0) > 0.2


def test_a_clip_is_synthesised_once_then_read_from_the_cache(tmp_path: Path) -> None:
    from omoide_bench.benches.speaker import spoken

    voice, cache = Voice("fake", {"use": "fake"}), ClipCache(tmp_path)
    (first,) = asyncio.run(spoken(voice, ["こんにちは"], cache))
    assert len(first) == int(RATE * 0.06 * 5)
    cache.save(voice, "こんにちは", np.full(7, 0.5, np.float32))  # what is cached is used
    (again,) = asyncio.run(spoken(voice, ["こんにちは"], cache))
    assert again.tolist() == [0.5] * 7


def test_the_equal_error_rate_is_where_false_rejects_meet_false_accepts() -> None:
    result = equal_error_rate([0.9, 0.85, 0.8, 0.6], [0.3, 0.5, 0.7, 0.4])
    assert result["eer"] == 0.25 and result["threshold"] == 0.7


def _embedding(vector: np.ndarray, usable: bool = True) -> SpeakerEmbedding:
    quality = VoiceQuality(3.0, 2.5, 0.0, -24.0, 0.9)
    return SpeakerEmbedding((vector / np.linalg.norm(vector)).astype(np.float32), quality,
                            "m", None if usable else SpeakerReason.CLIPPED)


def _trials_and_enrolment() -> tuple[list[Trial], dict[str, list[np.ndarray]]]:
    rng = np.random.default_rng(1)
    centres = {name: rng.standard_normal(16) for name in "abcd"}
    enrolment = {name: [(c + 0.3 * rng.standard_normal(16)).astype(np.float32)
                        for _ in range(3)] for name, c in centres.items()}
    trials = [Trial(name, "clean", _embedding(c + spread * rng.standard_normal(16)))
              for name, c in centres.items() for spread in (0.2, 0.5, 0.8, 1.2)]
    trials.append(Trial("a", "clean", _embedding(centres["a"], usable=False)))
    return trials, enrolment


def test_the_sweep_decides_as_identify_does() -> None:
    trials, enrolment = _trials_and_enrolment()
    for threshold, margin in ((0.5, 0.0), (0.8, 0.03), (0.9, 0.1)):
        decisions = decide(trials, enrolment, ["a", "b", "c"], threshold, margin)
        said = tally(decisions)
        swept = Sweep.of(decisions).rates(threshold, margin)
        assert (swept["identified"], swept["false_accepts"]) == (said["identified"],
                                                                said["false_accepts"])


def test_the_sweep_with_per_person_thresholds_decides_as_identify_does() -> None:
    trials, enrolment = _trials_and_enrolment()
    for threshold, margin, spread in ((0.3, 0.0, 0.0), (0.5, 0.02, 1.0), (0.2, 0.0, 3.0)):
        decisions = decide(trials, enrolment, ["a", "b", "c"], threshold, margin, spread)
        said = tally(decisions)
        swept = Sweep.of(decisions).rates(threshold, margin, spread)
        assert (swept["identified"], swept["false_accepts"]) == (said["identified"],
                                                                said["false_accepts"])


def test_the_sweep_with_household_thresholds_and_projection_decides_as_identify_does(
        ) -> None:
    from omoide.components.speaker import HouseholdRules

    trials, enrolment = _trials_and_enrolment()
    for threshold, margin, gap, lowest, projection in ((0.9, 0.0, 0.1, 0.3, 0),
                                                       (0.6, 0.02, 0.05, 0.5, 1),
                                                       (0.8, 0.0, 0.2, 0.1, 2)):
        rules = HouseholdRules(projection, gap, lowest)
        decisions = decide(trials, enrolment, ["a", "b", "c"], threshold, margin,
                           rules=rules)
        said = tally(decisions)
        swept = Sweep.of(decisions).rates(threshold, margin, None, gap, lowest)
        assert (swept["identified"], swept["false_accepts"]) == (said["identified"],
                                                                said["false_accepts"])


def test_babble_is_another_voice_under_the_speaker_at_the_asked_level() -> None:
    speaker, other = _tone(3.0, 0.25), _tone(1.0, 0.5)[::-1].copy()
    mixed = with_babble(speaker, other, 10.0)
    under = mixed - speaker
    assert len(mixed) == len(speaker)                    # the other voice repeated to fit
    assert 20 * np.log10(voice_rms(speaker) / voice_rms(under)) == pytest.approx(10, abs=0.1)
    assert "babble 10 dB" in variants(speaker, np.random.default_rng(0), babble=other)


def test_the_best_setting_keeps_false_accepts_within_the_target() -> None:
    trials, enrolment = _trials_and_enrolment()
    sweep = Sweep.of(decide(trials, enrolment, ["a", "b", "c"], 0.8, 0.03))
    best = best_setting(sweep)
    assert best["false_accepts"] <= 0.02
    assert all(sweep.rates(t, m)["identified"] <= best["identified"]
               for t in (0.5, 0.7, 0.9) for m in (0.0, 0.05)
               if sweep.rates(t, m)["false_accepts"] <= 0.02)


def _voice(hz: float, seconds: float = 3.0) -> np.ndarray:
    """A voiced sound: harmonics of ``hz`` that come and go, after a quiet half second."""
    t = np.arange(int(seconds * RATE)) / RATE
    wave = sum(np.sin(2 * np.pi * hz * k * t) / k for k in range(1, 8))
    sound = 0.1 * wave * (0.55 + 0.45 * np.sin(2 * np.pi * 2 * t))
    return np.concatenate([np.zeros(RATE // 2), sound]).astype(np.float32)


def test_a_voice_set_enrolled_again_is_heard_on_the_same_trials() -> None:
    """Another way of enrolling the same voices changes their voiceprints, never what is
    heard: the trials (and their timings) are the same objects."""
    encoder = SpectrumSpeakerEncoder(SpeakerConfig(enrol_noise_snr_db=[]))
    clips = {"low": ([_voice(150)], [_voice(150, 4.0)]),
             "high": ([_voice(300)], [_voice(300, 4.0)])}

    async def both() -> tuple[Embedded, Embedded]:
        first = await embed_voice_set(encoder, clips, np.random.default_rng(0))
        again = await enrolled_again(encoder, first, {"low": [_voice(170), _voice(180)],
                                                      "high": [_voice(320)]},
                                     np.random.default_rng(0))
        return first, again

    first, again = asyncio.run(both())
    assert again.trials is first.trials and again.wall_ms is first.wall_ms
    assert [len(again.enrolment[v]) for v in ("low", "high")] == [2, 1]
    assert not np.allclose(again.enrolment["low"][0], first.enrolment["low"][0])
    assert len(first.enrolment["low"]) == 1      # the first way's enrolment is its own


def _weights_ready() -> bool:
    if importlib.util.find_spec("omoide_speaker_resemblyzer") is None \
            or importlib.util.find_spec("omoide_tts_openjtalk") is None:
        return False
    from omoide_speaker_resemblyzer import bundled

    return (bundled.cached_weights() or bundled.installed_weights()) is not None


@pytest.mark.skipif(not _weights_ready(),
                    reason="the Resemblyzer weights or OpenJTalk are not installed")
def test_bench_speaker_reports_every_figure_and_says_unknown_for_bad_input(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Three OpenJTalk voices (mei at three pitches), two enrolled in each of three sets,
    each set enrolled from the voices' own phrases and from the robot's sentences."""
    assert main(["bench", "speaker", "--voice", "openjtalk", "--voice",
                 "openjtalk,half_tone=-7", "--voice", "openjtalk,half_tone=5",
                 "--enrolled", "2", "--sentences", "1", "--dev-sentences", "1",
                 "--cache", str(tmp_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    from omoide_speaker_resemblyzer.encoder import ResemblyzerConfig

    configured = ResemblyzerConfig()   # the report carries the encoder's own settings
    assert report["enrolment_sets"] == 3
    assert report["speaker"]["threshold"] == configured.threshold
    assert report["speaker"]["pitch_weight"] == configured.pitch_weight
    assert report["enrolled_from"] == ["phrases", "sentences"]
    assert report["configured"]["utterances"] == 2 * 3 * 2 * 5     # ways x sets x voices x variants
    assert report["configured"]["unenrolled_utterances"] == 2 * 3 * 1 * 5
    ways = report["per_enrolment"]
    assert set(ways) == {"phrases", "sentences"}
    assert all(row["utterances"] == 3 * 2 * 5 and row["eer"] is not None
               for row in ways.values())
    assert report["worst_set"]["enrolled_from"] in ways
    assert set(report["per_variant"]) == {"clean", "noise 20 dB", "noise 10 dB", "-12 dB",
                                          "+6 dB clipped"}
    assert report["eer"]["genuine"] > 0 and report["best"]["threshold"] >= 0.5
    assert report["embed_ms"]["utterances"] == 15 and report["embed_ms"]["wall"]["p50"] > 0
    assert report["embed_ms"]["cpu"]["p95"] > 0 and "load_average" in report
    bad = {row["case"]: row for row in report["bad_input"]}
    assert bad["silence"]["reason"] == "silence"
    assert bad["cough (0.3 s burst)"]["reason"] == "too_short"
    assert bad["clipped (+24 dB)"]["reason"] == "clipped"
    assert all(bad[case]["unknown"] for case in ("silence", "cough (0.3 s burst)",
                                                 "clipped (+24 dB)"))
    # the clips were cached: phrases, test and dev sentences, the robot's sentences
    assert len(list(tmp_path.glob("*.npy"))) == 3 * (3 + 1 + 1 + len(SENTENCES))
    chosen = report["chosen_on_dev"]
    assert chosen["dev_utterances"] == 2 * 3 * 3 * 5     # 2 ways x 3 sets x 3 voices x 5
    assert chosen["all"]["dev"]["spread"] in (None, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0)
    assert chosen["all"]["test"]["identified"] is not None
