"""A turn whose utterance was recognised while it was spoken: the device opens the stream
with ``Assistant.open_recognition`` (biased as a turn's recognition is), feeds it, and
the turn finishes it instead of transcribing the audio; a stream the turn never reached
is cancelled."""

from __future__ import annotations

import asyncio

import numpy as np

from omoide.config import AssistantSettings
from omoide.pipeline import sections
from omoide.pipeline.assistant import Assistant
from omoide.pipeline.turn import NullSink, TurnRequest
from omoide.plugins import PluginRegistry
from omoide.testing.doubles import FakeASR, FakeChat, FakeTTS, MemoryServiceDouble
from omoide.types import AudioClip

SPEECH = AudioClip(np.full(16000, 0.1, dtype=np.float32), 16000)


def _assistant(registry: PluginRegistry, asr: FakeASR, chat: FakeChat | None = None,
               memory: MemoryServiceDouble | None = None) -> Assistant:
    if not registry.pm.is_registered(sections):
        registry.pm.register(sections)
    return Assistant(settings=AssistantSettings(), asr=asr,
                     chat=chat or FakeChat(FakeChat.Config()), tts=FakeTTS(FakeTTS.Config()),
                     memory=memory or MemoryServiceDouble(), hooks=registry.pm)


async def test_the_turn_finishes_the_stream_instead_of_transcribing_the_audio(
        registry: PluginRegistry) -> None:
    asr = FakeASR(FakeASR.Config(text="箱根に行くんだ"))
    await asr.start()
    assistant = _assistant(registry, asr, memory=MemoryServiceDouble(vocabulary=["箱根"]))
    stream = await assistant.open_recognition("u1", 16000)
    assert stream is not None
    stream.feed(SPEECH.samples)
    result = await assistant.run_turn(
        TurnRequest(user="u1", audio=SPEECH, recognition=stream), NullSink())
    assert result.transcript == "箱根に行くんだ" and stream.closed
    assert asr.contexts == [asr.request_context(stream.context)]   # one decode, biased
    assert stream.context is not None and stream.context.vocabulary == ("箱根",)
    assert result.trace["stages"]["asr"]["note"].startswith("recognised while spoken")


async def test_a_stream_the_turn_never_finished_is_cancelled(
        registry: PluginRegistry) -> None:
    asr = FakeASR(FakeASR.Config())
    await asr.start()
    assistant = _assistant(registry, asr, chat=FakeChat(FakeChat.Config(first_token_ms=5000)))
    stream = await assistant.open_recognition("u1", 16000)
    assert stream is not None
    stream.feed(SPEECH.samples)
    turn = asyncio.create_task(assistant.run_turn(
        TurnRequest(user="u1", text="こんにちは", recognition=stream), NullSink()))
    await asyncio.sleep(0.2)
    turn.cancel()
    await asyncio.gather(turn, return_exceptions=True)
    assert stream.closed and asr.contexts == []


async def test_without_an_asr_there_is_no_stream(registry: PluginRegistry) -> None:
    if not registry.pm.is_registered(sections):
        registry.pm.register(sections)
    assistant = Assistant(settings=AssistantSettings(), asr=None,
                          chat=FakeChat(FakeChat.Config()), tts=None, memory=None,
                          hooks=registry.pm)
    assert await assistant.open_recognition("u1", 16000) is None
