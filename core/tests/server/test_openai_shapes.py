"""How an OpenAI-compatible request becomes a turn (:mod:`omoide.server.openai_shapes`)
and how the chat client's conversation reaches the model (:mod:`omoide.pipeline.prompt`).
The whole endpoint, over HTTP with the openai SDK, is tested in
``tests/test_openai_endpoint.py``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from omoide.components.prompt import PromptSection
from omoide.config import parse_envelope
from omoide.errors import ConfigError
from omoide.pipeline.prompt import client_messages, with_client_system
from omoide.server.openai_shapes import OpenAIRefusal, conversation_of, parse_request
from omoide.types import ChatMessage, ToolCall


def request(*messages: dict[str, Any], **extra: Any) -> Any:
    return parse_request(json.dumps({"model": "omoide", "messages": list(messages),
                                     **extra}).encode())


def refusal(*messages: dict[str, Any]) -> OpenAIRefusal:
    with pytest.raises(OpenAIRefusal) as caught:
        conversation_of(request(*messages))
    return caught.value


def test_the_last_user_message_is_new_and_the_earlier_ones_are_history() -> None:
    text, conversation = conversation_of(request(
        {"role": "system", "content": "あなたは家族のアシスタントです。"},
        {"role": "user", "content": "おはよう"},
        {"role": "assistant", "content": "おはよう！"},
        {"role": "developer", "content": "短く答えてください。"},
        {"role": "user", "content": [{"type": "text", "text": "今日の"},
                                     {"type": "text", "text": "予定は？"}]}))
    assert text == "今日の予定は？"
    assert conversation.system == "あなたは家族のアシスタントです。\n\n短く答えてください。"
    assert conversation.before == (ChatMessage("user", "おはよう"),
                                   ChatMessage("assistant", "おはよう！"))
    assert conversation.after == ()


def test_tool_calls_and_results_after_the_new_message_belong_to_this_turn() -> None:
    call = {"id": "c1", "type": "function",
            "function": {"name": "HassTurnOn", "arguments": '{"name": "電気"}'}}
    text, conversation = conversation_of(request(
        {"role": "user", "content": "電気つけて"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        tools=[{"type": "function", "function": {"name": "HassTurnOn",
                                                 "parameters": {"type": "object"}}}]))
    assert text == "電気つけて"
    assert conversation.after == (
        ChatMessage("assistant", "", tool_calls=(ToolCall("c1", "HassTurnOn",
                                                          '{"name": "電気"}'),)),
        ChatMessage("tool", "ok", tool_call_id="c1"))
    assert [t.name for t in conversation.tools] == ["HassTurnOn"]


def test_a_conversation_ending_with_the_assistant_or_without_a_user_is_refused() -> None:
    assert refusal({"role": "user", "content": "やあ"},
                   {"role": "assistant", "content": "こんにちは"}).status == 400
    assert refusal({"role": "system", "content": "..."}).body["error"]["code"] == \
        "no_user_message"


def test_a_blank_or_control_character_message_is_refused() -> None:
    assert refusal({"role": "user", "content": "   "}).status == 400
    assert refusal({"role": "user", "content": "a\x1b[2Jb"}).body["error"]["param"] == \
        "messages[0].content"


def test_a_tool_result_answering_a_later_call_is_no_answer() -> None:
    error = refusal({"role": "user", "content": "電気つけて"},
                    {"role": "tool", "tool_call_id": "c1", "content": "ok"},
                    {"role": "assistant", "content": None, "tool_calls": [
                        {"id": "c1", "type": "function",
                         "function": {"name": "x", "arguments": "{}"}}]}).body["error"]
    assert error["code"] == "tool_result_without_call"


def test_a_wrong_shape_names_the_field() -> None:
    with pytest.raises(OpenAIRefusal) as caught:
        parse_request(b'{"messages": [{"role": "wizard", "content": "x"}]}')
    assert caught.value.body["error"]["param"] == "messages.0.role"


PERSONA, FACES = PromptSection("persona", "私はかな", 0), PromptSection("emotion", "タグ", 10)
DATES, MEMORY = PromptSection("dates", "今日は", 20), PromptSection("memory", "記憶", 50)


def test_the_client_system_prompt_takes_the_persona_s_place_and_faces_go() -> None:
    _, conversation = conversation_of(request({"role": "system", "content": "HAです"},
                                              {"role": "user", "content": "やあ"}))
    sections = with_client_system([PERSONA, FACES, DATES, MEMORY], conversation)
    assert [(s.name, s.text) for s in sections] == [
        ("client", "HAです"), ("dates", "今日は"), ("memory", "記憶")]


def test_without_a_client_system_prompt_the_persona_stays_but_not_the_faces() -> None:
    text, conversation = conversation_of(request({"role": "user", "content": "やあ"}))
    sections = with_client_system([PERSONA, FACES, DATES], conversation)
    assert [s.name for s in sections] == ["persona", "dates"]
    assert client_messages("SYS", conversation, text) == [ChatMessage("system", "SYS"),
                                                          ChatMessage("user", "やあ")]


def test_omoide_is_the_name_of_the_default_chat_model_and_no_other() -> None:
    with pytest.raises(ConfigError, match="chat_models"):
        parse_envelope({"asr": {"use": "x"}, "embed": {"use": "x"}, "store": {"use": "x"},
                        "chat": {"use": "x"}, "tts": {"use": "x"},
                        "chat_models": {"omoide": {"use": "x"}}})
