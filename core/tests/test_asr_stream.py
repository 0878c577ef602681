"""Recognition while the person speaks: the stream every recogniser opens.

A recogniser that cannot stream gets the default stream, which keeps the audio and
calls ``transcribe`` at finish (today's result, byte for byte); a streaming one gets
its audio resampled as it arrives, and a failure of its streaming path falls back to
decoding the whole utterance rather than losing it.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from omoide.components import Capabilities, RecognitionContext
from omoide.components.asr import RecognitionStream, StreamingRecognition
from omoide.errors import ComponentError
from omoide.plugins import build_registry
from omoide.testing.contracts import audio_frames
from omoide.testing.doubles import FakeASR
from omoide.types import AudioClip, Transcript

SPEECH = AudioClip(np.sin(np.arange(24000, dtype=np.float32) / 7) * 0.2, 48000)


class RecordingASR(FakeASR):
    """Remembers the audio each ``transcribe`` decoded."""

    name = "recording"

    def __init__(self, config: FakeASR.Config) -> None:
        super().__init__(config)
        self.heard: list[AudioClip] = []

    async def _transcribe(self, audio: AudioClip, context: RecognitionContext) -> Transcript:
        self.heard.append(audio)
        return await super()._transcribe(audio, context)


class TailStream(StreamingRecognition):
    """A streaming stream that settles the first word early and fails at finish when
    told to."""

    asr: TailASR

    def _input_grew(self) -> None:
        if self.input_samples >= 4000:
            self._set_stable("こんにちは")

    async def _final_streaming(self) -> Transcript:
        if self.asr.fail:
            raise ComponentError("the tail decode broke")
        return Transcript(f"こんにちは {self.input_samples}", "Japanese")


class TailASR(FakeASR):
    name = "tail"
    capabilities: ClassVar[Capabilities] = Capabilities(streaming=True)
    fail = False

    def _open_stream(self, context: RecognitionContext | None,
                     sample_rate: int) -> RecognitionStream:
        return TailStream(self, context, sample_rate)


def test_every_registered_recogniser_opens_a_stream() -> None:
    registry = build_registry()
    recognisers = registry.components["asr"]
    assert recognisers, "no ASR registered"
    for name, cls in recognisers.items():
        asr = cls(cls.Config())
        stream = asr.open_stream(RecognitionContext.of(["箱根"]), sample_rate=16000)
        assert isinstance(stream, RecognitionStream), name
        assert isinstance(stream, StreamingRecognition) == cls.capabilities.streaming, name


async def test_the_default_stream_transcribes_exactly_the_audio_fed() -> None:
    asr = RecordingASR(RecordingASR.Config(hotwords=["ゆき"]))
    context = RecognitionContext.of(["箱根"])
    stream = asr.open_stream(context, sample_rate=48000)
    for frame in audio_frames(SPEECH, 0.06):
        stream.feed(frame)
    result = await stream.finish()
    await asr.transcribe(SPEECH, context)
    streamed, whole = asr.heard
    assert np.array_equal(streamed.samples, whole.samples)
    assert streamed.sample_rate == whole.sample_rate == 16000
    assert asr.contexts[0] == asr.contexts[1] == RecognitionContext(("ゆき", "箱根"))
    assert result.text == "こんにちは"


async def test_a_streaming_recogniser_gets_its_input_rate_as_audio_arrives() -> None:
    asr = TailASR(TailASR.Config())
    stream = asr.open_stream(sample_rate=48000)
    for frame in audio_frames(SPEECH, 0.06):
        stream.feed(frame)
    assert stream.stable_text == "こんにちは"
    assert isinstance(stream, TailStream)
    assert abs(stream.input_samples - 8000) < 400  # the resampler holds a few ms back
    result = await stream.finish()
    assert result.text == "こんにちは 8000"  # flushed at finish: 0.5 s at 16 kHz


async def test_a_failing_streaming_path_falls_back_to_the_whole_utterance() -> None:
    asr = TailASR(TailASR.Config(text="全部聞こえた"))
    asr.fail = True
    stream = asr.open_stream(sample_rate=48000)
    stream.feed(SPEECH.samples)
    assert (await stream.finish()).text == "全部聞こえた"
    assert asr.durations_ms, "the whole utterance was transcribed"


async def test_a_stream_finishes_once() -> None:
    stream = FakeASR(FakeASR.Config()).open_stream()
    stream.feed(np.zeros(1600, dtype=np.float32))
    await stream.finish()
    with pytest.raises(Exception, match="ended"):
        await stream.finish()


def test_a_stream_needs_a_positive_sample_rate() -> None:
    with pytest.raises(Exception, match="not positive"):
        FakeASR(FakeASR.Config()).open_stream(sample_rate=0)
