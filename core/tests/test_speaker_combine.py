"""One voiceprint from the parts of an utterance embedded while it was spoken
(:func:`omoide.voices.early.combine`), without a model: the parts weigh by the voice
they add, and the checks of a whole utterance still hold."""

from __future__ import annotations

import numpy as np
import pytest

from omoide.components.speaker import (
    SpeakerConfig,
    SpeakerEmbedding,
    SpeakerReason,
    VoiceQuality,
)
from omoide.voices.early import combine

CONFIG = SpeakerConfig(min_consistency=0.5, min_voiced_s=1.0, max_clipped_fraction=0.01)


def part(*values: float, voiced_s: float = 2.0, duration_s: float = 2.0,
         clipped: float = 0.0, consistency: float | None = 0.9) -> SpeakerEmbedding:
    vector = np.asarray(values, dtype=np.float32)
    quality = VoiceQuality(duration_s, voiced_s, clipped, -25.0, consistency)
    return SpeakerEmbedding(vector / np.linalg.norm(vector), quality, "test")


def test_parts_are_averaged_by_the_voice_each_adds() -> None:
    # the first part adds 2 s of voice, the second 1 s (of its 2-s span, all voiced)
    got = combine([(part(1, 0.2, 0), 2.0), (part(1, -0.2, 0), 1.0)], CONFIG)
    assert got.usable and got.vector is not None
    assert float(np.linalg.norm(got.vector)) == pytest.approx(1.0, abs=1e-6)
    assert got.vector[1] > 0   # leans to the part that adds more voice
    assert got.quality.voiced_s == pytest.approx(3.0)
    assert got.quality.duration_s == pytest.approx(3.0)


def test_a_part_that_is_mostly_silence_weighs_little() -> None:
    quiet = part(0, 1, 0, voiced_s=0.2, duration_s=2.0)
    got = combine([(part(1, 0, 0), 2.0), (quiet, 2.0)], SpeakerConfig(min_consistency=-1))
    assert got.vector is not None and got.vector[0] > 0.99


def test_parts_that_sound_like_two_voices_are_mixed_voices() -> None:
    got = combine([(part(1, 0, 0), 2.0), (part(0, 1, 0), 2.0)], CONFIG)
    assert got.reason is SpeakerReason.MIXED_VOICES and not got.usable
    assert got.quality.consistency == pytest.approx(0.0, abs=1e-6)


def test_clipping_over_the_voice_is_clipped() -> None:
    got = combine([(part(1, 0, 0), 2.0), (part(1, 0.01, 0, clipped=0.2), 2.0)], CONFIG)
    assert got.reason is SpeakerReason.CLIPPED


def test_too_little_voice_in_all_is_too_short() -> None:
    thin = part(1, 0, 0, voiced_s=0.3, duration_s=2.0)
    got = combine([(thin, 2.0), (thin, 1.0)], CONFIG)
    assert got.reason is SpeakerReason.TOO_SHORT
