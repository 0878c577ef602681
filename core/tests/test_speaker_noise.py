"""Voiceprints in noise: stationary noise suppressed before embedding, enrolment in noise
(each enrolment utterance embedded again with white noise added), a voice scored against
the person's closest condition, and clips too short to measure said to be too short.

The encoder here is a small one of this file's own: its vector is the clip's mean log
spectrum in 16 bands, so noise moves it as it moves a real voiceprint.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from omoide.components.device import Household
from omoide.components.speaker import (
    SpeakerConfig,
    SpeakerEmbedding,
    SpeakerReason,
    VoiceQuality,
    coloured_noise,
    find_voice,
    identify,
    noise_condition,
    suppress_noise,
    unusable_reason,
    with_noise,
)
from omoide.testing.doubles import SpectrumSpeakerEncoder as SpectrumEncoder
from omoide.types import AudioClip, FloatArray
from omoide.voices import SpeakerIdentifier, VoiceprintStore

RATE = 16000


def voice(seconds: float, pitch: float = 180.0, seed: int = 0) -> FloatArray:
    """A voiced sound: a few harmonics of ``pitch`` that come and go every 0.25 s."""
    t = np.arange(int(seconds * RATE)) / RATE
    rng = np.random.default_rng(seed)
    wave = sum(rng.uniform(0.3, 1.0) / k * np.sin(2 * np.pi * pitch * k * t) for k in range(1, 8))
    envelope = 0.55 + 0.45 * np.sin(2 * np.pi * 2 * t)
    out: FloatArray = (0.1 * wave * envelope).astype(np.float32)
    return out


def with_pauses(sound: FloatArray) -> FloatArray:
    quiet = np.zeros(RATE // 2, np.float32)
    return np.concatenate([quiet, sound, quiet])


def power_db(samples: FloatArray) -> float:
    return float(10 * np.log10(np.mean(np.square(samples, dtype=np.float64)) + 1e-20))


@pytest.mark.parametrize("seconds", [0.001, 0.01, 0.05, 0.15, 0.19, 0.3])
def test_a_clip_too_short_to_measure_is_too_short_not_an_error(seconds: float) -> None:
    found = find_voice(voice(seconds), RATE, SpeakerConfig())
    assert unusable_reason(found.quality, SpeakerConfig()) is SpeakerReason.TOO_SHORT
    assert found.quality.duration_s == pytest.approx(seconds)


def test_a_short_clip_of_silence_is_silence() -> None:
    found = find_voice(np.zeros(int(0.15 * RATE), np.float32), RATE, SpeakerConfig())
    assert unusable_reason(found.quality, SpeakerConfig()) is SpeakerReason.SILENCE


async def test_the_encoder_says_a_short_clip_is_too_short() -> None:
    encoder = SpectrumEncoder(SpeakerConfig())
    for seconds in (0.05, 0.15):
        embedding = await encoder.embed(AudioClip(voice(seconds), RATE))
        assert embedding.vector is None and embedding.reason is SpeakerReason.TOO_SHORT
        assert encoder.identify(embedding, {"alice": [np.ones(16, np.float32)]}).person is None


def test_suppressing_noise_leaves_clean_audio_as_it_was() -> None:
    clean = with_pauses(voice(2.0))
    out = suppress_noise(clean)
    assert out.shape == clean.shape and out.dtype == np.float32
    assert np.corrcoef(out, clean)[0, 1] > 0.999


def test_suppressing_noise_lowers_white_noise_and_keeps_the_voice() -> None:
    sound = with_pauses(voice(2.0))
    speech = slice(RATE // 2, RATE // 2 + 2 * RATE)
    noisy = with_noise(sound, 10.0, power_db(sound[speech]), seed=1)
    noise_before = power_db(noisy[:RATE // 2] - sound[:RATE // 2])
    out = suppress_noise(noisy)
    assert power_db(out[:RATE // 2]) < noise_before - 12   # the pause: mostly noise, gone
    assert abs(power_db(out[speech]) - power_db(sound[speech])) < 1.5   # the voice stays
    assert (np.corrcoef(out[speech], sound[speech])[0, 1]
            > np.corrcoef(noisy[speech], sound[speech])[0, 1])


@pytest.mark.parametrize("colour", ["white", "pink", "brown"])
def test_noise_is_added_under_the_voice_and_the_same_for_a_seed(colour: str) -> None:
    sound = voice(1.0)
    first = with_noise(sound, 20.0, power_db(sound), seed=7, colour=colour)
    assert power_db(first - sound) == pytest.approx(power_db(sound) - 20, abs=0.2)
    assert np.array_equal(first, with_noise(sound, 20.0, power_db(sound), seed=7,
                                            colour=colour))


def octave_db(noise: FloatArray, hz: float) -> float:
    """Power (dB) of ``noise`` in the octave from ``hz``."""
    power = np.abs(np.fft.rfft(noise)) ** 2
    at = int(hz * len(noise) / RATE)
    return float(10 * np.log10(power[at:2 * at].mean()))


@pytest.mark.parametrize(("colour", "slope"), [("white", 0.0), ("pink", -3.0),
                                               ("brown", -6.0)])
def test_pink_and_brown_noise_fall_by_3_and_6_db_an_octave(colour: str, slope: float) -> None:
    noise = coloured_noise(RATE * 4, colour, np.random.default_rng(0))
    assert octave_db(noise, 2000) - octave_db(noise, 1000) == pytest.approx(slope, abs=0.5)


def unit_row(*values: float) -> FloatArray:
    vector = np.asarray(values, dtype=np.float32)
    out: FloatArray = vector / np.linalg.norm(vector)
    return out


def test_a_voice_is_scored_against_the_persons_closest_condition() -> None:
    quality = VoiceQuality(3.0, 2.5, 0.0, -25.0)
    heard_in_noise = SpeakerEmbedding(unit_row(0.6, 0.1, 0.8), quality, "test")
    enrolled = {"alice": [unit_row(1, 0.1, 0)], "bob": [unit_row(0, 1, 0)]}
    clean_only = identify(heard_in_noise, enrolled, threshold=0.9, margin=0.05)
    assert clean_only.person is None and clean_only.reason is SpeakerReason.NO_MATCH
    noisy = {"alice": [[unit_row(0.6, 0.1, 0.78)]], "bob": [[unit_row(0, 0.7, 0.7)]]}
    found = identify(heard_in_noise, enrolled, 0.9, 0.05, conditions=noisy)
    assert found.person == "alice" and found.score > 0.99
    assert found.margin == pytest.approx(found.score - float(heard_in_noise.vector
                                                             @ unit_row(0, 0.7, 0.7)))


def test_conditions_are_kept_exported_and_read_back_with_the_voiceprint(tmp_path: Path) -> None:
    store = VoiceprintStore(tmp_path)
    store.enrol("alice", "m", [unit_row(1, 0, 0)], source="cli",
                conditions={"noise 20 dB": [unit_row(1, 0.2, 0)]})
    again = store.enrol("alice", "m", [unit_row(0.9, 0.1, 0)], source="cli",
                        conditions={"noise 20 dB": [unit_row(0.9, 0.3, 0)],
                                    "noise 10 dB": [unit_row(0.8, 0.5, 0)]})
    assert {k: len(v) for k, v in again.conditions.items()} == {"noise 20 dB": 2,
                                                                "noise 10 dB": 1}
    [read] = VoiceprintStore(tmp_path).voiceprints("alice")
    assert np.allclose(read.conditions["noise 10 dB"][0], unit_row(0.8, 0.5, 0), atol=1e-6)
    exported = store.export("alice")["voiceprints"][0]
    assert len(exported["condition_vectors"]["noise 20 dB"]) == 2
    assert exported["conditions"] == ["noise 10 dB", "noise 20 dB"]
    replaced = store.enrol("alice", "m", [unit_row(0, 1, 0)], source="cli", replace=True)
    assert replaced.conditions == {}


async def test_enrolment_keeps_each_usable_utterance_in_noise_too(tmp_path: Path) -> None:
    encoder = SpectrumEncoder(SpeakerConfig(enrol_noise_snr_db=[20.0, 10.0],
                                            enrol_noise_colours=["white", "pink"]))
    identifier = SpeakerIdentifier(encoder, VoiceprintStore(tmp_path))
    clips = [AudioClip(with_pauses(voice(2.0, seed=i)), RATE) for i in range(2)]
    silent = AudioClip(np.zeros(2 * RATE, np.float32), RATE)
    enrolment = await identifier.enrol("alice", [*clips, silent], source="test")
    assert enrolment.used == 2 and enrolment.refused == ((2, SpeakerReason.SILENCE),)
    assert enrolment.voiceprint is not None
    conditions = enrolment.voiceprint.conditions
    assert sorted(conditions) == sorted(noise_condition(snr, colour) for snr in (20.0, 10.0)
                                        for colour in ("white", "pink"))
    assert all(len(rows) == 2 for rows in conditions.values())
    repeat = await encoder.embed_enrolment(clips[0])
    assert np.allclose(repeat.conditions["pink noise 10 dB"],
                       conditions["pink noise 10 dB"][0])


async def test_an_empty_recording_is_refused_as_silence_and_the_others_enrolled(
        tmp_path: Path) -> None:
    """A recording with no samples at all (a take stopped before any audio arrived) is
    one refused utterance, not an error that loses the others."""
    identifier = SpeakerIdentifier(SpectrumEncoder(SpeakerConfig(enrol_noise_snr_db=[])),
                                   VoiceprintStore(tmp_path))
    clips = [AudioClip(with_pauses(voice(2.0, seed=i)), RATE) for i in range(2)]
    empty = AudioClip(np.zeros(0, np.float32), 44100)
    enrolment = await identifier.enrol("alice", [clips[0], empty, clips[1]], source="test")
    assert enrolment.used == 2 and enrolment.refused == ((1, SpeakerReason.SILENCE),)


async def who_is_heard_in_noise(tmp_path: Path, config: SpeakerConfig) -> str | None:
    """Alice (a voice at 180 Hz) and Bob (120 Hz) enrolled in quiet; Alice heard at 10 dB
    SNR of white noise: whom does identification name?"""
    identifier = SpeakerIdentifier(SpectrumEncoder(config), VoiceprintStore(tmp_path))
    for person, pitch in (("alice", 180.0), ("bob", 120.0)):
        await identifier.enrol(person, [AudioClip(with_pauses(voice(2.0, pitch, seed=i)), RATE)
                                        for i in range(3)], source="test")
    heard = with_pauses(voice(2.0, 180.0, seed=9))
    noisy = with_noise(heard, 10.0, power_db(heard[RATE // 2:-RATE // 2]), seed=99)
    found = await identifier.identify(AudioClip(noisy, RATE), Household(("alice", "bob"), None))
    return found.voice


@pytest.mark.parametrize(("denoise", "snrs"), [(True, [20.0, 10.0]), (True, []),
                                               (False, [20.0, 10.0])])
async def test_a_voice_in_noise_is_named_with_noise_suppressed_or_enrolled_in_noise(
        tmp_path: Path, denoise: bool, snrs: list[float]) -> None:
    config = SpeakerConfig(threshold=0.5, margin=0.0, denoise=denoise, enrol_noise_snr_db=snrs)
    assert await who_is_heard_in_noise(tmp_path, config) == "alice"


async def test_without_either_the_noise_makes_it_someone_else(tmp_path: Path) -> None:
    """What the two guard against: this encoder, like a real one, moves in noise."""
    config = SpeakerConfig(threshold=0.5, margin=0.0, denoise=False, enrol_noise_snr_db=[])
    assert await who_is_heard_in_noise(tmp_path, config) == "bob"
