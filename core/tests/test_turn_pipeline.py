"""The turn pipeline: stages in order, TTS pipelined with playback, failures degrade."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from omoide.config import AssistantSettings
from omoide.pipeline import sections
from omoide.pipeline.assistant import APOLOGY, Assistant, ExtractionScheduler
from omoide.pipeline.turn import TurnRequest
from omoide.plugins import PluginRegistry
from omoide.testing.doubles import FakeASR, FakeChat, FakeTTS, MemoryServiceDouble
from omoide.types import AudioClip, Emotion, Memory, RetrievedMemory, ToolCall, ToolSpec

SUNDAY = datetime(2026, 9, 27, 12, 0, tzinfo=UTC)  # 21:00 JST


class RecordingSink:
    """Records what a device would receive, with arrival times; ``play_s`` per sentence."""

    def __init__(self, play_s: float = 0.0) -> None:
        self.play_s = play_s
        self.events: list[tuple[str, Any, float]] = []
        self.t0 = time.perf_counter()

    def _at(self) -> float:
        return time.perf_counter() - self.t0

    async def on_transcript(self, text: str) -> None:
        self.events.append(("transcript", text, self._at()))

    async def on_emotion(self, emotion: Emotion) -> None:
        self.events.append(("emotion", emotion, self._at()))

    async def on_sentence(self, text: str, audio: AudioClip | None) -> None:
        self.events.append(("sentence", (text, audio), self._at()))
        await asyncio.sleep(self.play_s)

    def kinds(self) -> list[str]:
        return [e[0] for e in self.events]


def _assistant(registry: PluginRegistry, *, chat: dict[str, Any] | None = None,
               tts: dict[str, Any] | None = None, memory: MemoryServiceDouble | None = None,
               asr_text: str = "こんにちは", **settings: Any) -> Assistant:
    if not registry.pm.is_registered(sections):
        registry.pm.register(sections)
    memory = memory if memory is not None else MemoryServiceDouble()
    registry.pm.register(ExtractionScheduler(memory))
    return Assistant(settings=AssistantSettings(**settings),
                     asr=FakeASR(FakeASR.Config(text=asr_text)),
                     chat=FakeChat(FakeChat.Config(**(chat or {}))),
                     tts=FakeTTS(FakeTTS.Config(**(tts or {}))), memory=memory,
                     hooks=registry.pm)


def _memory(text: str, user: str = "u1") -> RetrievedMemory:
    return RetrievedMemory(Memory("m1", user, text, SUNDAY), 0.9)


async def test_an_audio_turn_runs_every_stage_in_order(registry: PluginRegistry) -> None:
    assistant = _assistant(registry, chat={"reply": "[happy] やあ！元気だよ。"})
    sink = RecordingSink()
    clip = AudioClip(np.full(16000, 0.1, dtype=np.float32), 16000)
    result = await assistant.run_turn(TurnRequest(user="u1", audio=clip), sink)
    assert sink.kinds() == ["transcript", "emotion", "sentence", "sentence"]
    assert result.transcript == "こんにちは"
    assert result.reply == "やあ！元気だよ。"
    assert result.emotion is Emotion.HAPPY
    stages = result.trace["stages"]
    for stage in ("end_of_speech", "asr", "retrieve", "chat_first_token",
                  "first_sentence_audio", "done"):
        assert stage in stages, stage
    assert stages["asr"]["component"] == "fake"


async def test_the_emotion_tag_is_never_spoken(registry: PluginRegistry) -> None:
    assistant = _assistant(registry, chat={"reply": "[sad] そっか。残念だね。", "chunk_chars": 1})
    sink = RecordingSink()
    result = await assistant.run_turn(TurnRequest(user="u1", text="財布なくした"), sink)
    spoken = [e[1][0] for e in sink.events if e[0] == "sentence"]
    assert spoken == ["そっか。", "残念だね。"]
    assert sink.events[1][:2] == ("emotion", Emotion.SAD)
    assert "[sad]" not in result.reply


async def test_the_next_sentence_is_synthesised_while_the_current_one_plays(
        registry: PluginRegistry) -> None:
    """Checked by the order of events, not by wall-clock thresholds."""
    log: list[str] = []

    class LoggingTTS(FakeTTS):
        async def _synthesize(self, text: str) -> AudioClip:
            log.append(f"tts start {text}")
            clip = await super()._synthesize(text)
            log.append(f"tts end {text}")
            return clip

    class PlayingSink(RecordingSink):
        async def on_sentence(self, text: str, audio: AudioClip | None) -> None:
            log.append(f"play start {text}")
            await asyncio.sleep(0.05)
            log.append(f"play end {text}")

    assistant = _assistant(registry, chat={"reply": "[happy] 一つ目。二つ目。三つ目。"})
    assistant.tts = LoggingTTS(FakeTTS.Config(latency_ms=20))
    await assistant.run_turn(TurnRequest(user="u1", text="やあ"), PlayingSink())
    # sentence 2 is being synthesised before sentence 1 has finished playing...
    assert log.index("tts start 二つ目。") < log.index("play end 一つ目。")
    # ... and is ready by then (20 ms of TTS against 50 ms of playback, both timers on
    # one event loop), so playback goes on without waiting for TTS
    assert log.index("tts end 二つ目。") < log.index("play end 一つ目。")
    assert [e for e in log if e.startswith("play start")] == [
        "play start 一つ目。", "play start 二つ目。", "play start 三つ目。"]


async def test_memories_and_dates_reach_the_system_prompt(registry: PluginRegistry) -> None:
    hakone = _memory("あなたは来週の土曜日（2026年10月3日）に箱根に行く予定だ。")
    memory = MemoryServiceDouble([hakone])
    assistant = _assistant(registry, memory=memory)
    await assistant.run_turn(TurnRequest(user="u1", text="週末の予定覚えてる?", now=SUNDAY),
                             RecordingSink())
    system = assistant.chat.requests[0][0].content  # type: ignore[attr-defined]
    assert "<retrieved_memory>" in system and "箱根" in system
    assert "明日は2026年9月28日（月曜日）" in system


async def test_recent_exchanges_are_sent_as_history(registry: PluginRegistry) -> None:
    assistant = _assistant(registry, chat={"reply": "[happy] うん。"})
    await assistant.run_turn(TurnRequest(user="u1", text="一回目", now=SUNDAY), RecordingSink())
    await assistant.run_turn(TurnRequest(user="u1", text="二回目", now=SUNDAY), RecordingSink())
    roles = [(m.role, m.content) for m in assistant.chat.requests[1][1:]]  # type: ignore[attr-defined]
    assert roles == [("user", "一回目"), ("assistant", "うん。"), ("user", "二回目")]


async def test_every_exchange_is_journaled_before_observers_hear_of_it(
        registry: PluginRegistry) -> None:
    memory = MemoryServiceDouble()
    assistant = _assistant(registry, memory=memory, chat={"reply": "[happy] はい。"})
    await assistant.run_turn(TurnRequest(user="u1", text="覚えておいて"), RecordingSink())
    assert [e.user_text for e in memory.journal] == ["覚えておいて"]
    assert memory.noted == memory.journal
    assert memory.journal[0].assistant_text == "はい。"


async def test_a_failing_chat_model_degrades_to_an_apology(registry: PluginRegistry) -> None:
    memory = MemoryServiceDouble()
    assistant = _assistant(registry, memory=memory, chat={"fail_with": "quota exceeded"})
    sink = RecordingSink()
    result = await assistant.run_turn(TurnRequest(user="u1", text="やあ"), sink)
    assert result.reply == APOLOGY
    assert result.emotion is Emotion.SAD
    assert any("quota exceeded" in d for d in result.degraded)
    assert result.trace["stages"]["chat"]["error"]
    assert len(memory.journal) == 1  # the user's words are still journaled


async def test_a_failed_sentence_is_still_shown_without_audio(registry: PluginRegistry) -> None:
    assistant = _assistant(registry, chat={"reply": "[happy] 一つ目。壊れる文。三つ目。"},
                           tts={"fail_on": "壊れる"})
    sink = RecordingSink()
    result = await assistant.run_turn(TurnRequest(user="u1", text="やあ"), sink)
    sentences = [e[1] for e in sink.events if e[0] == "sentence"]
    assert [s[0] for s in sentences] == ["一つ目。", "壊れる文。", "三つ目。"]
    assert [s[1] is None for s in sentences] == [False, True, False]
    assert any("壊れる" in d for d in result.degraded)


async def test_a_failing_memory_means_no_memory_not_a_failed_turn(
        registry: PluginRegistry) -> None:
    assistant = _assistant(registry, memory=MemoryServiceDouble(fail=True),
                           chat={"reply": "[happy] はい。"})
    result = await assistant.run_turn(TurnRequest(user="u1", text="やあ"), RecordingSink())
    assert result.reply == "はい。" and result.memories == []
    assert "memory double fails" in result.trace["stages"]["retrieve"]["error"]


async def test_barge_in_stops_speech_and_journals_what_was_said(
        registry: PluginRegistry) -> None:
    memory = MemoryServiceDouble()
    assistant = _assistant(registry, memory=memory,
                           chat={"reply": "[happy] 一つ目。二つ目。三つ目。四つ目。"})
    sink = RecordingSink(play_s=0.2)
    task = asyncio.create_task(assistant.run_turn(TurnRequest(user="u1", text="やあ"), sink))
    while sum(1 for e in sink.events if e[0] == "sentence") < 1:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.3)
    assert sum(1 for e in sink.events if e[0] == "sentence") == 1
    assert memory.journal[0].assistant_text == "一つ目。"


async def test_an_empty_transcript_ends_the_turn_quietly(registry: PluginRegistry) -> None:
    memory = MemoryServiceDouble()
    assistant = _assistant(registry, memory=memory, asr_text="")
    clip = AudioClip(np.zeros(1600, dtype=np.float32), 16000)
    result = await assistant.run_turn(TurnRequest(user="u1", audio=clip), RecordingSink())
    assert result.reply == "" and memory.journal == []


async def test_tool_calls_are_relayed_and_answered(registry: PluginRegistry) -> None:
    calls: list[ToolCall] = []

    async def handler(call: ToolCall) -> str:
        calls.append(call)
        return '{"ok": true}'

    class ToolChat(FakeChat):
        async def _stream(self, messages, tools, json_output):  # type: ignore[no-untyped-def]
            from omoide.types import ChatDelta
            self.requests.append(list(messages))
            if messages[-1].role != "tool":
                yield ChatDelta(tool_call=ToolCall("c1", tools[0].name, '{"yaw": 30}'))
            else:
                yield ChatDelta(text="[happy] うなずいたよ。")

    assistant = _assistant(registry)
    assistant.chat = ToolChat(ToolChat.Config())
    tool = ToolSpec("self.robot.set_head_angles", "move the head", {"type": "object"})
    result = await assistant.run_turn(
        TurnRequest(user="u1", text="うなずいて", tools=[tool], tool_handler=handler),
        RecordingSink())
    assert [c.name for c in calls] == ["self.robot.set_head_angles"]
    assert result.reply == "うなずいたよ。"


async def test_a_failing_observer_does_not_break_the_turn_or_other_observers(
        registry: PluginRegistry) -> None:
    from omoide.hookspecs import hookimpl

    class Broken:
        @hookimpl
        def on_turn_completed(self, turn: Any) -> None:
            raise RuntimeError("observer bug")

    memory = MemoryServiceDouble()
    assistant = _assistant(registry, memory=memory, chat={"reply": "[happy] はい。"})
    registry.pm.register(Broken())
    result = await assistant.run_turn(TurnRequest(user="u1", text="やあ"), RecordingSink())
    assert result.reply == "はい。"
    assert len(memory.noted) == 1  # the extraction scheduler still heard of the turn


async def test_plugins_contribute_prompt_sections_in_order(registry: PluginRegistry) -> None:
    from omoide.hookspecs import hookimpl
    from omoide.pipeline.prompt import PromptSection

    class Weather:
        @hookimpl
        def prompt_sections(self, context: Any) -> list[PromptSection]:
            return [PromptSection("house-rules", "ルール: 敬語は使わない。", 15)]

    assistant = _assistant(registry)
    registry.pm.register(Weather())
    await assistant.run_turn(TurnRequest(user="u1", text="やあ", now=SUNDAY), RecordingSink())
    system = assistant.chat.requests[0][0].content  # type: ignore[attr-defined]
    assert system.index("感情タグ") < system.index("ルール: 敬語") < system.index("今日は")
