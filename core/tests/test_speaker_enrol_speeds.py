"""Enrolment at other speeds (``speaker.enrol_speeds``): each enrolment utterance is also
embedded played a little slower and faster, clean and in each noise condition, and its
vectors are the mean of its own and those copies'; what else it keeps (frame statistics,
pitch, quality) stays its own, a copy that is not usable adds nothing, and without speeds
an enrolment is what it was.

The encoder here is a small one of this file's own: its vector is the clip's mean log
spectrum in 16 bands, so playing a clip faster moves it, as it moves a real voiceprint.
"""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from omoide.audio import resample
from omoide.components.speaker import (
    SpeakerConfig,
    SpeakerReason,
    mean_direction,
    unit,
)
from omoide.testing.doubles import SpectrumSpeakerEncoder as SpectrumEncoder
from omoide.types import AudioClip, FloatArray

RATE = 16000


def voice(seconds: float, pitch: float = 180.0, seed: int = 0) -> FloatArray:
    """``seconds`` of a voiced sound (a few harmonics of ``pitch``) between two 0.5-s
    rests, over a quiet room."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * RATE)) / RATE
    wave = sum(np.sin(2 * np.pi * pitch * k * t + rng.uniform(0, 6)) / k for k in range(1, 6))
    rest = np.zeros(RATE // 2)
    samples = np.concatenate([rest, 0.1 * wave, rest])
    out: FloatArray = (samples + 3e-4 * rng.standard_normal(len(samples))).astype(np.float32)
    return out


def played(clip: AudioClip, speed: float) -> AudioClip:
    return resample(AudioClip(clip.samples, round(clip.sample_rate * speed)), clip.sample_rate)


def config(**options: object) -> SpeakerConfig:
    return SpeakerConfig(enrol_noise_snr_db=[20.0], enrol_noise_colours=["white"],
                         **options)


async def test_without_speeds_an_enrolment_is_the_utterance_s_own() -> None:
    encoder = SpectrumEncoder(config())
    clip = AudioClip(voice(2.0), RATE)
    enrolled = await encoder.embed_enrolment(clip)
    own = await encoder.embed(clip)
    assert enrolled.clean.vector is not None and own.vector is not None
    assert np.allclose(enrolled.clean.vector, own.vector)


async def test_each_vector_is_the_mean_of_the_utterance_and_its_copies_at_each_speed() -> None:
    speeds = [0.95, 1.05]
    encoder = SpectrumEncoder(config(enrol_speeds=speeds))
    alone = SpectrumEncoder(config())
    clip = AudioClip(voice(2.0), RATE)
    enrolled = await encoder.embed_enrolment(clip)
    copies = [await alone.embed_enrolment(c) for c in [clip, *(played(clip, s) for s in speeds)]]
    assert enrolled.clean.vector is not None
    assert np.allclose(enrolled.clean.vector,
                       mean_direction([c.clean.vector for c in copies
                                       if c.clean.vector is not None]), atol=1e-6)
    assert list(enrolled.conditions) == ["white noise 20 dB"]
    assert np.allclose(enrolled.conditions["white noise 20 dB"],
                       mean_direction([c.conditions["white noise 20 dB"] for c in copies]),
                       atol=1e-6)
    # the copies moved it: the mean is not the utterance's own vector
    assert copies[0].clean.vector is not None
    assert float(enrolled.clean.vector @ unit(copies[0].clean.vector)) < 1 - 1e-6


async def test_statistics_pitch_and_quality_stay_the_utterance_s_own() -> None:
    encoder = SpectrumEncoder(config(enrol_speeds=[0.9, 1.1]))
    clip = AudioClip(voice(2.0), RATE)
    enrolled = await encoder.embed_enrolment(clip)
    own = await SpectrumEncoder(config()).embed_enrolment(clip)
    assert enrolled.clean.pitch_hz == own.clean.pitch_hz
    assert enrolled.clean.quality == own.clean.quality
    assert enrolled.clean.reason is None
    assert sorted(enrolled.spectra) == sorted(own.spectra) == ["clean", "white noise 20 dB"]
    for name, stats in own.spectra.items():
        assert np.allclose(enrolled.spectra[name], stats)


async def test_a_copy_too_short_to_identify_adds_nothing() -> None:
    # 1.1 s of voice played 1.25 times as fast is 0.88 s, under min_voiced_s
    encoder = SpectrumEncoder(config(enrol_speeds=[1.25], min_voiced_s=1.0))
    clip = AudioClip(voice(1.1), RATE)
    assert (await encoder.embed(played(clip, 1.25))).reason is SpeakerReason.TOO_SHORT
    enrolled = await encoder.embed_enrolment(clip)
    own = await SpectrumEncoder(config(min_voiced_s=1.0)).embed_enrolment(clip)
    assert enrolled.clean.vector is not None and own.clean.vector is not None
    assert np.allclose(enrolled.clean.vector, own.clean.vector, atol=1e-6)
    assert np.allclose(enrolled.conditions["white noise 20 dB"],
                       own.conditions["white noise 20 dB"], atol=1e-6)


async def test_an_unusable_utterance_is_refused_as_before() -> None:
    encoder = SpectrumEncoder(config(enrol_speeds=[0.95, 1.05]))
    enrolled = await encoder.embed_enrolment(AudioClip(np.zeros(2 * RATE, np.float32), RATE))
    assert enrolled.clean.reason is SpeakerReason.SILENCE
    assert enrolled.conditions == {}


@pytest.mark.parametrize("speeds", [[0.5], [1.5], [0.9, 0.95, 1.05, 1.1, 1.2]])
def test_speeds_far_from_the_voice_or_too_many_are_refused(speeds: list[float]) -> None:
    with pytest.raises(ValidationError):
        SpeakerConfig(enrol_speeds=speeds)


def test_mean_direction_weighs_each_vector_alike() -> None:
    a, b = np.array([2.0, 0.0], np.float32), np.array([0.0, 0.5], np.float32)
    assert np.allclose(mean_direction([a, b]), [np.sqrt(0.5), np.sqrt(0.5)])
