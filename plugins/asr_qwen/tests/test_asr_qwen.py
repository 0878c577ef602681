"""asr `qwen`: Qwen3-ASR through qwen-asr, on a tiny random model built by the test."""

from __future__ import annotations

import io
import math
import wave
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from omoide.audio import read_wav, write_wav
from omoide.components import RecognitionContext
from omoide.errors import ConfigError, InvalidInput, ModelNotAvailable
from omoide.testing import ASRContract, PluginPackageContract
from omoide.types import AudioClip
from omoide_asr_qwen.asr import QwenASR, QwenASRConfig


def tone(seconds: float, rate: int = 16000) -> AudioClip:
    t = np.arange(int(seconds * rate), dtype=np.float32) / rate
    return AudioClip((0.2 * np.sin(2 * math.pi * 220 * t)).astype(np.float32), rate)


class TestQwenASRContract(ASRContract):
    component_cls = QwenASR

    @pytest.fixture
    def config(self, tiny_asr_dir: Path) -> dict[str, Any]:
        return {"model": str(tiny_asr_dir), "max_new_tokens": 4}


class TestASRQwenPackage(PluginPackageContract):
    plugin_name = "asr_qwen"
    expected_components: ClassVar[set[tuple[str, str]] | None] = {("asr", "qwen")}


@pytest.fixture
async def asr(tiny_asr_dir: Path) -> Any:
    comp = QwenASR(QwenASRConfig(model=str(tiny_asr_dir), max_new_tokens=4,
                                 hotwords=["箱根", "スタックチャン"], context="旅行の話"))
    await comp.start()
    yield comp
    await comp.stop()


async def test_output_is_nfkc_normalised(asr: QwenASR) -> None:
    result = await asr.transcribe(tone(1.0))
    assert result.text and set(result.text) <= {"A", "1"}   # the model emitted Ａ / １
    assert result.language == "Japanese"


async def test_hotwords_and_context_reach_the_model_prompt(asr: QwenASR,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    seen: list[str] = []
    original = asr._model._build_text_prompt

    def spy(context: str, force_language: str | None) -> str:
        seen.append(context)
        return original(context=context, force_language=force_language)

    monkeypatch.setattr(asr._model, "_build_text_prompt", spy)
    await asr.transcribe(tone(1.0))
    assert seen == ["旅行の話 箱根 スタックチャン"]


async def test_the_memory_vocabulary_follows_the_hotwords_in_the_context_string(
        asr: QwenASR, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    original = asr._model._build_text_prompt

    def spy(context: str, force_language: str | None) -> str:
        seen.append(context)
        return original(context=context, force_language=force_language)

    monkeypatch.setattr(asr._model, "_build_text_prompt", spy)
    await asr.transcribe(tone(1.0), RecognitionContext.of(["ゆき", "箱根", "ポチ"]))
    assert seen == ["旅行の話 箱根 スタックチャン ゆき ポチ"]   # 箱根 once


async def test_bfloat16_weights_load_and_transcribe(tiny_asr_dir: Path) -> None:
    comp = QwenASR(QwenASRConfig(model=str(tiny_asr_dir), dtype="bfloat16", max_new_tokens=4))
    await comp.start()
    try:
        assert set((await comp.transcribe(tone(1.0))).text) <= {"A", "1"}
    finally:
        await comp.stop()


async def test_silence_transcribes_without_error(asr: QwenASR) -> None:
    result = await asr.transcribe(AudioClip(np.zeros(16000, dtype=np.float32), 16000))
    assert isinstance(result.text, str)


async def test_a_very_short_clip_is_padded_not_crashed(asr: QwenASR) -> None:
    result = await asr.transcribe(tone(0.02))
    assert isinstance(result.text, str)


async def test_8khz_audio_is_resampled(asr: QwenASR) -> None:
    assert isinstance((await asr.transcribe(tone(1.0, rate=8000))).text, str)


async def test_a_ten_minute_recording_is_refused_by_default(asr: QwenASR) -> None:
    with pytest.raises(InvalidInput, match="longer than"):
        await asr.transcribe(AudioClip(np.zeros(600 * 16000, dtype=np.float32), 16000))


@pytest.mark.slow
async def test_a_long_recording_allowed_by_config_is_transcribed_in_chunks(
        tiny_asr_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    comp = QwenASR(QwenASRConfig(model=str(tiny_asr_dir), max_new_tokens=2, max_seconds=600,
                                 chunk_seconds=60, timeout_s=300))
    await comp.start()
    lengths: list[int] = []
    original = comp._run
    monkeypatch.setattr(comp, "_run",
                        lambda s, r, p: (lengths.append(s.size), original(s, r, p))[1])
    try:
        clip = AudioClip(np.random.default_rng(0).standard_normal(600 * 16000)
                         .astype(np.float32) * 0.01, 16000)
        result = await comp.transcribe(clip)
    finally:
        await comp.stop()
    assert isinstance(result.text, str)
    assert len(lengths) >= 10 and max(lengths) <= 65 * 16000   # bounded pieces


async def test_nan_audio_is_invalid_input(asr: QwenASR) -> None:
    samples = np.zeros(16000, dtype=np.float32)
    samples[5] = np.nan
    with pytest.raises(InvalidInput, match="NaN"):
        await asr.transcribe(AudioClip(samples, 16000))


def test_a_corrupt_wav_is_invalid_input_before_the_asr() -> None:
    good = write_wav(tone(0.5))
    with pytest.raises(InvalidInput, match="WAV"):
        read_wav(good[:30])
    with pytest.raises(InvalidInput):
        read_wav(b"RIFF\x00\x00\x00\x00WAVEjunkjunkjunk")


async def test_a_stereo_44k_wav_is_mixed_and_resampled(asr: QwenASR) -> None:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(44100)
        w.writeframes((np.ones(44100 * 2, dtype="<i2") * 1000).tobytes())
    clip = read_wav(buf.getvalue())
    assert clip.sample_rate == 44100
    assert isinstance((await asr.transcribe(clip)).text, str)


async def test_missing_weights_name_the_model_and_the_download_command(tmp_path: Path) -> None:
    comp = QwenASR(QwenASRConfig(model="Qwen/Qwen3-ASR-0.6B", cache_dir=str(tmp_path)))
    with pytest.raises(ModelNotAvailable) as info:
        await comp.start()
    assert "Qwen/Qwen3-ASR-0.6B" in str(info.value)
    assert info.value.hint == "omoide download Qwen/Qwen3-ASR-0.6B"


async def test_an_unsupported_language_is_a_config_error(tiny_asr_dir: Path) -> None:
    comp = QwenASR(QwenASRConfig(model=str(tiny_asr_dir), language="Klingon"))
    with pytest.raises(ConfigError, match=r"asr\.language"):
        await comp.start()


async def test_auto_language_lets_the_model_detect(tiny_asr_dir: Path) -> None:
    comp = QwenASR(QwenASRConfig(model=str(tiny_asr_dir), language="auto", max_new_tokens=4))
    await comp.start()
    try:
        assert isinstance((await comp.transcribe(tone(1.0))).text, str)
    finally:
        await comp.stop()
