"""tts `irodori` against a real local server speaking Irodori-TTS-Server's
``POST /v1/audio/speech`` (48 kHz WAV, 503 while loading or busy)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from omoide.audio import write_wav
from omoide.config import EnvValue
from omoide.errors import ComponentError, InvalidInput
from omoide.testing import PluginPackageContract, TTSContract
from omoide.types import AudioClip
from omoide_tts_irodori.tts import IrodoriTTS, IrodoriTTSConfig


@dataclass
class SpeechServerState:
    requests: list[dict[str, Any]] = field(default_factory=list)
    script: list[Any] = field(default_factory=list)     # one step per request; default "ok"


def tone_wav(seconds: float = 0.6, rate: int = 48000) -> bytes:
    t = np.arange(int(seconds * rate), dtype=np.float32) / rate
    return write_wav(AudioClip((0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32), rate))


def speech_app(state: SpeechServerState) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/audio/speech")
    async def speech(request: Request) -> Any:
        body = await request.json()
        state.requests.append({"headers": dict(request.headers), "body": body})
        step = state.script.pop(0) if state.script else "ok"
        if isinstance(step, tuple):
            return JSONResponse(status_code=step[0], content=step[1],
                                headers=step[2] if len(step) > 2 else None)
        if step == "slow":
            await asyncio.sleep(2.0)
        if step == "garbage":
            return Response(b"<html>oops</html>", media_type="audio/wav")
        if step == "empty":
            return Response(tone_wav(0.0), media_type="audio/wav")
        return Response(tone_wav(), media_type="audio/wav")

    return app


@pytest.fixture
def state() -> SpeechServerState:
    return SpeechServerState()


@pytest.fixture
def url(state: SpeechServerState, serve_app: Callable[[object], str]) -> str:
    return serve_app(speech_app(state))


async def started(url: str, **options: Any) -> IrodoriTTS:
    tts = IrodoriTTS(IrodoriTTSConfig.model_validate({"url": url, **options}))
    await tts.start()
    return tts


class TestIrodoriContract(TTSContract):
    component_cls = IrodoriTTS

    @pytest.fixture
    def config(self, url: str) -> dict[str, Any]:
        return {"url": url, "voice": "kana.wav"}


class TestTTSIrodoriPackage(PluginPackageContract):
    plugin_name = "tts_irodori"
    expected_components: ClassVar[set[tuple[str, str]] | None] = {("tts", "irodori")}


async def test_sends_model_input_voice_wav_and_options(url: str,
                                                       state: SpeechServerState) -> None:
    tts = await started(url, voice="kana.wav", options={"speed": 1.1, "seed": 7})
    await tts.synthesize("こんにちは。")
    await tts.stop()
    assert state.requests[0]["body"] == {"model": "irodori-tts", "input": "こんにちは。",
                                         "voice": "kana.wav", "response_format": "wav",
                                         "speed": 1.1, "seed": 7}


async def test_options_cannot_replace_the_text_or_the_format(
        url: str, state: SpeechServerState) -> None:
    tts = await started(url, options={"input": "x", "response_format": "mp3", "speed": 1.0})
    await tts.synthesize("こんにちは。")
    await tts.stop()
    body = state.requests[0]["body"]
    assert body["input"] == "こんにちは。" and body["response_format"] == "wav"


async def test_returns_the_48khz_audio(url: str) -> None:
    tts = await started(url)
    clip = await tts.synthesize("こんにちは。")
    await tts.stop()
    assert clip.sample_rate == 48000 and clip.duration_s == pytest.approx(0.6, abs=0.01)


async def test_resamples_when_asked(url: str) -> None:
    tts = await started(url, sample_rate=16000)
    clip = await tts.synthesize("こんにちは。")
    await tts.stop()
    assert clip.sample_rate == 16000 and clip.duration_s == pytest.approx(0.6, abs=0.01)


async def test_a_busy_server_is_retried_until_it_answers(url: str,
                                                         state: SpeechServerState) -> None:
    busy = (503, {"detail": "busy"}, {"Retry-After": "1"})
    state.script = [busy, (503, {"detail": "model is loading"})]
    tts = await started(url, retries=3)
    clip = await tts.synthesize("こんにちは。")
    await tts.stop()
    assert clip.duration_s > 0.5 and len(state.requests) == 3


async def test_a_server_busy_for_too_long_fails_the_sentence_retryably(
        url: str, state: SpeechServerState) -> None:
    state.script = [(503, {"detail": "busy"})] * 3
    tts = await started(url, retries=1)
    with pytest.raises(ComponentError) as info:
        await tts.synthesize("こんにちは。")
    await tts.stop()
    assert info.value.retryable and "busy" in str(info.value) and len(state.requests) == 2


async def test_a_500_is_retryable(url: str, state: SpeechServerState) -> None:
    state.script = [(500, {"detail": "CUDA out of memory"})]
    tts = await started(url, retries=0)
    with pytest.raises(ComponentError, match="CUDA out of memory") as info:
        await tts.synthesize("こんにちは。")
    await tts.stop()
    assert info.value.retryable


async def test_a_400_is_not_retried(url: str, state: SpeechServerState) -> None:
    state.script = [(400, {"detail": "voice 'nobody.wav' not found"})]
    tts = await started(url, retries=3)
    with pytest.raises(ComponentError, match=r"nobody\.wav") as info:
        await tts.synthesize("こんにちは。")
    await tts.stop()
    assert not info.value.retryable and len(state.requests) == 1


async def test_an_answer_that_is_not_a_wav_is_an_error(url: str,
                                                       state: SpeechServerState) -> None:
    state.script = ["garbage"]
    tts = await started(url)
    with pytest.raises(ComponentError, match="not a WAV"):
        await tts.synthesize("こんにちは。")
    await tts.stop()


async def test_empty_audio_from_the_server_is_an_error(url: str,
                                                       state: SpeechServerState) -> None:
    state.script = ["empty"]
    tts = await started(url)
    with pytest.raises(ComponentError, match="empty audio"):
        await tts.synthesize("こんにちは。")
    await tts.stop()


async def test_a_slow_server_times_out(url: str, state: SpeechServerState) -> None:
    state.script = ["slow"]
    tts = await started(url, timeout_s=0.3, retries=0)
    with pytest.raises(ComponentError) as info:
        await tts.synthesize("こんにちは。")
    await tts.stop()
    assert info.value.retryable


async def test_no_server_is_a_retryable_error() -> None:
    tts = await started("http://127.0.0.1:9", retries=0)
    with pytest.raises(ComponentError, match="cannot reach") as info:
        await tts.synthesize("こんにちは。")
    await tts.stop()
    assert info.value.retryable


async def test_the_bearer_token_is_sent_when_configured(url: str,
                                                        state: SpeechServerState) -> None:
    tts = await started(url, api_key=EnvValue("tok", "IRODORI_TOKEN"))
    await tts.synthesize("こんにちは。")
    await tts.stop()
    assert state.requests[0]["headers"]["authorization"] == "Bearer tok"


async def test_overlong_text_is_refused_before_any_request(url: str,
                                                           state: SpeechServerState) -> None:
    tts = await started(url, max_chars=10)
    with pytest.raises(InvalidInput):
        await tts.synthesize("あ" * 11)
    await tts.stop()
    assert state.requests == []
