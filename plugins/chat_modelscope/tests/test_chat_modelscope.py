"""chat `modelscope` against a real local server speaking the OpenAI chat-completions
streaming protocol the way ModelScope API-Inference does (SSE, `{"errors": ...}`)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import ValidationError

from omoide.config import EnvValue
from omoide.errors import ComponentError, ModelNotAvailable
from omoide.testing import ChatModelContract, PluginPackageContract
from omoide.types import ChatMessage, ToolCall, ToolSpec
from omoide_chat_modelscope.chat import ModelScopeChat, ModelScopeChatConfig

REPLY = ["[happy] ", "はい、", "覚えて", "いますよ。"]


@dataclass
class ChatServerState:
    """What the test server received, and what it should answer next."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    script: list[Any] = field(default_factory=list)   # one step per request; default "text"
    headers: dict[str, str] = field(default_factory=lambda: {
        "modelscope-ratelimit-requests-limit": "2000",
        "modelscope-ratelimit-requests-remaining": "1999"})


def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    body = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
            "model": "Qwen/Qwen3-235B-A22B-Instruct-2507",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"


async def text_events(pieces: list[str], gap_s: float = 0.0) -> AsyncIterator[str]:
    yield chunk({"role": "assistant", "content": ""})
    for i, piece in enumerate(pieces):
        if gap_s and i:
            await asyncio.sleep(gap_s)
        yield chunk({"content": piece})
    yield chunk({}, "stop")
    yield "data: [DONE]\n\n"


async def tool_events() -> AsyncIterator[str]:
    yield chunk({"role": "assistant", "tool_calls": [
        {"index": 0, "id": "call_a", "type": "function",
         "function": {"name": "get_weather", "arguments": ""}}]})
    for part in ['{"city": ', '"箱根"}']:
        yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]})
    yield chunk({"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
                                 "function": {"name": "now", "arguments": "{}"}}]})
    yield chunk({}, "tool_calls")
    yield "data: [DONE]\n\n"


def chat_app(state: ChatServerState) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def completions(request: Request) -> Any:
        body = await request.json()
        state.requests.append({"headers": dict(request.headers), "body": body})
        step = state.script.pop(0) if state.script else "text"
        if isinstance(step, tuple):
            return JSONResponse(status_code=step[0], content=step[1])
        if step == "slow":
            await asyncio.sleep(2.0)
        events: AsyncIterator[str]
        if step == "tools":
            events = tool_events()
        elif step == "malformed":
            events = _once("data: {this is not json\n\n")
        elif step == "errors_in_stream":
            events = _once('data: {"errors": {"message": "Model overloaded"}}\n\n')
        elif step == "stall_after_first":
            events = text_events(REPLY, gap_s=2.0)
        else:
            events = text_events(REPLY)
        return StreamingResponse(events, media_type="text/event-stream", headers=state.headers)

    return app


async def _once(text: str) -> AsyncIterator[str]:
    yield text


@pytest.fixture
def state() -> ChatServerState:
    return ChatServerState()


@pytest.fixture
def base_url(state: ChatServerState, serve_app: Callable[[object], str]) -> str:
    return f"{serve_app(chat_app(state))}/v1"


def config(base_url: str, **options: Any) -> ModelScopeChatConfig:
    return ModelScopeChatConfig.model_validate(
        {"base_url": base_url, "api_key": EnvValue("ms-test", "MODELSCOPE_API_KEY"),
         **options})


@pytest.fixture
async def chat(base_url: str) -> AsyncIterator[ModelScopeChat]:
    comp = ModelScopeChat(config(base_url, retries=0))
    await comp.start()
    yield comp
    await comp.stop()


async def started(cfg: ModelScopeChatConfig) -> ModelScopeChat:
    comp = ModelScopeChat(cfg)
    await comp.start()
    return comp


async def collect(comp: ModelScopeChat, **kw: Any) -> list[Any]:
    return [d async for d in comp.stream([ChatMessage("user", "週末の予定覚えてる?")], **kw)]


class TestModelScopeChatContract(ChatModelContract):
    component_cls = ModelScopeChat

    @pytest.fixture
    def config(self, base_url: str) -> dict[str, Any]:
        return config(base_url).model_dump()


class TestChatModelScopePackage(PluginPackageContract):
    plugin_name = "chat_modelscope"
    expected_components: ClassVar[set[tuple[str, str]] | None] = {("chat", "modelscope")}


async def test_streams_the_reply_in_pieces(chat: ModelScopeChat) -> None:
    deltas = await collect(chat)
    assert [d.text for d in deltas] == REPLY


async def test_request_carries_key_model_stream_and_thinking_off(
        chat: ModelScopeChat, state: ChatServerState) -> None:
    await collect(chat)
    request = state.requests[0]
    assert request["headers"]["authorization"] == "Bearer ms-test"
    body = request["body"]
    assert body["model"] == "Qwen/Qwen3-235B-A22B-Instruct-2507"
    assert body["stream"] is True and body["enable_thinking"] is False
    assert body["messages"] == [{"role": "user", "content": "週末の予定覚えてる?"}]
    assert "enable_search" not in body and "response_format" not in body


async def test_web_search_flag_is_sent_when_enabled(base_url: str,
                                                    state: ChatServerState) -> None:
    comp = await started(config(base_url, enable_search=True, temperature=0.3, max_tokens=99))
    await collect(comp)
    await comp.stop()
    body = state.requests[0]["body"]
    assert body["enable_search"] is True
    assert body["temperature"] == 0.3 and body["max_tokens"] == 99


async def test_json_output_asks_for_a_json_object(chat: ModelScopeChat,
                                                  state: ChatServerState) -> None:
    await chat.complete([ChatMessage("user", "facts?")], json_output=True)
    assert state.requests[0]["body"]["response_format"] == {"type": "json_object"}


async def test_json_response_format_can_be_turned_off(base_url: str,
                                                      state: ChatServerState) -> None:
    comp = await started(config(base_url, json_response_format=False, enable_thinking=None))
    await comp.complete([ChatMessage("user", "facts?")], json_output=True)
    await comp.stop()
    assert "response_format" not in state.requests[0]["body"]
    assert "enable_thinking" not in state.requests[0]["body"]


async def test_tools_are_offered_and_streamed_calls_assembled(
        chat: ModelScopeChat, state: ChatServerState) -> None:
    state.script = ["tools"]
    tool = ToolSpec("get_weather", "Weather of a city",
                    {"type": "object", "properties": {"city": {"type": "string"}}})
    deltas = await collect(chat, tools=[tool])
    assert state.requests[0]["body"]["tools"] == [
        {"type": "function", "function": {"name": "get_weather",
                                          "description": "Weather of a city",
                                          "parameters": tool.parameters}}]
    assert [d.tool_call for d in deltas if d.tool_call] == [
        ToolCall("call_a", "get_weather", '{"city": "箱根"}'), ToolCall("call_b", "now", "{}")]


async def test_tool_results_are_sent_back_in_openai_shape(chat: ModelScopeChat,
                                                          state: ChatServerState) -> None:
    call = ToolCall("call_a", "get_weather", '{"city": "箱根"}')
    await chat.complete([ChatMessage("user", "天気は?"),
                         ChatMessage("assistant", "", tool_calls=(call,)),
                         ChatMessage("tool", "晴れ", tool_call_id="call_a")])
    messages = state.requests[0]["body"]["messages"]
    assert messages[1]["tool_calls"] == [{"id": "call_a", "type": "function", "function": {
        "name": "get_weather", "arguments": '{"city": "箱根"}'}}]
    assert messages[2] == {"role": "tool", "content": "晴れ", "tool_call_id": "call_a"}


async def test_429_with_errors_body_is_retried_then_reported(
        base_url: str, state: ChatServerState) -> None:
    quota = (429, {"errors": {"message": "Request limit exceeded for today"}})
    state.script = [quota, quota]
    comp = await started(config(base_url, retries=1))
    with pytest.raises(ComponentError) as info:
        await collect(comp)
    await comp.stop()
    assert info.value.retryable and "Request limit exceeded for today" in str(info.value)
    assert len(state.requests) == 2    # the core retried once; the SDK not at all


async def test_a_500_then_success_streams_normally(base_url: str,
                                                   state: ChatServerState) -> None:
    state.script = [(500, {"errors": {"message": "upstream error"}})]
    comp = await started(config(base_url, retries=1))
    deltas = await collect(comp)
    await comp.stop()
    assert "".join(d.text for d in deltas) == "".join(REPLY) and len(state.requests) == 2


async def test_401_is_not_retried_and_blames_the_key(base_url: str,
                                                     state: ChatServerState) -> None:
    state.script = [(401, {"errors": {"message": "Invalid API key"}})]
    comp = await started(config(base_url, retries=3))
    with pytest.raises(ComponentError) as info:
        await collect(comp)
    await comp.stop()
    assert not info.value.retryable and "API key" in str(info.value)
    assert len(state.requests) == 1


async def test_no_first_piece_in_time_is_a_timeout(base_url: str,
                                                   state: ChatServerState) -> None:
    state.script = ["slow"]
    comp = await started(config(base_url, retries=0, first_token_timeout_s=0.3))
    with pytest.raises(ComponentError) as info:
        await collect(comp)
    await comp.stop()
    assert info.value.retryable and "no reply within" in str(info.value)


async def test_a_stall_after_the_first_piece_is_not_retried(base_url: str,
                                                            state: ChatServerState) -> None:
    state.script = ["stall_after_first"]
    comp = await started(config(base_url, retries=2, timeout_s=0.5))
    got: list[str] = []
    with pytest.raises(ComponentError, match=r"longer than|in time"):
        async for d in comp.stream([ChatMessage("user", "hi")]):
            got.append(d.text)
    await comp.stop()
    assert got == REPLY[:1]
    assert len(state.requests) == 1     # never spoken twice


async def test_malformed_sse_is_a_clear_error(chat: ModelScopeChat,
                                              state: ChatServerState) -> None:
    state.script = ["malformed"]
    with pytest.raises(ComponentError, match="malformed stream"):
        await collect(chat)


async def test_an_errors_event_inside_the_stream_is_reported(
        chat: ModelScopeChat, state: ChatServerState) -> None:
    state.script = ["errors_in_stream"]
    with pytest.raises(ComponentError, match="Model overloaded"):
        await collect(chat)


async def test_an_unreachable_server_is_retryable() -> None:
    comp = await started(config("http://127.0.0.1:9/v1", retries=0))
    with pytest.raises(ComponentError) as info:
        await collect(comp)
    await comp.stop()
    assert info.value.retryable


async def test_quota_headers_are_logged_and_kept(chat: ModelScopeChat,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="omoide.chat.modelscope"):
        await collect(chat)
    assert chat.last_quota["modelscope-ratelimit-requests-remaining"] == "1999"
    assert "modelscope-ratelimit-requests-remaining" in caplog.text


async def test_low_quota_is_a_warning(base_url: str, state: ChatServerState,
                                      caplog: pytest.LogCaptureFixture) -> None:
    state.headers = {"x-ratelimit-remaining-requests": "3"}
    comp = await started(config(base_url))
    with caplog.at_level(logging.WARNING, logger="omoide.chat.modelscope"):
        await collect(comp)
    await comp.stop()
    assert "nearly used up" in caplog.text


async def test_modelscope_without_a_key_names_the_env_var() -> None:
    with pytest.raises(ModelNotAvailable, match="MODELSCOPE_API_KEY"):
        await ModelScopeChat(ModelScopeChatConfig()).start()


def test_a_key_written_in_the_file_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"\$env"):
        ModelScopeChatConfig.model_validate({"api_key": "ms-literal"})
