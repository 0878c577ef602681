"""What OpenAI-compatible clients send to omoide and get back (``/v1/chat/completions``,
``/v1/models``), as typed shapes and builders; the route is :mod:`.openai_routes`.

Requests are read leniently where clients differ (sampling options such as
``temperature`` are accepted and left to the configured model; content may be a string
or a list of text parts) and strictly where omoide depends on them (roles, tool calls,
the new message). :func:`conversation_of` turns the message list into the turn's
:class:`~omoide.pipeline.turn.ClientConversation` and the new user message, or raises
:class:`OpenAIRefusal`. Every refusal, here and in the request guard, has OpenAI's shape
``{"error": {"message", "type", "code", "param"}}`` (:func:`error_body`).

Responses are OpenAI's (``chat.completion`` and ``chat.completion.chunk``) plus one
extension field, ``omoide``: the turn id, the person, the memories and profile facts
the prompt carried, and what was degraded. Clients that do not know it ignore it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from omoide.memory.control.json_shapes import profile_fact_json
from omoide.pipeline.turn import ClientConversation, TurnResult
from omoide.text_controls import find_controls
from omoide.types import ChatMessage, RetrievedMemory, ToolCall, ToolSpec

OPENAI_PATHS = frozenset({"/v1/chat/completions", "/v1/models"})
MODEL_PATH_PREFIX = "/v1/models/"
"""``GET /v1/models/{model}``: one configured chat model."""


def is_openai_path(path: str) -> bool:
    """Whether ``path`` is one of the OpenAI-compatible routes (answered in their shape)."""
    return path in OPENAI_PATHS or path.startswith(MODEL_PATH_PREFIX)
"""Routes whose refusals (the guard's too) are OpenAI-shaped."""

MAX_NEW_MESSAGE_CHARS = 4000
"""The new user message is journaled: the same bound as a typed turn's text."""

_ERROR_KINDS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "invalid_request"),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_error", "permission_denied"),
    404: ("invalid_request_error", "not_found"),
    413: ("invalid_request_error", "request_too_large"),
    415: ("invalid_request_error", "unsupported_media_type"),
    421: ("invalid_request_error", "misdirected_request"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
}


def error_body(status: int, message: str, code: str | None = None,
               param: str | None = None) -> dict[str, Any]:
    """``{"error": {"message", "type", "code", "param"}}`` for an answer of ``status``."""
    kind, default_code = _ERROR_KINDS.get(status, ("server_error", "server_error"))
    return {"error": {"message": message, "type": kind, "code": code or default_code,
                      "param": param}}


class OpenAIRefusal(Exception):
    """A request refused with an OpenAI-shaped error (see :func:`error_body`)."""

    def __init__(self, status: int, message: str, code: str | None = None,
                 param: str | None = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = error_body(status, message, code, param)
        self.headers = headers or {}


# -- requests ---------------------------------------------------------------------------
class ContentPart(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str
    text: str | None = None


class FunctionCallIn(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str = Field(min_length=1, max_length=200)
    arguments: str = ""


class ToolCallIn(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str = Field(min_length=1, max_length=200)
    type: Literal["function"] = "function"
    function: FunctionCallIn


class MessageIn(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[ContentPart] | None = None
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: str | None = None


class FunctionSpecIn(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object",
                                                                "properties": {}})


class ToolSpecIn(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: Literal["function"] = "function"
    function: FunctionSpecIn


class ChatCompletionRequest(BaseModel):
    """The fields omoide reads; others (``temperature``, ``max_tokens``...) are
    accepted and left to the configured chat model."""

    model_config = ConfigDict(extra="ignore")
    model: str = ""
    messages: list[MessageIn] = Field(min_length=1)
    stream: bool = False
    tools: list[ToolSpecIn] = Field(default_factory=list)
    user: str | None = None


def parse_request(raw: bytes) -> ChatCompletionRequest:
    """The request body, or a 400 naming what is wrong (malformed JSON included)."""
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise OpenAIRefusal(400, f"the body is not valid JSON ({exc})", "invalid_json") \
            from None
    try:
        return ChatCompletionRequest.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise OpenAIRefusal(400, f"{where}: {first['msg']}", "invalid_value",
                            where or None) from None


def _text_of(message: MessageIn, index: int) -> str:
    """A message's text: a string, or its text parts joined. Any other part (an image,
    audio, a file) is refused: omoide's models read text only."""
    content = message.content
    if content is None or isinstance(content, str):
        return content or ""
    texts = []
    for part in content:
        if part.type != "text":
            raise OpenAIRefusal(
                400, f"messages[{index}] has a {part.type!r} part: omoide's chat models read "
                     "text only; images, audio and files are not supported",
                "unsupported_content", f"messages[{index}].content")
        texts.append(part.text or "")
    return "".join(texts)


def _chat_message(message: MessageIn, index: int) -> ChatMessage:
    text = _text_of(message, index)
    if message.role == "tool":
        return ChatMessage("tool", text, tool_call_id=message.tool_call_id)
    calls = tuple(ToolCall(c.id, c.function.name, c.function.arguments)
                  for c in message.tool_calls or ())
    return ChatMessage(message.role, text, tool_calls=calls)  # type: ignore[arg-type]


def _check_tool_results(messages: Sequence[MessageIn]) -> None:
    """Every tool result answers a call an earlier assistant message made (400 if not)."""
    called: set[str] = set()
    for i, m in enumerate(messages):
        if m.role == "assistant":
            called.update(c.id for c in m.tool_calls or ())
        elif m.role == "tool" and m.tool_call_id not in called:
            raise OpenAIRefusal(
                400, f"messages[{i}] is a tool result for {m.tool_call_id!r}, but no earlier "
                     "assistant message called a tool with that id",
                "tool_result_without_call", f"messages[{i}].tool_call_id")


def conversation_of(body: ChatCompletionRequest) -> tuple[str, ClientConversation]:
    """The new user message (the last one) and the conversation around it.

    System and developer messages are the client's instructions (joined in order);
    everything before the new message is history; after it may come only this turn's
    tool calls and their results."""
    messages = body.messages
    _check_tool_results(messages)
    users = [i for i, m in enumerate(messages) if m.role == "user"]
    if not users:
        raise OpenAIRefusal(400, "messages has no user message", "no_user_message",
                            "messages")
    last = users[-1]
    if messages[-1].role == "assistant":
        raise OpenAIRefusal(400, "the last message must be the user's (or the results of "
                                 "the tools the assistant called)", "invalid_last_message",
                            f"messages[{len(messages) - 1}]")
    text = _text_of(messages[last], last).strip()
    _check_new_message(text, last)
    system = [_text_of(m, i) for i, m in enumerate(messages)
              if m.role in ("system", "developer")]
    before = tuple(_chat_message(m, i) for i, m in enumerate(messages[:last])
                   if m.role not in ("system", "developer"))
    after = tuple(_chat_message(m, last + 1 + i) for i, m in enumerate(messages[last + 1:])
                  if m.role not in ("system", "developer"))
    tools = tuple(ToolSpec(t.function.name, t.function.description, t.function.parameters)
                  for t in body.tools)
    return text, ClientConversation("\n\n".join(s for s in system if s.strip()),
                                    before, after, tools)


def _check_new_message(text: str, index: int) -> None:
    where = f"messages[{index}].content"
    if not text:
        raise OpenAIRefusal(400, "the user message is empty", "invalid_value", where)
    if len(text) > MAX_NEW_MESSAGE_CHARS:
        raise OpenAIRefusal(400, f"the user message is longer than {MAX_NEW_MESSAGE_CHARS} "
                                 "characters", "invalid_value", where)
    if find_controls(text, line_breaks=True):
        raise OpenAIRefusal(400, "the user message contains control or format characters",
                            "invalid_value", where)


# -- responses --------------------------------------------------------------------------
def _memory_json(m: RetrievedMemory) -> dict[str, Any]:
    mem = m.memory
    return {"id": mem.id, "text": mem.text, "kind": mem.kind, "score": round(m.score, 4),
            "created_at": mem.created_at.isoformat(),
            "event_dates": [d.isoformat() for d in mem.event_dates]}


def omoide_extension(result: TurnResult) -> dict[str, Any]:
    """The ``omoide`` field: what memory the reply used (ignored by plain clients)."""
    return {"turn_id": result.turn_id, "user": result.user,
            "memories": [_memory_json(m) for m in result.memories],
            "profile": [profile_fact_json(f) for f in result.profile],
            "degraded": list(result.degraded)}


def _tool_calls_json(calls: Sequence[ToolCall], *, indexed: bool) -> list[dict[str, Any]]:
    return [{**({"index": i} if indexed else {}), "id": c.id, "type": "function",
             "function": {"name": c.name, "arguments": c.arguments}}
            for i, c in enumerate(calls)]


def finish_reason(result: TurnResult) -> str:
    return "tool_calls" if result.client_tool_calls else "stop"


def completion_json(result: TurnResult, model: str, created: int) -> dict[str, Any]:
    """A whole ``chat.completion`` for a turn's result."""
    message: dict[str, Any] = {"role": "assistant", "content": result.reply or None}
    if result.client_tool_calls:
        message["tool_calls"] = _tool_calls_json(result.client_tool_calls, indexed=False)
    return {"id": f"chatcmpl-{result.turn_id}", "object": "chat.completion",
            "created": created, "model": model,
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": finish_reason(result)}],
            "omoide": omoide_extension(result)}


def chunk_json(completion_id: str, model: str, created: int, delta: dict[str, Any],
               finish: str | None = None) -> dict[str, Any]:
    """One ``chat.completion.chunk``."""
    return {"id": completion_id, "object": "chat.completion.chunk", "created": created,
            "model": model, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                         "finish_reason": finish}]}


def closing_chunks(completion_id: str, model: str, created: int,
                   result: TurnResult) -> list[dict[str, Any]]:
    """The stream's last chunks: the client's tool calls (if any), then the finish
    reason with the ``omoide`` field."""
    chunks = []
    if result.client_tool_calls:
        chunks.append(chunk_json(completion_id, model, created, {
            "tool_calls": _tool_calls_json(result.client_tool_calls, indexed=True)}))
    last = chunk_json(completion_id, model, created, {}, finish_reason(result))
    last["omoide"] = omoide_extension(result)
    chunks.append(last)
    return chunks


def sse(data: dict[str, Any]) -> bytes:
    """One server-sent event carrying ``data`` as JSON."""
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


SSE_DONE = b"data: [DONE]\n\n"


def model_json(name: str, created: int) -> dict[str, Any]:
    """One model object, as ``GET /v1/models/{model}`` answers it."""
    return {"id": name, "object": "model", "created": created, "owned_by": "omoide"}


def models_json(names: Sequence[str], created: int) -> dict[str, Any]:
    """``GET /v1/models``: the configured chat models by name."""
    return {"object": "list", "data": [model_json(name, created) for name in names]}
