"""A confirmation asked of an identified voice must be answered by that voice (issue 28,
part 5): another voice's yes runs nothing, and another voice speaking on the robot
mid-confirmation closes the question."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from omoide.components.speaker import Identification, SpeakerReason
from omoide.config import AssistantSettings, ToolCallSettings
from omoide.pipeline import sections
from omoide.pipeline.assistant import Assistant
from omoide.pipeline.tools import ToolRunner
from omoide.pipeline.turn import NullSink, TurnRequest, TurnResult
from omoide.plugins import PluginRegistry
from omoide.testing.doubles import FakeChat, MemoryServiceDouble, ToolDouble, ToolHostDouble
from omoide.voices import TurnSpeaker

NOW = datetime(2026, 11, 30, 3, 0, tzinfo=UTC)
ROBOT = "robot-1"


async def _assistant(tmp_path: Path) -> tuple[Assistant, ToolDouble]:
    tool = ToolDouble(ToolDouble.Config.model_validate({"timeout_s": 0.3}))
    tool.attach(ToolHostDouble(tmp_path))
    await tool.start()
    registry = PluginRegistry()
    registry.pm.register(sections)
    assistant = Assistant(settings=AssistantSettings(), asr=None, chat=_chat(("switch", {
        "to": "on"})), tts=None, memory=MemoryServiceDouble(), hooks=registry.pm,
        tools=ToolRunner([tool], ToolCallSettings(), "Asia/Tokyo"))
    return assistant, tool


def _chat(*calls: tuple[str, Any]) -> FakeChat:
    return FakeChat(FakeChat.Config(reply="[happy] うん。", call_tools=[
        {"name": name, "arguments": args} for name, args in calls]))


def heard(voice: str | None, person: str | None) -> TurnSpeaker:
    reason = SpeakerReason.MATCHED if voice else SpeakerReason.NO_MATCH
    return TurnSpeaker(person, voice, Identification(voice, 0.9 if voice else 0.5, 0.3,
                                                     reason))


async def _turn(assistant: Assistant, user: str, text: str,
                speaker: TurnSpeaker | None) -> TurnResult:
    return await assistant.run_turn(TurnRequest(user=user, text=text, speak=False, now=NOW,
                                                device=ROBOT, speaker=speaker), NullSink())


def _tool_results(chat: Any) -> list[Any]:
    return [json.loads(m.content) for m in chat.requests[-1] if m.role == "tool"]


async def test_the_voice_that_was_asked_confirms(tmp_path: Path) -> None:
    assistant, tool = await _assistant(tmp_path)
    await _turn(assistant, "alice", "電気つけて", heard("alice", "alice"))
    assistant.chat = _chat()
    result = await _turn(assistant, "alice", "うん、お願い", heard("alice", "alice"))
    assert tool.switched == [{"to": "on"}]
    assert result.trace["tools"][0]["outcome"] == "confirmed"


async def test_an_unknown_voice_answering_for_the_default_person_cancels(
        tmp_path: Path) -> None:
    """Alice is the household's default person: an unrecognised voice's turn is hers,
    but its yes is not her yes."""
    assistant, tool = await _assistant(tmp_path)
    await _turn(assistant, "alice", "電気つけて", heard("alice", "alice"))
    assistant.chat = chat = _chat()
    result = await _turn(assistant, "alice", "うん、お願い", heard(None, "alice"))
    assert tool.switched == []
    assert _tool_results(chat)[0]["status"] == "cancelled"
    [call] = result.trace["tools"]
    assert call["outcome"] == "cancelled" and "another voice" in call["error"]
    assert assistant.tools.pending("alice") is None


async def test_another_members_voice_mid_confirmation_closes_the_question(
        tmp_path: Path) -> None:
    assistant, tool = await _assistant(tmp_path)
    await _turn(assistant, "alice", "電気つけて", heard("alice", "alice"))
    assistant.chat = _chat()
    await _turn(assistant, "bob", "今日の天気は？", heard("bob", "bob"))
    assert assistant.tools.pending("alice") is None
    await _turn(assistant, "alice", "うん、お願い", heard("alice", "alice"))
    assert tool.switched == []


async def test_a_question_asked_without_identification_is_answered_as_before(
        tmp_path: Path) -> None:
    assistant, tool = await _assistant(tmp_path)
    await _turn(assistant, "alice", "電気つけて", None)
    assistant.chat = _chat()
    await _turn(assistant, "alice", "うん", None)
    assert tool.switched == [{"to": "on"}]
