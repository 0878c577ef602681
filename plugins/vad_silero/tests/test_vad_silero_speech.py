"""The `silero` VAD on real (synthesised) Japanese speech, through the core's detector."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from omoide.audio import resample
from omoide.errors import ModelNotAvailable
from omoide.types import AudioClip
from omoide_vad_silero.vad import SileroVAD, SileroVADConfig

SR = 16000
LEAD_S, TAIL_S = 1.0, 1.5


@pytest.fixture(scope="module")
def utterance() -> AudioClip:
    """「こんにちは、今日はいい天気ですね」 spoken by Open JTalk, at 16 kHz in [-1, 1]."""
    pyopenjtalk = pytest.importorskip("pyopenjtalk")
    samples, rate = pyopenjtalk.tts("こんにちは、今日はいい天気ですね")
    clip = AudioClip(np.clip(samples / 32768.0, -1, 1).astype(np.float32), int(rate))
    return resample(clip, SR)


def _voiced_extent_s(clip: AudioClip) -> tuple[float, float]:
    """First and last moment the waveform is clearly above the synthesiser's silence."""
    loud = np.flatnonzero(np.abs(clip.samples) > 0.02)
    return loud[0] / clip.sample_rate, loud[-1] / clip.sample_rate


@pytest.fixture
async def vad() -> AsyncIterator[SileroVAD]:
    component = SileroVAD(SileroVADConfig(min_silence_ms=500))
    await component.start()
    yield component
    await component.stop()


async def test_detector_reports_start_then_end_around_the_utterance(
        vad: SileroVAD, utterance: AudioClip) -> None:
    padded = np.concatenate([np.zeros(int(LEAD_S * SR), np.float32), utterance.samples,
                             np.zeros(int(TAIL_S * SR), np.float32)])
    detector = vad.new_detector()
    events = []
    for i in range(0, len(padded), 960):  # 60 ms pushes, as a device sends them
        events += detector.push(padded[i:i + 960])
    assert [e.kind for e in events] == ["speech_start", "speech_end"]
    voiced_from, voiced_to = _voiced_extent_s(utterance)
    start, end = events[0].at_s, events[1].at_s
    assert abs(start - (LEAD_S + voiced_from)) < 0.25
    assert abs(end - (LEAD_S + voiced_to)) < 0.35


async def test_speech_frames_score_high_and_silence_low(vad: SileroVAD,
                                                        utterance: AudioClip) -> None:
    state = vad.new_state()
    n = vad.frame_samples
    frames = [utterance.samples[i:i + n] for i in range(0, len(utterance.samples) - n + 1, n)]
    probs = np.array([vad.speech_probability(f, state) for f in frames])
    assert np.median(probs) > 0.8
    silence = [vad.speech_probability(np.zeros(n, np.float32), state) for _ in range(30)]
    assert silence[-1] < 0.1


async def test_streams_keep_separate_state(vad: SileroVAD, utterance: AudioClip) -> None:
    n = vad.frame_samples
    frame = utterance.samples[SR // 2: SR // 2 + n]
    warmed = vad.new_state()
    for i in range(0, SR // 2 - n, n):
        vad.speech_probability(utterance.samples[i:i + n], warmed)
    fresh_a, fresh_b = vad.new_state(), vad.new_state()
    pa = vad.speech_probability(frame, fresh_a)
    vad.speech_probability(frame, warmed)
    assert vad.speech_probability(frame, fresh_b) == pytest.approx(pa)


async def test_a_missing_model_file_names_the_fix(tmp_path: Path) -> None:
    component = SileroVAD(SileroVADConfig(model_path=str(tmp_path / "absent.onnx")))
    with pytest.raises(ModelNotAvailable, match="no model file") as info:
        await component.start()
    assert "silero-vad" in info.value.hint
    await component.stop()
