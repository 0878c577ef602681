"""One turn's progress as one typed sequence of events.

A turn publishes what happens to it — it started, a stage began or ended, what was
heard, what was recalled, the first token, each sentence with its audio, each tool
call, what was degraded, the end of the reply, the result — on a :class:`TurnEvents`
publisher. Everyone who follows a turn reads that one stream: the device (it turns
``Heard``, ``EmotionChosen`` and ``Sentence`` into its protocol), the trace (it builds
the per-stage spans), the console feed (``Done``) and tests. Home Assistant's assist
pipeline works the same way (run-start, stt-end, intent-end, tts-end, run-end).

Every event is a frozen dataclass carrying the turn id, the user and ``at``: the
``time.perf_counter()`` reading when what it reports happened (events made by another
task, such as the chat's, keep the time they were made, not the time they were
delivered).

Order guarantees, for every subscriber of a turn:

- ``TurnStarted`` comes first and ``Done`` last; ``Done`` comes for every turn, also
  one that was interrupted (barge-in) or failed.
- Events are delivered one at a time, in the order the pipeline emitted them, to each
  subscriber in the order they subscribed; :meth:`TurnEvents.emit` awaits every
  subscriber, so a subscriber may apply back-pressure (a device pacing audio).
- ``StageStarted(s)`` precedes ``StageEnded(s)``; a stage the turn was interrupted in
  has no ``StageEnded``. For a spoken reply ``StageStarted("tts")`` precedes
  ``StageStarted("chat")`` (speech is pipelined with generation).
- ``Heard`` precedes ``Recalled``, which precedes ``PromptBuilt``; the reply's events
  follow: ``EmotionChosen`` (exactly once when there is a reply) before the first
  ``Sentence``; ``FirstToken`` at most once; ``Sentence`` events in the order they are
  spoken; ``ToolCalled`` and the chat's ``Degraded`` where they happened among them;
  ``ReplyText`` (when asked for) after ``EmotionChosen`` and before the ``Sentence``
  that holds its text.
- ``ReplyEnded`` closes the reply (the trace's ``done``); a journaling failure is
  reported by a ``Degraded`` after it; ``Done`` follows.

A subscriber's exception propagates into the turn (a device that went away ends it);
observers that must never disturb a turn catch their own errors.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from omoide.components.memory_types import ProfileFact
    from omoide.pipeline.turn import TurnResult
    from omoide.types import AudioClip, ChatMessage, Emotion, Exchange, RetrievedMemory


@dataclass(frozen=True, kw_only=True)
class TurnEventBase:
    """What every turn event carries. ``turn_id`` and ``user`` are stamped by
    :meth:`TurnEvents.emit` when left empty."""

    turn_id: str = ""
    user: str = ""
    at: float = field(default_factory=time.perf_counter)
    """``time.perf_counter()`` when what the event reports happened."""


@dataclass(frozen=True, kw_only=True)
class TurnStarted(TurnEventBase):
    """The turn began (``at``); ``end_of_speech_at`` is when the VAD heard the person
    stop, if known (the trace measures from there)."""

    device: str | None = None
    started_at: datetime
    end_of_speech_at: float | None = None


@dataclass(frozen=True, kw_only=True)
class StageStarted(TurnEventBase):
    """A timed stage began: ``asr``, ``retrieve``, ``prompt``, ``chat`` or ``tts``."""

    stage: str
    component: str | None = None


@dataclass(frozen=True, kw_only=True)
class StageEnded(TurnEventBase):
    """A timed stage ended, with its error (it failed) or a note for the trace."""

    stage: str
    error: str | None = None
    note: str | None = None


@dataclass(frozen=True, kw_only=True)
class Heard(TurnEventBase):
    """What the person said (recognised, or typed); empty when nothing was heard."""

    transcript: str


@dataclass(frozen=True, kw_only=True)
class Recalled(TurnEventBase):
    """What memory gave the turn: memories, profile facts, and why it gave less
    (``degraded`` notes: failed, past its time budget, shortfalls)."""

    memories: tuple[RetrievedMemory, ...] = ()
    profile: tuple[ProfileFact, ...] = ()
    degraded: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class PromptBuilt(TurnEventBase):
    """The messages sent to the chat model (system prompt first)."""

    messages: tuple[ChatMessage, ...]


@dataclass(frozen=True, kw_only=True)
class FirstToken(TurnEventBase):
    """The chat model's first text arrived."""

    component: str | None = None


@dataclass(frozen=True, kw_only=True)
class ReplyText(TurnEventBase):
    """A piece of the reply's text as the chat model produced it (the face tag taken
    off), before the sentence it belongs to is complete. Only for a turn that asks
    (``TurnRequest.stream_text``: a text client streaming the reply)."""

    text: str


@dataclass(frozen=True, kw_only=True)
class EmotionChosen(TurnEventBase):
    """The face of the reply, known before its first sentence."""

    emotion: Emotion


@dataclass(frozen=True, kw_only=True)
class Sentence(TurnEventBase):
    """One sentence of the reply, to be shown and played; ``audio`` is None when TTS
    failed or was skipped. ``component`` is the TTS that spoke it."""

    text: str
    emotion: Emotion
    audio: AudioClip | None = None
    component: str | None = None


@dataclass(frozen=True, kw_only=True)
class ToolCalled(TurnEventBase):
    """One tool call: name, source (tool component or ``device``), outcome (ok, error,
    timeout, refused, needs_confirmation, confirmed, cancelled, unconfirmed), the error
    if any; it ran from ``started_at`` to ``at``."""

    name: str
    source: str
    started_at: float
    outcome: str
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class Degraded(TurnEventBase):
    """Something failed and was worked around; ``note`` is what the result's
    ``degraded`` list carries."""

    note: str


@dataclass(frozen=True, kw_only=True)
class ReplyEnded(TurnEventBase):
    """The reply is over: spoken, interrupted, or nothing was heard (``note``).
    A turn that failed has none."""

    note: str | None = None


@dataclass(frozen=True, kw_only=True)
class Done(TurnEventBase):
    """The turn's result, after the exchange was journaled. ``exchange`` is None when
    nothing was heard (nothing journaled); ``result.interrupted`` says barge-in."""

    result: TurnResult
    exchange: Exchange | None = None


TurnEvent = (TurnStarted | StageStarted | StageEnded | Heard | Recalled | PromptBuilt
             | FirstToken | ReplyText | EmotionChosen | Sentence | ToolCalled | Degraded
             | ReplyEnded | Done)
"""Any event of a turn."""

TurnEventSubscriber = Callable[[TurnEvent], Awaitable[None]]
"""Gets every event of a turn, in order (see the module's order guarantees)."""


class TurnEventSink(Protocol):
    """What a device hands to ``DeviceHost.run_turn``: it reads the turn's events."""

    async def on_event(self, event: TurnEvent) -> None: ...


class TurnEvents:
    """The publisher of one turn's events; subscribers get each event in order."""

    def __init__(self, turn_id: str, user: str,
                 subscribers: Sequence[TurnEventSubscriber] = ()) -> None:
        self.turn_id = turn_id
        self.user = user
        self._subscribers = list(subscribers)

    def subscribe(self, subscriber: TurnEventSubscriber) -> None:
        """Add ``subscriber``; it gets the events emitted from now on."""
        self._subscribers.append(subscriber)

    async def emit(self, event: TurnEvent) -> None:
        """Stamp ``event`` with the turn and user, then await every subscriber with it."""
        if not event.turn_id or not event.user:
            event = replace(event, turn_id=event.turn_id or self.turn_id,
                            user=event.user or self.user)
        for subscriber in self._subscribers:
            await subscriber(event)
