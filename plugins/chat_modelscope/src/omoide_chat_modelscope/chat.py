"""Streaming chat through any OpenAI-compatible API; ModelScope API-Inference by default
(DashScope, vLLM, Ollama and others work by changing ``base_url`` and ``model``).

The SDK's own retries are off (``max_retries=0``): the core template retries 429/5xx
with backoff, and only before the first piece was streamed. Qwen3 "thinking" is turned
off with ``extra_body={"enable_thinking": false}`` (it would delay the first token by
seconds); ``enable_search`` asks ModelScope/DashScope for web search. Rate-limit
headers are logged at debug level (a warning when few calls remain).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, ClassVar

from pydantic import Field

from omoide.api import (
    ChatConfig,
    ChatDelta,
    ChatMessage,
    ChatModel,
    ComponentError,
    ModelNotAvailable,
    Secret,
    ToolCall,
    ToolSpec,
    error_message,
    to_component_error,
)

log = logging.getLogger("omoide.chat.modelscope")

MODELSCOPE_URL = "https://api-inference.modelscope.cn/v1"
QUOTA_HEADER_PREFIXES = ("modelscope-ratelimit", "x-ratelimit", "ratelimit")


class ModelScopeChatConfig(ChatConfig):
    retries: int = Field(2, ge=0, le=10,
                         description="Extra attempts after a 429/5xx before the first piece.")
    base_url: str = Field(MODELSCOPE_URL, description="OpenAI-compatible API base URL.")
    api_key: Secret = Field(None, description="API key, as {$env: MODELSCOPE_API_KEY}.")
    model: str = Field("Qwen/Qwen3-235B-A22B-Instruct-2507", description="Model name at the API.")
    enable_thinking: bool | None = Field(
        False, description="Sent as extra_body.enable_thinking; null sends nothing (servers "
                           "that reject unknown fields).")
    enable_search: bool = Field(False, description="Ask the API for web search "
                                                   "(extra_body.enable_search).")
    json_response_format: bool = Field(
        True, description="For JSON calls (extraction) send response_format=json_object; "
                          "turn off for servers that lack it.")
    connect_timeout_s: float = Field(10.0, gt=0, description="Time to connect, in seconds.")
    extra_body: dict[str, Any] = Field(default_factory=dict,
                                       description="More vendor fields for every request.")
    low_quota_warning: int = Field(50, ge=0, description="Warn when a rate-limit 'remaining' "
                                                         "header falls to this.")


def to_openai_message(message: ChatMessage) -> dict[str, Any]:
    """One :class:`ChatMessage` in the OpenAI wire shape."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_call_id:
        out["tool_call_id"] = message.tool_call_id
    if message.tool_calls:
        out["tool_calls"] = [{"id": c.id, "type": "function",
                              "function": {"name": c.name, "arguments": c.arguments}}
                             for c in message.tool_calls]
    return out


def to_openai_tool(tool: ToolSpec) -> dict[str, Any]:
    return {"type": "function", "function": {"name": tool.name, "description": tool.description,
                                             "parameters": tool.parameters}}


class ModelScopeChat(ChatModel):
    """OpenAI-compatible streaming chat (ModelScope API-Inference by default)."""

    name: ClassVar[str] = "modelscope"
    Config = ModelScopeChatConfig
    config: ModelScopeChatConfig

    def __init__(self, config: ModelScopeChatConfig) -> None:
        super().__init__(config)
        self._client: Any = None
        self.last_quota: dict[str, str] = {}

    async def _start(self) -> None:
        from openai import AsyncOpenAI, Timeout

        key = self.config.api_key.get_secret_value() if self.config.api_key else None
        if not key:
            if self.config.base_url.rstrip("/") == MODELSCOPE_URL:
                raise ModelNotAvailable(
                    "chat modelscope: ModelScope needs an API key",
                    hint="set api_key: {$env: MODELSCOPE_API_KEY} and export MODELSCOPE_API_KEY")
            key = "EMPTY"  # local OpenAI-compatible servers usually take any key
        self._client = AsyncOpenAI(
            base_url=self.config.base_url, api_key=key, max_retries=0,
            timeout=Timeout(self.config.timeout_s, connect=self.config.connect_timeout_s))

    async def _stop(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    def request_body(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec],
                     json_output: bool) -> dict[str, Any]:
        """Keyword arguments of ``chat.completions.create`` for this request."""
        extra: dict[str, Any] = dict(self.config.extra_body)
        if self.config.enable_thinking is not None:
            extra["enable_thinking"] = self.config.enable_thinking
        if self.config.enable_search:
            extra["enable_search"] = True
        kwargs: dict[str, Any] = {"model": self.config.model, "stream": True,
                                  "messages": [to_openai_message(m) for m in messages]}
        if extra:
            kwargs["extra_body"] = extra
        if self.config.temperature is not None:
            kwargs["temperature"] = self.config.temperature
        if self.config.max_tokens is not None:
            kwargs["max_tokens"] = self.config.max_tokens
        if tools:
            kwargs["tools"] = [to_openai_tool(t) for t in tools]
        if json_output and self.config.json_response_format:
            kwargs["response_format"] = {"type": "json_object"}
        return kwargs

    async def _stream(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec],
                      json_output: bool) -> AsyncIterator[ChatDelta]:
        if self._client is None:
            raise ComponentError("chat modelscope: not started")
        what = f"chat {self.name} ({self.config.model})"
        try:
            raw = await self._client.chat.completions.with_raw_response.create(
                **self.request_body(messages, tools, json_output))
            self._note_quota(raw.headers)
            stream = raw.parse()
        except Exception as exc:
            raise to_component_error(exc, what) from exc
        calls: dict[int, dict[str, str]] = {}
        try:
            async for chunk in stream:
                extra = getattr(chunk, "model_extra", None) or {}
                if "errors" in extra:   # ModelScope's error shape inside the stream
                    raise ComponentError(f"{what}: the server reported an error:"
                                         f" {error_message(extra)}", retryable=True)
                for choice in chunk.choices or ():
                    delta = choice.delta
                    if delta is None:
                        continue
                    if delta.content:
                        yield ChatDelta(text=delta.content)
                    for piece in delta.tool_calls or ():
                        slot = calls.setdefault(piece.index,
                                                {"id": "", "name": "", "arguments": ""})
                        if piece.id:
                            slot["id"] = piece.id
                        if piece.function is not None:
                            if piece.function.name:
                                slot["name"] = piece.function.name
                            if piece.function.arguments:
                                slot["arguments"] += piece.function.arguments
        except ComponentError:
            raise
        except Exception as exc:
            raise to_component_error(exc, what) from exc
        finally:
            await stream.close()
        for index in sorted(calls):
            slot = calls[index]
            if not slot["name"]:
                raise ComponentError(f"{what}: a streamed tool call has no name")
            yield ChatDelta(tool_call=ToolCall(slot["id"] or f"call_{index}", slot["name"],
                                               slot["arguments"] or "{}"))

    def _note_quota(self, headers: Mapping[str, str]) -> None:
        quota = {k.lower(): v for k, v in headers.items()
                 if k.lower().startswith(QUOTA_HEADER_PREFIXES)}
        if not quota:
            return
        self.last_quota = quota
        log.debug("chat %s quota: %s", self.name, quota)
        for key, value in quota.items():
            if "remaining" in key and value.strip().isdigit() \
                    and int(value) <= self.config.low_quota_warning:
                log.warning("chat %s: %s = %s (API quota nearly used up)", self.name, key,
                            value)
