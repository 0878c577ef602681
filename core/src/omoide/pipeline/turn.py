"""What goes into a turn, what comes out, and where its events are delivered."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from omoide.components.asr import RecognitionStream
from omoide.components.chat import ChatModel
from omoide.components.device import Household
from omoide.components.memory_types import ProfileFact
from omoide.components.turn_events import (
    EmotionChosen,
    Heard,
    Sentence,
    TurnEvent,
    TurnEventSink,
)
from omoide.pipeline.trace import TurnTrace
from omoide.types import (
    AudioClip,
    ChatMessage,
    Emotion,
    Exchange,
    RetrievedMemory,
    ToolCall,
    ToolSpec,
)
from omoide.voices.early import VoiceWhileSpoken
from omoide.voices.identifier import TurnSpeaker

ToolHandler = Callable[[ToolCall], Awaitable[str]]


@dataclass(frozen=True)
class ClientConversation:
    """The conversation a chat client (an OpenAI-compatible one) sent with its new
    message: the client keeps the history, omoide does not.

    ``system`` is the client's own instructions (its system messages): they replace
    omoide's persona, and omoide's date, profile and memory sections follow them (the
    face-tag instructions are left out of a client's turn either way). ``before`` is
    the conversation before the new user message: the session's history, sent to the
    model but never journaled again. ``after`` is what followed the new message in this
    same turn (the model's calls of the client's tools and the client's results).
    ``tools`` are the client's tools: offered to the model, and a call of one ends the
    turn with that call for the client to run.
    """

    system: str = ""
    before: tuple[ChatMessage, ...] = ()
    after: tuple[ChatMessage, ...] = ()
    tools: tuple[ToolSpec, ...] = ()


@dataclass(frozen=True)
class TurnRequest:
    """One turn: a user's utterance as audio (to transcribe) or as text.

    ``recognition``, when given, is the utterance's recognition stream, opened with
    :meth:`omoide.pipeline.assistant.Assistant.open_recognition` and fed by the caller
    while the person spoke: the turn finishes it (only the tail is left to decode)
    instead of transcribing ``audio``, which then only says what was heard. ``now``
    overrides the clock (tests, evaluation). ``tools`` are offered to the chat
    model and executed through ``tool_handler`` (e.g. a robot's MCP tools).
    ``speak=False`` skips TTS (text clients). ``guest=True`` is a turn for no one's
    memory (a household's unrecognised voice): nothing is recalled, journaled or
    extracted, the recognition is biased with no one's words, only the device's own
    tools are offered, and the trace says ``guest``; ``user`` then only labels the
    turn (:data:`omoide.components.device.GUEST`).

    ``household``, when given with ``audio``, is who may be speaking: if a speaker stage
    is configured and a member is enrolled, the voice is identified (beside recognition)
    and the turn becomes the identified member's, or the household's default person's
    (a guest's when it has none) for a voice no one recognised; ``user`` and ``guest``
    are the turn's until then. ``speaker`` is filled in by the turn (who was heard).
    """

    user: str
    text: str | None = None
    audio: AudioClip | None = None
    session_id: str | None = None
    device: str | None = None
    now: datetime | None = None
    speak: bool = True
    tools: Sequence[ToolSpec] = ()
    tool_handler: ToolHandler | None = None
    end_of_speech_at: float | None = None
    """``time.perf_counter()`` when the VAD saw the end of speech, if known."""
    recognition: RecognitionStream | None = None
    """The utterance heard while it was spoken (finished by the turn; see above)."""
    guest: bool = False
    """No one's memory is read or written for this turn (see above)."""
    conversation: ClientConversation | None = None
    """A chat client's own conversation (see :class:`ClientConversation`): it replaces
    the short-term history, which this turn neither reads nor extends."""
    chat: ChatModel | None = None
    """The chat model that answers (None: the assistant's own)."""
    stream_text: bool = False
    """Emit the reply's text as it arrives (``ReplyText`` events), not only sentences."""
    household: Household | None = None
    """Who may be speaking (see above); None: ``user`` is the turn's person."""
    speaker: TurnSpeaker | None = None
    """Who the voice was identified as (set by the turn when it identified one)."""
    voice: VoiceWhileSpoken | None = None
    """The voice of ``audio`` as it was spoken (``Assistant.listen_for_voice``): its
    identification started before the end of speech. None: it is embedded at the end."""


class TurnSink(Protocol):
    """The older way to follow a turn, method per result; still accepted wherever a
    :class:`~omoide.components.turn_events.TurnEventSink` is (see :func:`event_sink`).
    Each method may apply back-pressure (e.g. a device pacing audio): the pipeline
    awaits it."""

    async def on_transcript(self, text: str) -> None: ...

    async def on_emotion(self, emotion: Emotion) -> None: ...

    async def on_sentence(self, text: str, audio: AudioClip | None) -> None:
        """One sentence of the reply; ``audio`` is None when TTS failed or was skipped."""
        ...


AnySink = TurnEventSink | TurnSink
"""What ``run_turn`` accepts: an event sink, or an older method-per-result sink."""


class NullSink:
    """A sink that drops everything (text-only callers collect the result instead)."""

    async def on_event(self, event: TurnEvent) -> None:
        return None


class TurnSinkAdapter:
    """Reads a turn's events into an older :class:`TurnSink`: ``Heard`` ->
    ``on_transcript``, ``EmotionChosen`` -> ``on_emotion``, ``Sentence`` ->
    ``on_sentence``."""

    def __init__(self, sink: TurnSink) -> None:
        self.sink = sink

    async def on_event(self, event: TurnEvent) -> None:
        if isinstance(event, Heard):
            await self.sink.on_transcript(event.transcript)
        elif isinstance(event, EmotionChosen):
            await self.sink.on_emotion(event.emotion)
        elif isinstance(event, Sentence):
            await self.sink.on_sentence(event.text, event.audio)


def event_sink(sink: AnySink) -> TurnEventSink:
    """``sink`` as an event sink (an older :class:`TurnSink` gets an adapter)."""
    if hasattr(sink, "on_event"):
        return sink  # type: ignore[return-value]
    return TurnSinkAdapter(sink)


@dataclass
class TurnResult:
    turn_id: str
    user: str
    transcript: str
    reply: str
    emotion: Emotion
    memories: list[RetrievedMemory]
    sentences: list[str]
    audio: list[AudioClip | None]
    trace: dict[str, Any]
    degraded: list[str] = field(default_factory=list)
    """Human-readable notes on what failed and was worked around (e.g. TTS down)."""
    interrupted: bool = False
    profile: list[ProfileFact] = field(default_factory=list)
    """The person's profile facts the prompt carried (always there, unlike ``memories``)."""
    client_tool_calls: list[ToolCall] = field(default_factory=list)
    """Calls of the client's tools the reply ended with (the client runs them and sends
    the results in its next request; the exchange is journaled with the final reply)."""


@dataclass(frozen=True)
class CompletedTurn:
    """What observers of ``on_turn_completed`` see: the journaled exchange and trace."""

    exchange: Exchange
    trace: TurnTrace
    memories: tuple[RetrievedMemory, ...]
    interrupted: bool = False
    emotion: Emotion = Emotion.NEUTRAL
    """The face the reply showed."""
    degraded: tuple[str, ...] = ()
    """What failed and was worked around (the same notes as ``TurnResult.degraded``)."""
    profile: tuple[ProfileFact, ...] = ()
    """The person's profile facts the prompt carried."""
