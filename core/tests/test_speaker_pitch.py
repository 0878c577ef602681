"""The pitch check beside the voice vector (issue 28): each utterance's median pitch is
measured on its voiced frames (a numpy autocorrelation tracker); a member whose enrolment
utterances' median pitch is further from the voice's than ``pitch_tolerance_st`` loses
``pitch_weight`` per semitone beyond it. Like the spectral view it only takes a person
away."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from omoide.components.speaker import (
    SpeakerEmbedding,
    SpeakerReason,
    VoiceQuality,
    identify,
    unit,
)
from omoide.components.voice_measures import median_pitch
from omoide.types import FloatArray
from omoide.voices import VoiceprintStore

RATE = 16000


def vowel(hz: float, seconds: float = 2.0) -> FloatArray:
    """A harmonic tone at ``hz`` (five harmonics), like a held vowel."""
    t = np.arange(int(seconds * RATE)) / RATE
    out: FloatArray = (0.1 * sum(np.sin(2 * np.pi * hz * k * t) / k
                                 for k in range(1, 6))).astype(np.float32)
    return out


@pytest.mark.parametrize("hz", [95.0, 230.0, 320.0])
def test_the_median_pitch_of_a_voice_is_found_within_a_third_of_a_semitone(hz: float) -> None:
    found = median_pitch(vowel(hz), RATE)
    assert found is not None
    assert abs(12 * np.log2(found / hz)) < 1 / 3


def test_noise_and_silence_have_no_pitch() -> None:
    noise = np.random.default_rng(0).standard_normal(2 * RATE).astype(np.float32) * 0.1
    assert median_pitch(noise, RATE) is None
    assert median_pitch(np.zeros(2 * RATE, np.float32), RATE) is None


def test_a_member_whose_pitch_is_far_from_the_voices_loses_score_beyond_the_tolerance() -> None:
    enrolled = {"alice": [unit(np.array([1.0, 0.1, 0], np.float32))],
                "bob": [unit(np.array([0.1, 1.0, 0], np.float32))]}
    quality = VoiceQuality(3.0, 2.5, 0.0, -25.0)
    heard = SpeakerEmbedding(unit(np.array([1.0, 0.12, 0], np.float32)), quality, "test",
                             pitch_hz=320.0)
    pitches = {"alice": [230.0, 235.0], "bob": [318.0]}   # alice ~5.6 semitones lower
    plain = identify(heard, enrolled, 0.9, 0.05)
    checked = identify(heard, enrolled, 0.9, 0.05, pitches=pitches, pitch=(0.05, 2.0))
    assert plain.person == "alice"
    assert (checked.person, checked.reason) == (None, SpeakerReason.NO_MATCH)
    assert checked.scores["bob"] == pytest.approx(plain.scores["bob"])   # within tolerance
    near = identify(heard, enrolled, 0.9, 0.05, pitches=pitches, pitch=(0.05, 6.0))
    assert near.person == "alice"


def test_pitches_are_kept_and_read_back_with_the_voiceprint(tmp_path: Path) -> None:
    store = VoiceprintStore(tmp_path)
    store.enrol("alice", "m", [unit(np.array([1.0, 0, 0], np.float32))], source="cli",
                pitches=[231.5])
    again = store.enrol("alice", "m", [unit(np.array([0.9, 0.1, 0], np.float32))],
                        source="cli", pitches=[240.0])
    assert again.pitches == (231.5, 240.0)
    [read] = VoiceprintStore(tmp_path).voiceprints("alice")
    assert read.pitches == (231.5, 240.0)
