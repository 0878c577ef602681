"""The stand-in chat calls the skills' tools for a few Japanese phrases, offline."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from omoide.types import ChatMessage, ToolCall, ToolSpec
from omoide_standins.chat import StandinChat, StandinChatConfig
from omoide_standins.tool_rules import (
    alarm_arguments,
    kanji_number,
    reply_after_tool,
    timer_arguments,
    tool_call_for,
)

SKILLS = ["current_time", "set_timer", "set_alarm", "list_timers", "cancel_timer", "remember",
          "forget_memory", "what_you_know_about_me", "weather", "ha_list_entities",
          "ha_call_service"]
OFFERED = [ToolSpec(n, n, {"type": "object"}) for n in SKILLS]


def no_facts(text: str) -> list[str]:
    return []


def _call(said: str, *, history: tuple[str, ...] = (), tools: list[ToolSpec] = OFFERED,
          facts: Any = no_facts) -> ToolCall | None:
    messages = [ChatMessage("system", "あなたは「かな」です。")]
    for line in history:
        messages += [ChatMessage("user", line), ChatMessage("assistant", "[happy] うん。")]
    messages.append(ChatMessage("user", said))
    return tool_call_for(messages, tools, facts)


def _args(call: ToolCall | None) -> dict[str, Any]:
    assert call is not None
    return json.loads(call.arguments)  # type: ignore[no-any-return]


@pytest.mark.parametrize(("said", "name", "arguments"), [
    ("3分タイマー", "set_timer", {"minutes": 3}),
    ("三分のタイマーお願い", "set_timer", {"minutes": 3}),
    ("1時間半のタイマーをかけて", "set_timer", {"hours": 1.5}),
    ("タイマー止めて", "cancel_timer", {"all": True}),
    ("タイマーある？", "list_timers", {}),
    ("明日7時に起こして", "set_alarm", {"time": "07:00", "days_from_today": 1}),
    ("午後3時半にアラーム", "set_alarm", {"time": "15:30"}),
    ("明日の天気は？", "weather", {"day": "tomorrow"}),
    ("今日傘いるかな", "weather", {"day": "today"}),
    ("今何時？", "current_time", {}),
    ("箱根のことは忘れて", "forget_memory", {"about": "箱根"}),
    ("私について何を覚えてる?", "what_you_know_about_me", {}),
    ("リビングの電気つけて", "ha_list_entities", {"domain": "light"}),
])
def test_phrases_call_their_tool(said: str, name: str, arguments: dict[str, Any]) -> None:
    call = _call(said)
    assert call is not None and call.name == name
    assert _args(call) == arguments


def test_a_tool_that_is_not_offered_is_not_called() -> None:
    assert _call("3分タイマー", tools=[]) is None
    assert _call("3分タイマー", tools=[ToolSpec("weather", "", {})]) is None


def test_small_talk_calls_nothing() -> None:
    assert _call("最近ギターの練習をしてるんだ") is None
    assert _call("忘れないでね") is None


def test_remember_that_stores_what_was_said_before() -> None:
    call = _call("それは覚えておいて", history=("来週の土曜日に箱根に行くんだ",),
                 facts=lambda s: ["あなたは来週の土曜日に箱根に行く予定だ。"] if "箱根" in s
                 else [])
    assert call is not None and call.name == "remember"
    assert _args(call) == {"fact": "あなたは来週の土曜日に箱根に行く予定だ。"}


def test_remember_with_the_fact_in_the_same_sentence() -> None:
    call = _call("私の誕生日は5月3日だって覚えておいて",
                 facts=lambda s: [f"あなたの{s.removeprefix('私の')}。"])
    assert _args(call) == {"fact": "あなたの誕生日は5月3日だ。"}


def test_after_listing_lights_the_named_one_is_switched() -> None:
    messages = [ChatMessage("user", "寝室の電気消して"),
                ChatMessage("assistant", "", tool_calls=(
                    ToolCall("c1", "ha_list_entities", '{"domain": "light"}'),)),
                ChatMessage("tool", json.dumps({"entities": [
                    {"entity_id": "light.living", "name": "リビングの電気"},
                    {"entity_id": "light.bedroom", "name": "寝室の電気"}]},
                    ensure_ascii=False), tool_call_id="c1")]
    call = tool_call_for(messages, OFFERED, no_facts)
    assert call is not None and call.name == "ha_call_service"
    assert _args(call) == {"domain": "light", "service": "turn_off",
                           "entity_id": "light.bedroom"}


@pytest.mark.parametrize(("result", "said"), [
    ({"message": "3分のタイマーをセットしたよ。"}, "[happy] 3分のタイマーをセットしたよ。"),
    ({"status": "needs_confirmation", "question": "「箱根」を忘れていい？"},
     "[thinking] 「箱根」を忘れていい？"),
    ({"error": "7時00分はもう過ぎているから、セットできないよ。"},
     "[sad] 7時00分はもう過ぎているから、セットできないよ。"),
    ({"error": "RuntimeError: boom"},
     "[sad] ごめんね、うまくいかなかったみたい。もう一度言ってくれる？"),
])
def test_the_answer_after_a_tool_is_its_message(result: dict[str, Any], said: str) -> None:
    messages = [ChatMessage("tool", json.dumps(result, ensure_ascii=False), tool_call_id="x")]
    assert reply_after_tool(messages) == said


def test_numbers_in_kanji_are_read() -> None:
    assert [kanji_number(t) for t in ("三", "十五", "二十", "百二十", "12")] == [
        3, 15, 20, 120, 12]
    assert timer_arguments("30秒") == {"seconds": 30}
    assert alarm_arguments("夜9時") == {"time": "21:00"}


@pytest.fixture
async def chat() -> AsyncIterator[StandinChat]:
    model = StandinChat(StandinChatConfig(entities=False))
    await model.start()
    yield model
    await model.stop()


async def test_the_stand_in_streams_a_tool_call_then_speaks_the_result(
        chat: StandinChat) -> None:
    first = [d async for d in chat.stream([ChatMessage("user", "3分タイマー")], tools=OFFERED)]
    [call] = [d.tool_call for d in first if d.tool_call is not None]
    assert call.name == "set_timer" and not any(d.text for d in first)
    answer = await chat.complete([
        ChatMessage("user", "3分タイマー"),
        ChatMessage("assistant", "", tool_calls=(call,)),
        ChatMessage("tool", '{"message": "3分のタイマーをセットしたよ。"}',
                    tool_call_id=call.id)])
    assert answer == "[happy] 3分のタイマーをセットしたよ。"


@pytest.mark.parametrize("said", ["10秒タイマー", "箱根のことは忘れて", "それは覚えておいて",
                                  "明日7時に起こして", "リビングの電気つけて"])
def test_requests_to_the_assistant_are_not_extracted_as_facts(said: str) -> None:
    from datetime import datetime

    from omoide_standins.extraction import Utterance, extract_facts
    assert extract_facts([Utterance(datetime(2026, 11, 30, 20, 0), said)]) == []
