"""What the `openjtalk` TTS promises: scaled float audio, speed and pitch, odd inputs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from omoide.audio import resample
from omoide.errors import InvalidInput, ModelNotAvailable
from omoide.types import AudioClip
from omoide_tts_openjtalk.tts import OpenJTalkTTS, OpenJTalkTTSConfig

SENTENCE = "明日は友達と箱根に行きます。"


async def _speak(text: str, **options: object) -> AudioClip:
    tts = OpenJTalkTTS(OpenJTalkTTSConfig.model_validate(options))
    await tts.start()
    try:
        return await tts.synthesize(text)
    finally:
        await tts.stop()


def _median_pitch_hz(clip: AudioClip) -> float:
    """Median F0 over voiced 40 ms frames, by the YIN difference function (60–800 Hz)."""
    clip = resample(clip, 16000)
    x, sr = clip.samples.astype(np.float64), clip.sample_rate
    n, shortest, longest = int(0.04 * sr), sr // 800, sr // 60
    pitches = []
    for i in range(0, len(x) - n - longest, n // 2):
        window = x[i:i + n + longest]
        if np.sqrt(np.mean(window[:n] ** 2)) < 0.03:
            continue
        diff = np.array([np.sum((window[:n] - window[lag:lag + n]) ** 2)
                         for lag in range(1, longest)])
        normalised = diff * np.arange(1, longest) / np.maximum(np.cumsum(diff), 1e-12)
        dips = np.flatnonzero(normalised[shortest - 1:] < 0.15)
        if not len(dips):
            continue  # unvoiced
        k = int(dips[0]) + shortest - 1
        while k + 1 < len(normalised) and normalised[k + 1] < normalised[k]:
            k += 1
        pitches.append(sr / (k + 1))
    return float(np.median(pitches))


@pytest.fixture
async def tts() -> AsyncIterator[OpenJTalkTTS]:
    component = OpenJTalkTTS(OpenJTalkTTSConfig())
    await component.start()
    yield component
    await component.stop()


async def test_speech_is_float32_within_unit_range_and_not_silent(tts: OpenJTalkTTS) -> None:
    clip = await tts.synthesize(SENTENCE)
    assert clip.sample_rate == 48000 and clip.samples.dtype == np.float32
    peak = float(np.abs(clip.samples).max())
    assert 0.1 < peak <= 1.0


async def test_loud_sounds_are_scaled_not_clipped(tts: OpenJTalkTTS) -> None:
    # "w" makes the synthesiser overshoot the int16 range by far.
    clip = await tts.synthesize("w")
    assert float(np.abs(clip.samples).max()) == pytest.approx(1.0, abs=1e-6)
    assert int(np.sum(np.abs(clip.samples) > 0.999)) < 5


async def test_faster_speed_gives_shorter_audio() -> None:
    normal, fast = await _speak(SENTENCE), await _speak(SENTENCE, speed=1.5)
    assert fast.duration_s < normal.duration_s * 0.8


@pytest.mark.parametrize("half_tone", [5, -3])
async def test_half_tone_shifts_the_pitch_by_semitones(half_tone: float) -> None:
    normal, shifted = await _speak(SENTENCE), await _speak(SENTENCE, half_tone=half_tone)
    ratio = _median_pitch_hz(shifted) / _median_pitch_hz(normal)
    assert ratio == pytest.approx(2 ** (half_tone / 12), rel=0.06)


async def test_text_with_nothing_to_pronounce_gives_empty_audio(tts: OpenJTalkTTS) -> None:
    clip = await tts.synthesize("😀")
    assert clip.duration_s == 0 and clip.sample_rate == 48000


async def test_overlong_text_is_invalid_input() -> None:
    tts = OpenJTalkTTS(OpenJTalkTTSConfig(max_chars=5))
    with pytest.raises(InvalidInput, match="max_chars"):
        await tts.synthesize(SENTENCE)


async def test_a_missing_voice_file_names_the_fix(tmp_path: Path) -> None:
    tts = OpenJTalkTTS(OpenJTalkTTSConfig(voice=str(tmp_path / "nobody.htsvoice")))
    with pytest.raises(ModelNotAvailable, match="no HTS voice"):
        await tts.start()
    await tts.stop()


async def test_the_bundled_voice_file_can_be_named_explicitly() -> None:
    import pyopenjtalk

    clip = await _speak("はい。", voice=pyopenjtalk.DEFAULT_HTS_VOICE.decode())
    assert clip.duration_s > 0.2
