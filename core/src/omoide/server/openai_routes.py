"""An OpenAI-compatible endpoint that remembers: ``POST /v1/chat/completions``,
``GET /v1/models`` and ``GET /v1/models/{model}``, so Home Assistant, Open WebUI and any
OpenAI client get omoide's memory.

Each request is one turn of omoide's pipeline (:class:`omoide.pipeline.assistant.Assistant`),
as a robot's or ``POST /v1/turns``'s: the person's recall and profile go into the prompt,
the chosen chat model answers (omoide's tools and the client's), the new exchange is
journaled and later extracted. What differs:

- **Who.** A person's token (``Authorization: Bearer``, the API key) speaks as that
  person, whatever ``user`` says (OpenAI's ``user`` is the client's label of its end
  user: Home Assistant sends its conversation id); the admin token must name a person
  omoide knows in ``user``. Anything else is refused with an OpenAI-shaped error.
- **History.** The client sends the whole conversation each time. The messages before
  the last user message are the session's history (sent to the model, never journaled
  again); only the new message and its reply are journaled. omoide's own short-term
  history is neither read nor extended.
- **System prompt.** The client's system (and developer) messages replace omoide's
  persona; omoide's date, profile and memory blocks follow them in the one system
  message the model gets. Without a client system prompt, omoide's persona is used.
  The face-tag instructions are left out (a tag the model still writes is removed).
- **Tools.** The client's ``tools`` are offered beside omoide's configured ones. When
  the model calls one of the client's, the reply ends there with ``finish_reason:
  tool_calls`` for the client to run; its next request carries the results, and the
  exchange (the user message and the final reply) is journaled then.
- **Models.** ``model`` picks a configured chat model by name (``chat:`` is ``omoide``,
  ``chat_models:`` adds more); an unknown name is answered by the default with an
  ``X-Omoide-Warning`` header.
- **Memory used** comes back in the ``omoide`` extension field (see
  :mod:`.openai_shapes`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from omoide.components import ChatModel
from omoide.components.turn_events import Done, ReplyText, TurnEvent
from omoide.config_schema import DEFAULT_CHAT_MODEL
from omoide.pipeline.turn import NullSink, TurnRequest, TurnResult
from omoide.server.auth import PRINCIPAL_KEY, Principal
from omoide.server.openai_shapes import (
    SSE_DONE,
    ChatCompletionRequest,
    OpenAIRefusal,
    chunk_json,
    closing_chunks,
    completion_json,
    conversation_of,
    error_body,
    model_json,
    models_json,
    parse_request,
    sse,
)
from omoide.user_ids import InvalidUserId, validate_user_id

if TYPE_CHECKING:
    from omoide.server.app import OmoideServer

log = logging.getLogger("omoide.server.openai")

DEVICE = "openai"
"""The device a turn through this endpoint is labelled with (traces, the console)."""
WARNING_HEADER = "X-Omoide-Warning"


def chat_models(server: OmoideServer) -> dict[str, ChatModel]:
    """The configured chat models by the name clients use: ``omoide`` first (``chat:``),
    then ``chat_models:`` in config order."""
    prefix = "chat_models."
    named = {path.removeprefix(prefix): comp
             for path, comp in server.runtime.components().items()
             if path.startswith(prefix) and isinstance(comp, ChatModel)}
    return {DEFAULT_CHAT_MODEL: server.runtime.chat, **named}


def openai_router(server: OmoideServer) -> APIRouter:
    """The OpenAI-compatible routes over ``server``."""
    router = APIRouter()
    created = int(time.time())

    @router.get("/v1/models")
    async def list_models() -> dict[str, Any]:
        return models_json(list(chat_models(server)), created)

    @router.get("/v1/models/{model:path}", response_model=None)
    async def get_model(model: str) -> Response:
        if model not in chat_models(server):
            return JSONResponse(error_body(404, f"the model {model!r} does not exist: "
                                                "GET /v1/models lists the configured ones",
                                           "model_not_found", "model"), 404)
        return JSONResponse(model_json(model, created))

    @router.post("/v1/chat/completions", response_model=None)
    async def chat_completions(request: Request) -> Response:
        try:
            body = parse_request(await request.body())
            user = await _person(request, body, server)
            text, conversation = conversation_of(body)
            if not server.ready.is_set() or server.assistant is None:
                raise OpenAIRefusal(503, "omoide is still starting; try again in a moment",
                                    "not_ready")
        except OpenAIRefusal as refusal:
            return JSONResponse(refusal.body, refusal.status, headers=refusal.headers)
        name, chat, headers = _model(body.model, server)
        turn = TurnRequest(user=user, text=text, speak=False, device=DEVICE,
                           conversation=conversation, chat=chat, stream_text=body.stream)
        if body.stream:
            return StreamingResponse(_stream(server, turn, name, int(time.time())),
                                     media_type="text/event-stream", headers=headers)
        try:
            result = await server.run_turn(turn, NullSink())
        except Exception as exc:  # noqa: BLE001 - answered in OpenAI's shape
            log.warning("a chat completion's turn failed: %s", exc)
            return JSONResponse(error_body(500, f"the turn failed: {exc}"), 500)
        return JSONResponse(completion_json(result, name, int(time.time())), headers=headers)

    return router


async def _person(request: Request, body: ChatCompletionRequest, server: OmoideServer,
                  ) -> str:
    """Whose turn this is: the person token's owner, or the person the admin names."""
    principal = request.scope.get(PRINCIPAL_KEY)
    if not isinstance(principal, Principal):   # the guard lets no one through without
        raise OpenAIRefusal(401, "authentication required: send Authorization: Bearer "
                                 "<a person's token>")
    if not principal.is_admin:
        # ``user`` is the client's own label of its end user (Home Assistant sends its
        # conversation id): the key alone says who is speaking
        assert principal.user is not None
        await _admit(request, principal.user, server)
        return principal.user
    if body.user is None:
        raise OpenAIRefusal(400, "with the admin token, name the person in `user` (or use "
                                 "the person's own token: omoide token create --user NAME)",
                            "user_required", "user")
    try:
        named = validate_user_id(body.user)
    except InvalidUserId as exc:
        raise OpenAIRefusal(400, f"user: {exc}", "invalid_user", "user") from None
    if not server.new_users.is_known(named):
        raise OpenAIRefusal(404, f"omoide knows no person {named!r}: add them first "
                                 "(POST /v1/users, or omoide token create --user NAME)",
                            "unknown_user", "user")
    return named


async def _admit(request: Request, user: str, server: OmoideServer) -> None:
    """A person's token may start a person's first turns within the new-user limit."""
    client = request.client.host if request.client else None
    retry_after = await server.new_users.admit_async(user, client)
    if retry_after is not None:
        raise OpenAIRefusal(429, "too many new people from this address; try again later "
                                 "(server.limits.new_users_per_source)",
                            headers={"Retry-After": str(int(retry_after))})


def _model(asked: str, server: OmoideServer) -> tuple[str, ChatModel, dict[str, str]]:
    """The chat model named ``asked`` (its name, the model, response headers): an
    unknown or empty name is the default's, with a warning header for an unknown one."""
    models = chat_models(server)
    if asked in models:
        return asked, models[asked], {}
    headers = {}
    if asked:
        shown = ascii(asked[:100])
        headers[WARNING_HEADER] = (f"unknown model {shown}; answered by "
                                   f"{DEFAULT_CHAT_MODEL!r} (GET /v1/models lists them)")
    return DEFAULT_CHAT_MODEL, models[DEFAULT_CHAT_MODEL], headers


class _TextSink:
    """Hands the reply's text to the response stream as the model produces it, then
    the turn's result."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[str | TurnResult | None] = asyncio.Queue()

    async def on_event(self, event: TurnEvent) -> None:
        if isinstance(event, ReplyText):
            self.queue.put_nowait(event.text)
        elif isinstance(event, Done):
            self.queue.put_nowait(event.result)


async def _stream(server: OmoideServer, turn: TurnRequest, model: str,
                  created: int) -> AsyncIterator[bytes]:
    """The turn as server-sent events: a role chunk at once, the text as it comes, the
    client's tool calls, the finish with the ``omoide`` field, ``[DONE]``. A turn that
    fails ends with an error event (the SDKs raise it); a client that goes away cancels
    the turn (what was said is journaled, as after a barge-in)."""
    sink = _TextSink()
    task = asyncio.create_task(server.run_turn(turn, sink))
    task.add_done_callback(lambda _: sink.queue.put_nowait(None))
    completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
    try:
        yield sse(chunk_json(completion_id, model, created,
                             {"role": "assistant", "content": ""}))
        while isinstance(item := await sink.queue.get(), str):
            yield sse(chunk_json(completion_id, model, created, {"content": item}))
        try:
            result = await task
        except Exception as exc:  # noqa: BLE001 - the stream has begun: said in it
            log.warning("a streamed chat completion's turn failed: %s", exc)
            yield sse(error_body(500, f"the turn failed: {exc}"))
            yield SSE_DONE
            return
        for chunk in closing_chunks(completion_id, model, created, result):
            yield sse(chunk)
        yield SSE_DONE
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
