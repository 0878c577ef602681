"""Enrolment at other speeds (``speaker.enrol_speeds``): each enrolment utterance is also
embedded played a little slower and faster, clean and in each noise condition, and its
vectors are the mean of its own and those copies'; what else it keeps (frame statistics,
pitch, quality) stays its own, a copy that is not usable adds nothing, and without speeds
an enrolment is what it was.

The encoder here is a small one of this file's own: its vector is the clip's mean log
spectrum in 16 bands, so playing a clip faster moves it, as it moves a real voiceprint.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from pydantic import ValidationError

from omoide.audio import resample
from omoide.components import speaker
from omoide.components.speaker import (
    EnrolmentEmbedding,
    SpeakerConfig,
    SpeakerEncoder,
    SpeakerReason,
    mean_direction,
    noise_condition,
    unit,
    with_noise,
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


async def enrolment_with_every_view(encoder: SpeakerEncoder,
                                    audio: AudioClip) -> EnrolmentEmbedding:
    """The enrolment as it was computed when every copy, at each speed and in each
    condition, was embedded whole (:meth:`SpeakerEncoder.embed`: frames view and pitch
    too) and what an enrolment does not keep was thrown away afterwards."""
    async def in_noise(samples: FloatArray, level: float
                       ) -> tuple[dict[str, FloatArray], dict[str, FloatArray]]:
        vectors, spectra = {}, {}
        for number, colour in enumerate(encoder.config.enrol_noise_colours):
            for snr in encoder.config.enrol_noise_snr_db:
                noisy = with_noise(samples, snr, level,
                                   (number * 1_000_003 + round(snr * 1000)) % 2 ** 32, colour)
                embedding = await encoder.embed(AudioClip(noisy, audio.sample_rate))
                if embedding.vector is not None:
                    vectors[noise_condition(snr, colour)] = embedding.vector
                if embedding.spectrum is not None:
                    spectra[noise_condition(snr, colour)] = embedding.spectrum
        return vectors, spectra

    clean = await encoder.embed(audio)
    assert clean.vector is not None and clean.spectrum is not None
    conditions, spectra = await in_noise(audio.samples, clean.quality.level_dbfs)
    vectors, groups = [clean.vector], {name: [v] for name, v in conditions.items()}
    for speed in encoder.config.enrol_speeds:
        copy = await encoder.embed(played(audio, speed))
        if copy.usable and copy.vector is not None:
            vectors.append(copy.vector)
            for name, vector in (await in_noise(played(audio, speed).samples,
                                                copy.quality.level_dbfs))[0].items():
                groups[name].append(vector)
    return EnrolmentEmbedding(replace(clean, vector=mean_direction(vectors)),
                              {name: mean_direction(group) for name, group in groups.items()},
                              {"clean": clean.spectrum, **spectra})


async def test_what_an_enrolment_keeps_is_as_when_every_copy_was_embedded_whole() -> None:
    encoder = SpectrumEncoder(SpeakerConfig(enrol_speeds=[0.95, 1.05], enrol_noise_snr_db=[20.0],
                                            enrol_noise_colours=["white", "pink"]))
    clip = AudioClip(voice(2.0), RATE)
    enrolled = await encoder.embed_enrolment(clip)
    before = await enrolment_with_every_view(encoder, clip)
    assert enrolled.clean.vector is not None and before.clean.vector is not None
    assert np.array_equal(enrolled.clean.vector, before.clean.vector)
    assert enrolled.clean.pitch_hz is not None
    assert (enrolled.clean.pitch_hz, enrolled.clean.quality, enrolled.clean.reason) == (
        before.clean.pitch_hz, before.clean.quality, before.clean.reason)
    assert list(enrolled.conditions) == list(before.conditions) == [
        "white noise 20 dB", "pink noise 20 dB"]
    for name, vector in before.conditions.items():
        assert np.array_equal(enrolled.conditions[name], vector)
    assert list(enrolled.spectra) == list(before.spectra)
    for name, stats in before.spectra.items():
        assert np.array_equal(enrolled.spectra[name], stats)


async def test_the_frames_view_is_computed_for_the_utterance_alone_and_the_pitch_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the copies' frame statistics, and every pitch but the clean utterance's, are not
    # kept, so they are not computed: 3 of the 9 embeddings get a frames view, 1 a pitch
    encoder = SpectrumEncoder(SpeakerConfig(enrol_speeds=[0.95, 1.05], enrol_noise_snr_db=[20.0],
                                            enrol_noise_colours=["white", "pink"]))
    embedded: list[FloatArray] = []
    framed: list[FloatArray] = []
    pitched: list[FloatArray] = []
    embed_partials, frame_features = encoder._embed_partials, encoder._frame_features
    median_pitch = speaker.median_pitch

    def spy_partials(audio: FloatArray) -> FloatArray:
        embedded.append(audio)
        return embed_partials(audio)

    def spy_frames(audio: FloatArray) -> FloatArray | None:
        framed.append(audio)
        return frame_features(audio)

    def spy_pitch(samples: FloatArray, rate: int) -> float | None:
        pitched.append(samples)
        return median_pitch(samples, rate)

    monkeypatch.setattr(encoder, "_embed_partials", spy_partials)
    monkeypatch.setattr(encoder, "_frame_features", spy_frames)
    monkeypatch.setattr(speaker, "median_pitch", spy_pitch)
    await encoder.embed_enrolment(AudioClip(voice(2.0), RATE))
    assert len(embedded) == 3 * 3   # the utterance and 2 copies, clean and in 2 noises
    # the utterance's own embeddings come first: clean, then its 2 conditions
    assert len(framed) == 3
    assert all(f is e for f, e in zip(framed, embedded[:3], strict=True))
    assert len(pitched) == 1 and pitched[0] is embedded[0]


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
