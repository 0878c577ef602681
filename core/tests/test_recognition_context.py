"""Memory-biased recognition: the ASR request carries the person's memory vocabulary,
merged after the configured hotwords, bounded in size and in the time it may cost."""

from __future__ import annotations

from typing import Any

import numpy as np

from omoide.components import RecognitionContext
from omoide.config import AssistantSettings
from omoide.pipeline import sections
from omoide.pipeline.assistant import Assistant
from omoide.pipeline.recognition import recognition_context
from omoide.pipeline.turn import TurnRequest
from omoide.plugins import PluginRegistry
from omoide.testing.doubles import FakeASR, FakeChat, FakeTTS, MemoryServiceDouble
from omoide.types import AudioClip, Emotion

SPEECH = AudioClip(np.full(16000, 0.1, dtype=np.float32), 16000)


class NullSink:
    async def on_transcript(self, text: str) -> None:
        return None

    async def on_emotion(self, emotion: Emotion) -> None:
        return None

    async def on_sentence(self, text: str, audio: AudioClip | None) -> None:
        return None


def _assistant(registry: PluginRegistry, memory: MemoryServiceDouble,
               **asr: Any) -> tuple[Assistant, FakeASR]:
    if not registry.pm.is_registered(sections):
        registry.pm.register(sections)
    recogniser = FakeASR(FakeASR.Config(**asr))
    return Assistant(settings=AssistantSettings(), asr=recogniser, chat=FakeChat(FakeChat.Config()),
                     tts=FakeTTS(FakeTTS.Config()), memory=memory,
                     hooks=registry.pm), recogniser


def test_a_context_is_cleaned_deduplicated_and_bounded() -> None:
    context = RecognitionContext.of(["  箱根 ", "ＡＢＣ", "箱根", "", "x" * 100, "ゆき", "ポチ"],
                                    limit=3)
    assert context.vocabulary == ("箱根", "ABC", "ゆき")


def test_an_empty_context_is_falsy() -> None:
    assert not RecognitionContext()
    assert RecognitionContext.of(["箱根"])


async def test_the_configured_hotwords_come_before_the_persons_vocabulary() -> None:
    asr = FakeASR(FakeASR.Config(hotwords=["スタックチャン"], memory_vocabulary=2))
    await asr.start()
    await asr.transcribe(SPEECH, RecognitionContext.of(["箱根", "スタックチャン", "ゆき", "ポチ"]))
    assert asr.contexts[-1].vocabulary == ("スタックチャン", "箱根", "ゆき")


async def test_memory_vocabulary_zero_keeps_only_the_hotwords() -> None:
    asr = FakeASR(FakeASR.Config(hotwords=["スタックチャン"], memory_vocabulary=0))
    await asr.start()
    await asr.transcribe(SPEECH, RecognitionContext.of(["箱根"]))
    assert asr.contexts[-1].vocabulary == ("スタックチャン",)


async def test_an_audio_turn_is_recognised_with_the_persons_memory_vocabulary(
        registry: PluginRegistry) -> None:
    memory = MemoryServiceDouble(vocabulary=["箱根", "ゆき"])
    assistant, asr = _assistant(registry, memory)
    await assistant.run_turn(TurnRequest(user="u1", audio=SPEECH), NullSink())
    assert asr.contexts[-1].vocabulary == ("箱根", "ゆき")
    assert memory.vocabulary_requests == [("u1", asr.config.memory_vocabulary)]


async def test_the_asr_trace_says_how_many_memory_words_were_used(
        registry: PluginRegistry) -> None:
    assistant, _ = _assistant(registry, MemoryServiceDouble(vocabulary=["箱根", "ゆき"]))
    result = await assistant.run_turn(TurnRequest(user="u1", audio=SPEECH), NullSink())
    assert result.trace["stages"]["asr"]["note"] == "2 memory and tool words as context"


async def test_a_slow_memory_vocabulary_is_skipped_and_the_turn_goes_on(
        registry: PluginRegistry) -> None:
    memory = MemoryServiceDouble(vocabulary=["箱根"], vocabulary_delay_s=5.0)
    assistant, asr = _assistant(registry, memory, text="こんにちは")
    result = await assistant.run_turn(TurnRequest(user="u1", audio=SPEECH), NullSink())
    assert result.transcript == "こんにちは"
    assert asr.contexts[-1].vocabulary == ()


async def test_a_failing_memory_vocabulary_does_not_fail_the_turn(
        registry: PluginRegistry) -> None:
    memory = MemoryServiceDouble(vocabulary=["箱根"], fail=True)
    assistant, asr = _assistant(registry, memory, text="こんにちは")
    result = await assistant.run_turn(TurnRequest(user="u1", audio=SPEECH), NullSink())
    assert result.transcript == "こんにちは" and asr.contexts[-1].vocabulary == ()


async def test_a_text_turn_asks_for_no_vocabulary(registry: PluginRegistry) -> None:
    memory = MemoryServiceDouble(vocabulary=["箱根"])
    assistant, _ = _assistant(registry, memory)
    await assistant.run_turn(TurnRequest(user="u1", text="こんにちは"), NullSink())
    assert memory.vocabulary_requests == []


async def test_no_memory_or_a_zero_limit_gives_an_empty_context() -> None:
    assert not await recognition_context(None, "u1", 32)
    memory = MemoryServiceDouble(vocabulary=["箱根"])
    assert not await recognition_context(memory, "u1", 0)
    assert memory.vocabulary_requests == []


async def test_the_ready_tools_phrases_follow_the_memory_vocabulary(
        registry: PluginRegistry, tmp_path: Any) -> None:
    from omoide.config import ToolCallSettings
    from omoide.pipeline.tools import ToolRunner
    from omoide.testing.doubles import ToolDouble, ToolHostDouble

    class TimerDouble(ToolDouble):
        recognition_phrases = ("タイマー", "10秒", "箱根")

    class SleepingDouble(ToolDouble):
        recognition_phrases = ("天気",)

    ready, never_started = TimerDouble(TimerDouble.Config()), SleepingDouble(
        SleepingDouble.Config())
    ready.attach(ToolHostDouble(tmp_path))
    await ready.start()
    assistant, asr = _assistant(registry, MemoryServiceDouble(vocabulary=["箱根", "ゆき"]))
    assistant.tools = ToolRunner([ready, never_started], ToolCallSettings(), "Asia/Tokyo")
    await assistant.run_turn(TurnRequest(user="u1", audio=SPEECH), NullSink())
    assert asr.contexts[-1].vocabulary == ("箱根", "ゆき", "タイマー", "10秒")


async def test_biasing_off_sends_no_tool_phrases_either() -> None:
    context = await recognition_context(MemoryServiceDouble(vocabulary=["箱根"]), "u1", 0,
                                        tool_phrases=["タイマー"])
    assert context.vocabulary == ()
