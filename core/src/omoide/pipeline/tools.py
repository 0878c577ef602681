"""The tools of a turn: plugin tools and the device's own tools, called safely.

:class:`ToolRunner` lives as long as the assistant and holds the configured tool
components and the open confirmation questions. For each turn it makes a
:class:`TurnTools`: the merged list offered to the chat model (plugin functions first;
a device tool with the same name is left out) and the one way to call them.

Whatever a tool does, the turn goes on: an exception, a call past its time budget (even
one that ignores cancellation), a result that is not JSON or is too long all become a
short ``{"error": ...}`` string the model can talk about. Each call is reported as a
:class:`~omoide.components.turn_events.ToolCalled` event (name, source, duration,
outcome), which the turn's trace records.

Confirmation: a function marked ``needs_confirmation`` is never run when the model calls
it. The tool's question is stored for the person (one per user, closed by their next
turn or after ``confirm_window_s``) and handed to the model to ask. At the person's
next turn :meth:`TurnTools.settle_confirmation` reads their answer
(:func:`omoide.pipeline.confirmation.read_answer`); on a clear yes the call runs with
``confirmed=True`` and its result is put in front of the model as the result of that
call, so it can say what was done. When the asking turn's voice was identified (a
household's robot), only that voice may answer: an answer in another or an unknown
voice cancels the question, and another voice speaking on the same robot while the
question is open closes it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from omoide.components import Tool, ToolContext, ToolError
from omoide.components.turn_events import ToolCalled
from omoide.config import ToolCallSettings
from omoide.errors import ComponentTimeout
from omoide.pipeline.confirmation import Answer, read_answer
from omoide.pipeline.trace import TurnTrace
from omoide.pipeline.turn import ToolHandler, TurnRequest
from omoide.types import ChatMessage, ToolCall, ToolSpec

log = logging.getLogger("omoide.tools")

ToolCallReport = Callable[[ToolCalled], object]
"""Where a turn's tool calls are reported (the turn relays them as events)."""

CANCEL_GRACE_S = 1.0
"""How long past its budget a call is waited for after being cancelled; a call that
ignores cancellation is then abandoned (left to finish on its own)."""
ERROR_PREVIEW_CHARS = 300
CLIENT_SOURCE = "client"
"""The source of a chat client's own tools (``ClientConversation.tools``): calls of them
end the turn and go back to the client, which runs them."""


@dataclass(frozen=True)
class PendingConfirmation:
    """A call waiting for the person's yes."""

    user: str
    tool: Tool
    function: str
    arguments: dict[str, Any]
    question: str
    expires_at: float
    """``time.monotonic()`` after which the question is closed."""
    voice: VoiceCheck | None = None
    """The voice that was asked, when the asking turn identified its speaker: only that
    voice may answer (another voice cancels the question)."""


@dataclass(frozen=True)
class VoiceCheck:
    """Who a turn's voice was (``voice``: the member identified, None: unknown) on
    which device; present only for turns whose speaker was identified."""

    voice: str | None
    device: str | None

    @classmethod
    def of(cls, request: TurnRequest) -> VoiceCheck | None:
        if request.speaker is None:
            return None
        return cls(request.speaker.voice, request.device)

    def answers(self, asked: VoiceCheck) -> bool:
        """True when this voice may answer a question put to ``asked``."""
        return asked.voice is not None and self.voice == asked.voice


@dataclass(frozen=True)
class _Route:
    name: str
    source: str
    tool: Tool | None = None
    handler: ToolHandler | None = None


def error_text(message: str, limit: int) -> str:
    """``{"error": message}`` as JSON, never longer than ``limit`` characters."""
    room = max(40, limit - 16)
    if len(message) > room:
        message = message[:room - 1] + "…"
    return json.dumps({"error": message}, ensure_ascii=False)


def render_result(value: Any, limit: int) -> tuple[str, str | None]:
    """The text handed to the model for ``value``, and an error (or None).

    Strings pass as they are; anything else must be JSON-serialisable. A result longer
    than ``limit`` is refused with its beginning, so the model can still say something.
    """
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            msg = f"the tool returned something that is not JSON ({type(value).__name__}: {exc})"
            return error_text(msg, limit), msg
    if len(text) > limit:
        preview = text[:min(ERROR_PREVIEW_CHARS, limit // 3)]
        msg = (f"the tool's result was too long ({len(text)} characters, limit {limit});"
               f" it began: {preview}")
        return error_text(msg, limit), msg
    return text, None


class ToolRunner:
    """The configured tools of one assistant and the open confirmation questions."""

    def __init__(self, tools: Sequence[Tool], settings: ToolCallSettings,
                 timezone: str) -> None:
        self.tools = list(tools)
        self.settings = settings
        self.timezone = timezone
        self._pending: dict[str, PendingConfirmation] = {}
        self._warned: set[str] = set()

    def recognition_phrases(self) -> list[str]:
        """What people say to use the ready tools (each tool's ``recognition_phrases``,
        in config order, without repeats): part of the speech recogniser's context."""
        phrases: dict[str, None] = {}
        for tool in self.tools:
            if tool.status.state.value == "ready":
                phrases.update(dict.fromkeys(tool.recognition_phrases))
        return list(phrases)

    def for_turn(self, request: TurnRequest, now: datetime) -> TurnTools:
        routes: dict[str, _Route] = {}
        specs: list[ToolSpec] = []
        # a guest gets no plugin tool: one may read or write a person's memory
        for tool in () if request.guest else self.tools:
            if tool.status.state.value != "ready":
                continue
            try:
                functions = list(tool.functions())
            except Exception:
                log.exception("tool %s: listing its functions failed", tool.name)
                continue
            for fn in functions:
                if fn.name in routes:
                    self._warn_once(f"{tool.name}:{fn.name}",
                                    "tool function %r of %s is already offered by %s; "
                                    "left out", fn.name, tool.name, routes[fn.name].source)
                    continue
                routes[fn.name] = _Route(fn.name, tool.name, tool=tool)
                specs.append(fn.spec())
        if request.tool_handler is not None:
            for spec in request.tools:
                if spec.name in routes:
                    self._warn_once(f"device:{spec.name}",
                                    "device tool %r has the name of a plugin tool; left out",
                                    spec.name)
                    continue
                routes[spec.name] = _Route(spec.name, "device", handler=request.tool_handler)
                specs.append(spec)
        client = request.conversation.tools if request.conversation is not None else ()
        for spec in client:   # a chat client's tools: offered, and run by the client
            if spec.name in routes:
                self._warn_once(f"client:{spec.name}", "client tool %r has the name of a "
                                "tool of this server; left out", spec.name)
                continue
            routes[spec.name] = _Route(spec.name, CLIENT_SOURCE)
            specs.append(spec)
        context = ToolContext(request.user, now, self.timezone, request.device,
                              request.session_id)
        voice = VoiceCheck.of(request)
        if voice is not None:
            self._cancel_for_other_voices(request.user, voice)
        return TurnTools(self, specs, routes, context, voice)

    def _cancel_for_other_voices(self, user: str, voice: VoiceCheck) -> None:
        """A different voice on the device mid-confirmation closes its question (the
        person asked is no longer the one speaking)."""
        for other, pending in list(self._pending.items()):
            asked = pending.voice
            if other != user and asked is not None and asked.device == voice.device \
                    and not voice.answers(asked):
                del self._pending[other]
                log.info("confirmation of %s for %s cancelled: another voice spoke",
                         pending.function, other)

    def _warn_once(self, key: str, msg: str, *args: Any) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(msg, *args)

    # -- confirmations ---------------------------------------------------------------
    def ask(self, pending: PendingConfirmation) -> None:
        self._pending[pending.user] = pending

    def take_pending(self, user: str) -> PendingConfirmation | None:
        """The open question of ``user`` (closing it), unless it has expired."""
        pending = self._pending.pop(user, None)
        if pending is None or pending.expires_at < time.monotonic():
            return None
        return pending

    def pending(self, user: str) -> PendingConfirmation | None:
        """The open question of ``user`` without closing it (for tests and the web page)."""
        pending = self._pending.get(user)
        return pending if pending and pending.expires_at >= time.monotonic() else None


class TurnTools:
    """The tools offered in one turn and the one way to call them."""

    def __init__(self, runner: ToolRunner, specs: list[ToolSpec],
                 routes: dict[str, _Route], context: ToolContext,
                 voice: VoiceCheck | None = None) -> None:
        self._runner = runner
        self.voice = voice
        """Who spoke this turn, when the voice was identified."""
        self.specs = specs
        self._routes = routes
        self.context = context

    def __bool__(self) -> bool:
        return bool(self._routes)

    @property
    def limit(self) -> int:
        return self._runner.settings.max_result_chars

    def client_calls(self, calls: Sequence[ToolCall]) -> list[ToolCall]:
        """The calls of a chat client's own tools among ``calls``: when there is one, the
        turn ends with them (the client runs them); the server's own calls of that round
        are not run (the model asks again once the client has answered)."""
        return [c for c in calls if (route := self._routes.get(c.name)) is not None
                and route.source == CLIENT_SOURCE]

    async def call(self, call: ToolCall, report: ToolCallReport | TurnTrace) -> str:
        """Run one call the model asked for; always returns the text for the model.
        The call is reported to ``report`` (a trace is given the event directly)."""
        started = time.perf_counter()
        route = self._routes.get(call.name)
        source = route.source if route else "?"
        text, outcome, error = await self._run(call, route)
        _reporter(report)(ToolCalled(name=call.name, source=source, started_at=started,
                                     outcome=outcome, error=error))
        if error:
            log.info("tool call %s (%s): %s: %s", call.name, source, outcome, error)
        return text

    async def _run(self, call: ToolCall, route: _Route | None) -> tuple[str, str, str | None]:
        limit = self.limit
        if route is None:
            msg = f"there is no tool named {call.name!r}"
            return error_text(msg, limit), "error", msg
        try:
            arguments = json.loads(call.arguments) if call.arguments.strip() else {}
        except ValueError:
            msg = f"the arguments of {call.name} are not valid JSON"
            return error_text(msg, limit), "error", msg
        if not isinstance(arguments, dict):
            msg = f"the arguments of {call.name} must be a JSON object"
            return error_text(msg, limit), "error", msg
        if route.handler is not None:
            budget = self._runner.settings.device_timeout_s
            value, error, outcome = await _bounded(route.handler(call), budget,
                                                   own_budget=False)
        else:
            assert route.tool is not None
            tool = route.tool
            try:
                needs_confirmation = tool.function(call.name).needs_confirmation
            except ToolError as exc:   # the tool's list changed since it was offered
                return error_text(str(exc), limit), "error", str(exc)
            if needs_confirmation:
                return await self._ask_first(tool, call.name, arguments)
            budget = tool.config.timeout_s * (1 + tool.config.retries)
            value, error, outcome = await _bounded(
                tool.invoke(call.name, arguments, self.context), budget)
        if error is not None:
            return error_text(error, limit), outcome, error
        text, bad = render_result(value, limit)
        return text, ("error" if bad else "ok"), bad

    async def _ask_first(self, tool: Tool, function: str,
                         arguments: dict[str, Any]) -> tuple[str, str, str | None]:
        limit = self.limit
        request, error, outcome = await _bounded(
            tool.prepare(function, arguments, self.context), tool.config.timeout_s)
        if error is not None:
            return error_text(error, limit), outcome, error
        prepared = dict(request.arguments) if request.arguments is not None else arguments
        self._runner.ask(PendingConfirmation(
            self.context.user, tool, function, prepared, request.question,
            time.monotonic() + self._runner.settings.confirm_window_s, self.voice))
        text, _ = render_result({
            "status": "needs_confirmation", "question": request.question,
            "message": request.question,
            "instruction": "Ask the person exactly this question and stop. It is done only "
                           "if they say yes in their next utterance; do not call it again."},
            limit)
        return text, "needs_confirmation", None

    async def settle_confirmation(self, messages: list[ChatMessage],
                                  report: ToolCallReport | TurnTrace) -> list[ChatMessage]:
        """Close the person's open question with this turn's utterance.

        On a yes the call runs now and ``messages`` gain that call and its result (so
        the model says what was done); on a no, a cancelled result; when the answer is
        unclear the question is dropped and ``messages`` are returned unchanged.
        """
        pending = self._runner.take_pending(self.context.user)
        if pending is None or not messages or messages[-1].role != "user":
            return messages
        answer = read_answer(messages[-1].content)
        started = time.perf_counter()
        report = _reporter(report)
        if pending.voice is not None and (self.voice is None
                                          or not self.voice.answers(pending.voice)):
            report(ToolCalled(name=pending.function, source=pending.tool.name,
                              started_at=started, outcome="cancelled",
                              error="answered by another voice than the one asked; not done"))
            text, _ = render_result({"status": "cancelled", "message":
                                     "確認した人とは違う声だったので、やめておくね。"},
                                    self.limit)
            return self._with_result(messages, pending, text)
        if answer is Answer.UNCLEAR:
            report(ToolCalled(name=pending.function, source=pending.tool.name,
                              started_at=started, outcome="unconfirmed",
                              error="the answer was neither yes nor no; not done"))
            return messages
        if answer is Answer.NO:
            text, _ = render_result({"status": "cancelled",
                                     "message": "わかった、やめておくね。"}, self.limit)
            outcome, error = "cancelled", None
        else:
            confirmed = replace(self.context, confirmed=True)
            value, error, outcome = await _bounded(
                pending.tool.invoke(pending.function, pending.arguments, confirmed),
                pending.tool.config.timeout_s * (1 + pending.tool.config.retries))
            if error is not None:
                text = error_text(error, self.limit)
            else:
                text, error = render_result(value, self.limit)
                outcome = "error" if error else "confirmed"
        report(ToolCalled(name=pending.function, source=pending.tool.name, started_at=started,
                          outcome=outcome, error=error))
        return self._with_result(messages, pending, text)

    @staticmethod
    def _with_result(messages: list[ChatMessage], pending: PendingConfirmation,
                     text: str) -> list[ChatMessage]:
        """``messages`` with the settled call and its result (what the model reports)."""
        call = ToolCall(f"confirmed-{uuid.uuid4().hex[:8]}", pending.function,
                        json.dumps(pending.arguments, ensure_ascii=False))
        return [*messages, ChatMessage("assistant", "", tool_calls=(call,)),
                ChatMessage("tool", text, tool_call_id=call.id)]


def _reporter(report: ToolCallReport | TurnTrace) -> ToolCallReport:
    return report.observe if isinstance(report, TurnTrace) else report


async def _bounded(awaitable: Any, budget_s: float, *,
                   own_budget: bool = True) -> tuple[Any, str | None, str]:
    """Await ``awaitable`` for at most ``budget_s`` (+ a grace period for cancellation).

    ``own_budget``: the awaitable enforces ``budget_s`` itself (a component's template
    method), so this bound waits a grace period longer and only catches a call that
    ignores its cancellation. Returns ``(value, error, outcome)``; never raises (except
    the turn's own cancellation).
    """
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait(
            {task}, timeout=budget_s + (CANCEL_GRACE_S if own_budget else 0.0))
    except asyncio.CancelledError:
        task.cancel()
        raise
    if not done:
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=CANCEL_GRACE_S)
        if not done:
            log.warning("a tool call ignored its cancellation; abandoned")
            task.add_done_callback(_consume)
        return None, f"the tool did not answer within {budget_s:g}s", "timeout"
    try:
        return task.result(), None, "ok"
    except ComponentTimeout as exc:
        return None, str(exc), "timeout"
    except ToolError as exc:
        return None, str(exc), "refused"
    except asyncio.CancelledError:
        return None, "the tool call was cancelled", "error"
    except Exception as exc:  # noqa: BLE001 - a failing tool is the model's to talk about
        return None, f"{type(exc).__name__}: {exc}", "error"


def _consume(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()
