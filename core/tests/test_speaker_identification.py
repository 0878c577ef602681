"""Telling who spoke from a voiceprint: the voice finder and identification, without a model."""

from __future__ import annotations

import numpy as np
import pytest

from omoide.components.speaker import (
    SpeakerConfig,
    SpeakerEmbedding,
    SpeakerReason,
    VoiceQuality,
    find_voice,
    identify,
    unusable_reason,
)
from omoide.errors import InvalidInput

GOOD = VoiceQuality(duration_s=3.0, voiced_s=2.5, clipped_fraction=0.0, level_dbfs=-25.0)


def voiceprint(*values: float, reason: SpeakerReason | None = None) -> SpeakerEmbedding:
    vector = np.asarray(values, dtype=np.float32)
    return SpeakerEmbedding(vector / np.linalg.norm(vector), GOOD, "test", reason)


def test_the_closest_enrolled_person_is_named_with_score_and_margin() -> None:
    enrolled = {"alice": [np.array([1, 0, 0], np.float32), np.array([0.9, 0.1, 0], np.float32)],
                "bob": [np.array([0, 1, 0], np.float32)]}
    who = identify(voiceprint(1, 0.05, 0), enrolled, threshold=0.8, margin=0.1)
    assert (who.person, who.reason) == ("alice", SpeakerReason.MATCHED)
    assert who.score > 0.99 and who.margin > 0.5


def test_a_voice_below_the_threshold_is_nobody() -> None:
    who = identify(voiceprint(0, 0, 1), {"alice": [np.array([1, 0, 0], np.float32)]},
                   threshold=0.8, margin=0.0)
    assert who.person is None and who.reason is SpeakerReason.NO_MATCH
    assert who.score == pytest.approx(0.0, abs=1e-6)


def test_two_people_about_as_close_is_ambiguous_not_a_guess() -> None:
    enrolled = {"alice": [np.array([1, 0.02, 0], np.float32)],
                "bob": [np.array([1, -0.02, 0], np.float32)]}
    who = identify(voiceprint(1, 0, 0), enrolled, threshold=0.8, margin=0.05)
    assert who.person is None and who.reason is SpeakerReason.AMBIGUOUS
    assert who.score > 0.99 and who.margin < 0.05


def test_nobody_enrolled_is_said_so() -> None:
    who = identify(voiceprint(1, 0, 0), {"alice": []}, threshold=0.5, margin=0.0)
    assert who.person is None and who.reason is SpeakerReason.NO_ONE_ENROLLED


def test_an_unusable_voiceprint_keeps_its_own_reason() -> None:
    who = identify(voiceprint(1, 0, 0, reason=SpeakerReason.CLIPPED),
                   {"alice": [np.array([1, 0, 0], np.float32)]}, threshold=0.5, margin=0.0)
    assert who.person is None and who.reason is SpeakerReason.CLIPPED
    assert "clipped" in who.explanation


def test_enrolled_vectors_of_another_length_are_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="alice"):
        identify(voiceprint(1, 0, 0), {"alice": [np.ones(4, np.float32)]}, 0.5, 0.0)


def _tone(seconds: float, level: float = 0.3) -> np.ndarray:
    t = np.arange(int(seconds * 16000)) / 16000
    return (level * np.sin(2 * np.pi * 200 * t)).astype(np.float32)


def test_long_silences_are_dropped_and_short_pauses_kept() -> None:
    silence = lambda s: np.zeros(int(s * 16000), np.float32)  # noqa: E731
    audio = np.concatenate([silence(1.0), _tone(1.0), silence(0.15), _tone(1.0),
                            silence(2.0)])
    found = find_voice(audio, 16000, SpeakerConfig())
    assert found.quality.duration_s == pytest.approx(5.15)
    assert found.quality.voiced_s == pytest.approx(2.0, abs=0.07)
    assert 2.1 <= len(found.samples) / 16000 <= 2.5  # the voice, its short pause, a margin
    assert unusable_reason(found.quality, SpeakerConfig()) is None


def test_quality_says_silence_too_short_and_clipped() -> None:
    config = SpeakerConfig()
    silent = find_voice(np.zeros(32000, np.float32), 16000, config)
    assert unusable_reason(silent.quality, config) is SpeakerReason.SILENCE
    assert silent.quality.level_dbfs == float("-inf")
    cough = find_voice(np.concatenate([np.zeros(16000, np.float32), _tone(0.3)]), 16000, config)
    assert unusable_reason(cough.quality, config) is SpeakerReason.TOO_SHORT
    quiet = np.zeros(8000, np.float32)
    loud = np.concatenate([quiet, np.clip(_tone(2.0, level=5.0), -1, 1), quiet])
    clipped = find_voice(loud, 16000, config)
    assert clipped.quality.clipped_fraction > 0.3
    assert unusable_reason(clipped.quality, config) is SpeakerReason.CLIPPED
