"""One turn, one stream of events: what a turn emits, in which order, and that the
device, the trace and the observers all read that one stream."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from omoide.components.turn_events import (
    Degraded,
    Done,
    EmotionChosen,
    FirstToken,
    Heard,
    Recalled,
    ReplyEnded,
    Sentence,
    StageEnded,
    StageStarted,
    ToolCalled,
    TurnEvent,
    TurnEvents,
    TurnStarted,
)
from omoide.config import AssistantSettings, ToolCallSettings
from omoide.pipeline import sections
from omoide.pipeline.assistant import APOLOGY, Assistant
from omoide.pipeline.tools import ToolRunner
from omoide.pipeline.trace import TurnTrace
from omoide.pipeline.turn import TurnRequest
from omoide.plugins import PluginRegistry
from omoide.testing.doubles import (
    FakeASR,
    FakeChat,
    FakeTTS,
    MemoryServiceDouble,
    ToolDouble,
    ToolHostDouble,
    TurnEventRecorder,
)
from omoide.types import AudioClip, Emotion

SPEECH = AudioClip(np.full(16000, 0.1, dtype=np.float32), 16000)
STAGE_EVENTS = (StageStarted, StageEnded)


def _assistant(registry: PluginRegistry, *, chat: dict[str, Any] | None = None,
               tts: dict[str, Any] | None = None, tools: list[Any] | None = None,
               memory: MemoryServiceDouble | None = None) -> Assistant:
    if not registry.pm.is_registered(sections):
        registry.pm.register(sections)
    return Assistant(settings=AssistantSettings(), asr=FakeASR(FakeASR.Config()),
                     chat=FakeChat(FakeChat.Config(**(chat or {}))),
                     tts=FakeTTS(FakeTTS.Config(**(tts or {}))),
                     memory=memory or MemoryServiceDouble(), hooks=registry.pm,
                     tools=ToolRunner(tools or [], ToolCallSettings(), "Asia/Tokyo"))


def _without_stages(recorder: TurnEventRecorder) -> list[str]:
    return [k for k, e in zip(recorder.kinds(), recorder.events, strict=True)
            if not isinstance(e, STAGE_EVENTS)]


def _stages(recorder: TurnEventRecorder) -> list[str]:
    return [k for k, e in zip(recorder.kinds(), recorder.events, strict=True)
            if isinstance(e, STAGE_EVENTS)]


async def test_a_spoken_turn_emits_its_events_in_order(registry: PluginRegistry) -> None:
    assistant = _assistant(registry, chat={"reply": "[happy] やあ！元気だよ。"})
    device = TurnEventRecorder()
    await assistant.run_turn(TurnRequest(user="u1", audio=SPEECH), device)
    assert _without_stages(device) == [
        "TurnStarted", "Heard", "Recalled", "PromptBuilt", "FirstToken", "EmotionChosen",
        "Sentence", "Sentence", "ReplyEnded", "Done"]
    assert _stages(device) == [
        "StageStarted:asr", "StageEnded:asr", "StageStarted:retrieve", "StageEnded:retrieve",
        "StageStarted:prompt", "StageEnded:prompt", "StageStarted:tts", "StageStarted:chat",
        "StageEnded:chat", "StageEnded:tts"]


async def test_every_event_carries_the_turn_the_user_and_when_it_happened(
        registry: PluginRegistry) -> None:
    assistant = _assistant(registry)
    device = TurnEventRecorder()
    result = await assistant.run_turn(TurnRequest(user="u1", text="やあ"), device)
    assert {(e.turn_id, e.user) for e in device.events} == {(result.turn_id, "u1")}
    times = [e.at for e in device.events]
    assert times[0] == min(times) and times[-1] == max(times)


async def test_the_events_say_what_was_heard_and_said(registry: PluginRegistry) -> None:
    assistant = _assistant(registry, chat={"reply": "[happy] やあ！元気だよ。"})
    device = TurnEventRecorder()
    result = await assistant.run_turn(TurnRequest(user="u1", audio=SPEECH), device)
    assert [e.transcript for e in device.of(Heard)] == ["こんにちは"]
    assert [e.emotion for e in device.of(EmotionChosen)] == [Emotion.HAPPY]
    sentences = device.of(Sentence)
    assert [s.text for s in sentences] == result.sentences
    assert all(s.audio is not None and s.emotion is Emotion.HAPPY for s in sentences)
    assert device.of(Done)[0].result is result


async def test_a_tool_call_is_an_event_inside_the_chat_before_the_reply(
        registry: PluginRegistry, tmp_path: Path) -> None:
    tool = ToolDouble(ToolDouble.Config.model_validate({"timeout_s": 0.3}))
    tool.attach(ToolHostDouble(tmp_path))
    await tool.start()
    assistant = _assistant(registry, tools=[tool], chat={
        "reply": "[happy] できたよ。", "call_tools": [{"name": "echo", "arguments": {"n": 1}}]})
    device = TurnEventRecorder()
    await assistant.run_turn(TurnRequest(user="u1", text="やって"), device)
    kinds = device.kinds()
    assert kinds.index("StageStarted:chat") < kinds.index("ToolCalled") \
        < kinds.index("Sentence") < kinds.index("StageEnded:chat")
    [call] = device.of(ToolCalled)
    assert (call.name, call.source, call.outcome, call.error) == ("echo", "fake", "ok", None)
    assert call.started_at <= call.at


async def test_a_failing_chat_emits_its_failure_then_a_sad_apology(
        registry: PluginRegistry) -> None:
    assistant = _assistant(registry, chat={"fail_with": "quota exceeded"})
    device = TurnEventRecorder()
    result = await assistant.run_turn(TurnRequest(user="u1", text="やあ"), device)
    kinds = device.kinds()
    assert kinds[kinds.index("StageStarted:chat"):] == [
        "StageStarted:chat", "StageEnded:chat", "Degraded", "EmotionChosen", "Sentence",
        "Sentence", "StageEnded:tts", "ReplyEnded", "Done"]
    assert "quota exceeded" in (device.of(StageEnded)[-2].error or "")
    assert [e.note for e in device.of(Degraded)] == result.degraded
    assert device.of(EmotionChosen)[0].emotion is Emotion.SAD
    assert "".join(s.text for s in device.of(Sentence)) == APOLOGY


async def test_a_failed_synthesis_is_reported_before_its_silent_sentence(
        registry: PluginRegistry) -> None:
    assistant = _assistant(registry, chat={"reply": "[happy] 一つ目。壊れる文。三つ目。"},
                           tts={"fail_on": "壊れる"})
    device = TurnEventRecorder()
    result = await assistant.run_turn(TurnRequest(user="u1", text="やあ"), device)
    spoken = [e for e in device.events if isinstance(e, Degraded | Sentence)]
    assert [(type(e).__name__, getattr(e, "audio", "-") is None) for e in spoken] == [
        ("Sentence", False), ("Degraded", False), ("Sentence", True), ("Sentence", False)]
    assert [e.note for e in device.of(Degraded)] == result.degraded


async def test_a_failing_memory_is_recalled_as_nothing_and_degraded(
        registry: PluginRegistry) -> None:
    assistant = _assistant(registry, memory=MemoryServiceDouble(fail=True))
    device = TurnEventRecorder()
    result = await assistant.run_turn(TurnRequest(user="u1", text="やあ"), device)
    [recalled] = device.of(Recalled)
    assert recalled.memories == () and recalled.degraded == tuple(result.degraded)
    assert device.kinds().index("Recalled") < device.kinds().index("Degraded")


async def test_nothing_heard_ends_the_turn_with_no_exchange(registry: PluginRegistry) -> None:
    assistant = _assistant(registry)
    device = TurnEventRecorder()
    await assistant.run_turn(TurnRequest(user="u1", text="  "), device)
    assert _without_stages(device) == ["TurnStarted", "Heard", "ReplyEnded", "Done"]
    assert device.of(ReplyEnded)[0].note == "nothing heard"
    assert device.of(Done)[0].exchange is None


async def test_an_interrupted_turn_still_ends_with_done(registry: PluginRegistry) -> None:
    assistant = _assistant(registry, chat={"reply": "[happy] 一つ目。二つ目。三つ目。"})
    device = TurnEventRecorder(play_s=0.2)
    task = asyncio.create_task(assistant.run_turn(TurnRequest(user="u1", text="やあ"), device))
    while not device.of(Sentence):
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert device.kinds()[-2:] == ["ReplyEnded", "Done"]
    assert device.of(ReplyEnded)[0].note == "interrupted (barge-in)"
    done = device.of(Done)[0]
    assert done.result.interrupted and done.exchange is not None
    assert done.exchange.assistant_text == "一つ目。"


async def test_the_device_and_every_observer_read_the_same_stream(
        registry: PluginRegistry) -> None:
    observer = TurnEventRecorder()
    assistant = _assistant(registry)
    assistant.observers.append(observer.on_event)
    device = TurnEventRecorder()
    await assistant.run_turn(TurnRequest(user="u1", text="やあ"), device)
    assert observer.events == device.events


async def test_the_trace_is_what_the_events_say(registry: PluginRegistry, tmp_path: Path,
                                                ) -> None:
    tool = ToolDouble(ToolDouble.Config.model_validate({"timeout_s": 0.3}))
    tool.attach(ToolHostDouble(tmp_path))
    await tool.start()
    assistant = _assistant(registry, tools=[tool], chat={
        "reply": "[happy] できたよ。", "call_tools": [{"name": "echo", "arguments": {}}]})
    device = TurnEventRecorder()
    result = await assistant.run_turn(TurnRequest(user="u1", audio=SPEECH,
                                                  device="robot-1"), device)
    replayed = TurnTrace(result.turn_id, "u1")
    for event in device.events:
        replayed.observe(event)
    assert replayed.to_json() == result.trace
    assert list(result.trace["stages"]) == [
        "end_of_speech", "asr", "retrieve", "prompt", "tts", "chat", "chat_first_token",
        "first_sentence_audio", "done"]
    assert [t["name"] for t in result.trace["tools"]] == ["echo"]


async def test_a_trace_builds_its_spans_from_stage_events_and_marks() -> None:
    trace = TurnTrace("t1", "u1")
    t0 = 100.0
    ids = {"turn_id": "t1", "user": "u1"}
    started = datetime(2026, 9, 27, 12, 0, tzinfo=UTC)
    script: list[TurnEvent] = [
        TurnStarted(**ids, at=t0 + 0.010, started_at=started, device="robot-1",
                    end_of_speech_at=t0),
        StageStarted(**ids, at=t0 + 0.020, stage="asr", component="fake"),
        StageEnded(**ids, at=t0 + 0.120, stage="asr", note="3 memory and tool words"),
        Heard(**ids, at=t0 + 0.120, transcript="やあ"),
        StageStarted(**ids, at=t0 + 0.130, stage="chat", component="fake"),
        FirstToken(**ids, at=t0 + 0.300, component="fake"),
        FirstToken(**ids, at=t0 + 0.350, component="fake"),
        ToolCalled(**ids, at=t0 + 0.400, name="echo", source="fake", started_at=t0 + 0.310,
                   outcome="ok"),
        StageEnded(**ids, at=t0 + 0.500, stage="chat", error="boom"),
        ReplyEnded(**ids, at=t0 + 0.600),
    ]
    for event in script:
        trace.observe(event)
    assert trace.to_json() == {
        "turn_id": "t1", "user": "u1", "device": "robot-1",
        "started_at": started.isoformat(),
        "stages": {
            "end_of_speech": {"start_ms": 10.0, "end_ms": 10.0, "component": None,
                              "error": None, "note": None},
            "asr": {"start_ms": 20.0, "end_ms": 120.0, "component": "fake", "error": None,
                    "note": "3 memory and tool words"},
            "chat": {"start_ms": 130.0, "end_ms": 500.0, "component": "fake",
                     "error": "boom", "note": None},
            "chat_first_token": {"start_ms": 300.0, "end_ms": 300.0, "component": "fake",
                                 "error": None, "note": None},
            "done": {"start_ms": 600.0, "end_ms": 600.0, "component": None, "error": None,
                     "note": None}},
        "tools": [{"name": "echo", "source": "fake", "start_ms": 310.0,
                   "duration_ms": 90.0, "outcome": "ok", "error": None}]}


async def test_the_publisher_stamps_events_and_delivers_them_in_order() -> None:
    seen: list[tuple[str, TurnEvent]] = []

    async def first(event: TurnEvent) -> None:
        seen.append(("first", event))

    async def second(event: TurnEvent) -> None:
        seen.append(("second", event))

    events = TurnEvents("t1", "u1", [first])
    events.subscribe(second)
    await events.emit(Heard(transcript="やあ"))
    await events.emit(ReplyEnded())
    assert [(who, type(e).__name__, e.turn_id, e.user) for who, e in seen] == [
        ("first", "Heard", "t1", "u1"), ("second", "Heard", "t1", "u1"),
        ("first", "ReplyEnded", "t1", "u1"), ("second", "ReplyEnded", "t1", "u1")]
