"""One turn, end to end: asr -> retrieve -> prompt -> chat (streamed) -> split -> tts.

TTS is pipelined with generation: each sentence is synthesised as soon as the
splitter completes it (up to ``tts_lookahead`` ahead of playback), while the sink
is still playing the previous one. Failures degrade the turn instead of ending it:
a failed retrieval means no memory, a failed chat model an apology, a failed
sentence is shown without audio. Every exchange is journaled before observers
(extraction scheduling) hear of it.

A guest's turn (``TurnRequest.guest``: a household's voice no one recognised, when the
household answers guests) uses no one's memory: no memory words bias its recognition,
nothing is recalled (the ``retrieve`` stage says so), no plugin tool is offered (a tool
may read or write a person's memory; the device's own tools are), and nothing is
journaled, extracted or shown in the console's feed. Its short-term history is kept per
device, apart from everyone's.

The turn's progress is one stream of events (:mod:`omoide.components.turn_events`):
the trace, the device's sink and the assistant's observers (the console feed) all
read it; nothing reaches them another way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import cast

import pluggy

from omoide.components import ASR, TTS, ChatModel, RecognitionContext
from omoide.components.asr import RecognitionStream
from omoide.components.device import GUEST, Household
from omoide.components.memory_types import MemoryService, Profile, Recall
from omoide.components.turn_events import (
    Degraded,
    Done,
    EmotionChosen,
    FirstToken,
    Heard,
    PromptBuilt,
    Recalled,
    ReplyEnded,
    ReplyText,
    Sentence,
    StageEnded,
    StageStarted,
    TurnEvent,
    TurnEvents,
    TurnEventSubscriber,
    TurnStarted,
)
from omoide.config import AssistantSettings, ToolCallSettings
from omoide.errors import OmoideError
from omoide.hooks import Hooks
from omoide.hookspecs import hookimpl
from omoide.pipeline.emotion import StreamingEmotionParser
from omoide.pipeline.history import ConversationHistory
from omoide.pipeline.prompt import (
    PromptContext,
    PromptSection,
    assemble_system_prompt,
    build_messages,
    client_messages,
    with_client_system,
)
from omoide.pipeline.recognition import recognition_context
from omoide.pipeline.splitter import SentenceSplitter, split_sentences
from omoide.pipeline.tools import ToolRunner, TurnTools
from omoide.pipeline.trace import TraceLog, TurnTrace
from omoide.pipeline.turn import AnySink, CompletedTurn, TurnRequest, TurnResult, event_sink
from omoide.pipeline.voice_enrolment import ASKS, EnrolmentReply, VoiceEnrolment
from omoide.text_controls import strip_controls
from omoide.types import (
    AudioClip,
    ChatDelta,
    ChatMessage,
    Emotion,
    Exchange,
    ToolCall,
    ToolSpec,
)
from omoide.voices.early import VoiceWhileSpoken
from omoide.voices.household_memory import shared_owner, with_shared
from omoide.voices.identifier import SpeakerIdentifier, TurnSpeaker

log = logging.getLogger("omoide.pipeline")

_Queued = tuple[str, "asyncio.Task[tuple[AudioClip | None, str | None]] | None"] | TurnEvent
"""What the chat task hands the delivering loop: a sentence (with its synthesis) or an
event."""

APOLOGY = "ごめんね、今ちょっと考えがまとまらないみたい。もう一度話しかけてくれる？"


@dataclass
class _Reply:
    """Mutable state of the reply being produced."""

    emotion: Emotion = Emotion.NEUTRAL
    text: str = ""
    sentences: list[str] = field(default_factory=list)
    audio: list[AudioClip | None] = field(default_factory=list)
    degraded: list[str] = field(default_factory=list)
    client_tool_calls: list[ToolCall] = field(default_factory=list)
    private: bool = False
    """Neither journaled nor kept in the short-term history (an enrolment by voice)."""
    opener: str = ""
    """Words the reply opens with, after the model's first sentence (a moment said at
    the start of a conversation: 「おかえり。そういえば、明日は箱根だね。」)."""


Opener = Callable[[TurnRequest, datetime], Awaitable[str | None]]
"""Asked once per turn with words heard: what the reply should begin with, or None."""


class Assistant:
    """Runs turns over a set of started components.

    ``memory`` may be None (no long-term memory); ``hooks`` is the plugin manager
    whose ``prompt_sections`` and ``on_turn_completed`` hooks are called. ``observers``
    get every turn's events (the list is read at each turn: callers may add to it and
    remove from it); each must catch its own errors.
    """

    def __init__(self, *, settings: AssistantSettings, asr: ASR | None, chat: ChatModel,
                 tts: TTS | None, memory: MemoryService | None, hooks: pluggy.PluginManager,
                 traces: TraceLog | None = None, tools: ToolRunner | None = None,
                 observers: list[TurnEventSubscriber] | None = None,
                 speaker: SpeakerIdentifier | None = None) -> None:
        self.settings = settings
        self.speaker = speaker
        """Identifies a household's voice (``TurnRequest.household``); None: no speaker
        stage, every turn is its ``user``'s."""
        self.asr = asr
        self.chat = chat
        self.tts = tts
        self.memory = memory
        self.hooks = hooks
        self._hooks = Hooks(hooks)
        self.traces = traces or TraceLog(None)
        self.observers: list[TurnEventSubscriber] = observers if observers is not None else []
        self.tools = tools or ToolRunner([], ToolCallSettings(), settings.timezone)
        self.history = ConversationHistory(
            settings.history_exchanges, timedelta(minutes=settings.history_window_minutes))
        self.openers: list[Opener] = []
        self.enrolment = VoiceEnrolment(speaker, window_s=self.tools.settings.confirm_window_s) \
            if speaker is not None else None
        """Enrolment by voice, with consent (:mod:`omoide.pipeline.voice_enrolment`)."""
        """Asked in order before the chat; the first words given open the reply."""

    async def run_turn(self, request: TurnRequest, sink: AnySink) -> TurnResult:
        """Run one turn, publishing its events to the turn's trace, ``sink`` and the
        ``observers``, in that order. Cancelling it (barge-in) journals what was said
        and re-raises."""
        turn_id = uuid.uuid4().hex[:12]
        trace = TurnTrace(turn_id, request.user, device=request.device, guest=request.guest)
        events = TurnEvents(turn_id, request.user,
                            [trace.on_event, event_sink(sink).on_event, *self.observers])
        await events.emit(TurnStarted(device=request.device, started_at=datetime.now(UTC),
                                      end_of_speech_at=request.end_of_speech_at))
        now = request.now or datetime.now(UTC)
        reply = _Reply()
        transcript = ""
        recall: Recall | None = None
        interrupted = False
        speaking = await self._start_identification(request, events)
        try:
            transcript = await self._transcribe(request, events)
            if speaking is not None:
                request = await self._identified(request, speaking, trace, events)
            await events.emit(Heard(transcript=transcript))
            enrolling = await self._enrolment(request, transcript, events) \
                if transcript and self.enrolment is not None else None
            if enrolling is not None:
                reply.private = True
                await self._speak_reply(replace(request, chat=cast(ChatModel, _Said(
                    enrolling.text))), [], events, reply)
            elif transcript:
                recall = await (self._guest_recall(events) if request.guest else
                                self._recall(request.user, transcript, now, events, reply,
                                             shared_owner(request.household)))
                messages = await self._prompt(request, transcript, recall, now, events)
                reply.opener = await self._opener(request, now)
                await self._speak_reply(request, messages, events, reply)
            await events.emit(ReplyEnded(note=None if transcript else "nothing heard"))
        except asyncio.CancelledError:
            interrupted = True
            await events.emit(ReplyEnded(note="interrupted (barge-in)"))
            raise
        finally:
            if speaking is not None and not speaking.done():
                speaking.cancel()
            if request.voice is not None:
                request.voice.cancel()
            result = await asyncio.shield(self._finish(request, transcript, reply, recall,
                                                       trace, events, now, interrupted))
        return result

    # -- who is speaking ---------------------------------------------------------------
    async def _start_identification(
            self, request: TurnRequest, events: TurnEvents
    ) -> asyncio.Task[tuple[TurnSpeaker, float]] | None:
        """Identify the voice of a household's audio turn beside recognition (None when
        there is nothing to identify: no speaker stage, text, no one enrolled)."""
        speaker, household, audio = self.speaker, request.household, request.audio
        if speaker is None or household is None or audio is None \
                or not speaker.applies(household):
            return None
        await events.emit(StageStarted(stage="speaker", component=speaker.encoder.name))
        early = request.voice if request.voice is not None \
            and request.voice.identifier is speaker else None

        async def identify() -> tuple[TurnSpeaker, float]:
            found = await (early.identify(audio) if early is not None else
                           speaker.identify(audio, household))
            if early is not None and early.used is not None:
                found = replace(found, note=early.used.note)
            return found, time.perf_counter()

        return asyncio.create_task(identify())

    def listen_for_voice(self, household: Household,
                         sample_rate: int) -> VoiceWhileSpoken | None:
        """The voice of a household's utterance that is starting, to feed while it is
        spoken and pass as ``TurnRequest.voice`` (identified early: its embedding starts
        before the end of speech), or None when the turn will not identify it (no speaker
        stage, no one in the household enrolled)."""
        speaker = self.speaker
        if speaker is None or not speaker.applies(household):
            return None
        return VoiceWhileSpoken(speaker, household, sample_rate)

    async def _identified(self, request: TurnRequest,
                          speaking: asyncio.Task[tuple[TurnSpeaker, float]],
                          trace: TurnTrace, events: TurnEvents) -> TurnRequest:
        """The turn as the identified voice's: its person (or a guest), in the trace and
        on every later event."""
        found, at = await speaking
        ident = found.identification
        note = (f"{found.voice or 'unknown'}"
                + (f" (score {ident.score:.2f}, margin {ident.margin:.2f}, "
                   f"{ident.reason.value})" if ident else f" ({found.note})")
                + f" -> {found.person or GUEST}"
                + (f"; {found.note}" if ident and found.note else ""))
        await events.emit(StageEnded(stage="speaker", note=note, at=at))
        user = found.person or GUEST
        trace.user, trace.guest, trace.speaker = user, found.person is None, found.to_json()
        events.user = user
        return replace(request, user=user, guest=found.person is None, speaker=found)

    async def _enrolment(self, request: TurnRequest, transcript: str,
                         events: TurnEvents) -> EnrolmentReply | None:
        """This turn's step of an enrolment by voice, when it is one (its own stage)."""
        assert self.enrolment is not None
        if not (self.enrolment.in_progress(request.device)
                or ASKS.search(transcript)):
            return None
        await events.emit(StageStarted(stage="voice_enrolment"))
        try:
            said = await self.enrolment.answer(request, transcript)
        except Exception as exc:  # noqa: BLE001 - the turn goes on as an ordinary one
            log.warning("enrolment by voice failed: %s", exc)
            await events.emit(StageEnded(stage="voice_enrolment", error=str(exc)))
            return None
        await events.emit(StageEnded(stage="voice_enrolment",
                                     note=said.step if said else "not an answer"))
        return said

    async def open_recognition(self, user: str, sample_rate: int, *,
                               guest: bool = False) -> RecognitionStream | None:
        """A recognition stream for ``user``'s next utterance, biased as a turn's
        recognition is (their memory vocabulary, none for a ``guest``, and the tools'
        phrases, asked under the same small budget), or None without an ASR. The
        caller feeds it audio at ``sample_rate`` while the person speaks and hands it
        to the turn (``TurnRequest.recognition``), which finishes it; a stream not
        handed over must be cancelled. A recogniser that cannot stream gives the
        buffering stream (``transcribe`` at finish)."""
        if self.asr is None:
            return None
        context = await self._recognition_context(user, guest)
        return self.asr.open_stream(context, sample_rate)

    async def _recognition_context(self, user: str, guest: bool) -> RecognitionContext:
        assert self.asr is not None
        return await recognition_context(
            None if guest else self.memory, user, self.asr.config.memory_vocabulary,
            tool_phrases=self.tools.recognition_phrases())

    # -- stages ----------------------------------------------------------------------
    async def _transcribe(self, request: TurnRequest, events: TurnEvents) -> str:
        if request.text is not None:
            # A device's own recogniser may send anything; HTTP clients were refused.
            return strip_controls(request.text, line_breaks=True).strip()
        if request.recognition is not None:
            return await self._finish_recognition(request.recognition, events)
        if request.audio is None:
            raise OmoideError("a turn needs text or audio")
        if self.asr is None:
            raise OmoideError("no ASR configured for audio turns")
        context = await self._recognition_context(request.user, request.guest)
        await events.emit(StageStarted(stage="asr", component=self.asr.name))
        try:
            result = await self.asr.transcribe(request.audio, context)
        except OmoideError as exc:
            await events.emit(StageEnded(stage="asr", error=str(exc)))
            raise
        await events.emit(StageEnded(
            stage="asr", note=f"{len(context.vocabulary)} memory and tool words as context"
            if context else None))
        return result.text

    async def _finish_recognition(self, stream: RecognitionStream,
                                  events: TurnEvents) -> str:
        """The final transcript of an utterance recognised while it was spoken: the
        ``asr`` stage is what was left to decode after the end of speech."""
        await events.emit(StageStarted(stage="asr", component=stream.asr.name))
        try:
            result = await stream.finish()
        except asyncio.CancelledError:
            await stream.cancel()
            raise
        except OmoideError as exc:
            await events.emit(StageEnded(stage="asr", error=str(exc)))
            raise
        words = len(stream.context.vocabulary) if stream.context else 0
        await events.emit(StageEnded(stage="asr", note=(
            f"recognised while spoken ({stream.duration_s:.1f} s streamed"
            + (f", {words} memory and tool words as context)" if words else ")"))))
        return result.text

    async def _recall(self, user: str, text: str, now: datetime, events: TurnEvents,
                      reply: _Reply, shared: str | None = None) -> Recall | None:
        """Memories for the turn (with the household's ``shared`` ones, when given:
        :mod:`omoide.voices.household_memory`); a failure or the time budget running out
        leaves the turn without memory and says so (``Degraded``)."""
        if self.memory is None:
            return None
        await events.emit(StageStarted(stage="retrieve",
                                       component=getattr(self.memory, "engine_name", None)))
        added = 0
        try:
            recall, household = await asyncio.gather(
                self.memory.recall(user, text, now), self._shared_recall(shared, text, now))
            recall, added = with_shared(recall, household)
        except Exception as exc:
            log.exception("retrieval failed for %s", user)
            error = f"{type(exc).__name__}: {exc}"
            await events.emit(StageEnded(stage="retrieve", error=error))
            await self._recalled(events, reply, None, [
                f"memory: recall failed ({error}); no memory this turn"])
            return None
        note = f"{len(recall.memories)} memories" + (
            f" ({added} shared by the household)" if added else "")
        notes: list[str] = []
        if recall.timed_out:
            note = "time budget exceeded: no memory this turn"
            spent = recall.timings_ms.get("total")
            notes.append("memory: recall ran past its time budget"
                         + (f" ({spent:.0f} ms)" if spent is not None else "")
                         + "; no memory this turn")
        elif recall.error:
            notes.append(f"memory: recall failed ({recall.error}); no memory this turn")
        notes.extend(f"memory: {shortfall}" for shortfall in recall.shortfalls)
        await events.emit(StageEnded(stage="retrieve", error=recall.error, note=note))
        await self._recalled(events, reply, recall, notes)
        return recall

    async def _shared_recall(self, owner: str | None, text: str,
                             now: datetime) -> Recall | None:
        """The household's shared memories for ``text`` (None: none, or they failed)."""
        if owner is None or self.memory is None:
            return None
        try:
            return await self.memory.recall(owner, text, now)
        except Exception as exc:  # noqa: BLE001 - the person's own memories still count
            log.warning("recall of the household's shared memories failed: %s", exc)
            return None

    async def _guest_recall(self, events: TurnEvents) -> None:
        """A guest's turn recalls nothing: the ``retrieve`` stage says why."""
        await events.emit(StageStarted(stage="retrieve"))
        await events.emit(StageEnded(stage="retrieve",
                                     note="guest: no one's memory is read or written"))
        await events.emit(Recalled(memories=(), profile=(), degraded=()))

    async def _recalled(self, events: TurnEvents, reply: _Reply, recall: Recall | None,
                        notes: list[str]) -> None:
        await events.emit(Recalled(memories=tuple(recall.memories) if recall else (),
                                   profile=tuple(recall.profile.facts) if recall else (),
                                   degraded=tuple(notes)))
        for note in notes:
            reply.degraded.append(note)
            await events.emit(Degraded(note=note))

    async def _prompt(self, request: TurnRequest, transcript: str, recall: Recall | None,
                      now: datetime, events: TurnEvents) -> list[ChatMessage]:
        conversation = request.conversation   # a chat client keeps its own history
        history = [] if conversation else await self.history.recent_async(
            _history_key(request), now)
        await events.emit(StageStarted(stage="prompt"))
        context = PromptContext(request.user, now, transcript, recall.memories if recall
                                else [], history, self.settings, request.device,
                                recall.profile if recall else Profile())
        sections = self._sections(context)
        if conversation is not None:
            sections = with_client_system(sections, conversation)
        system = assemble_system_prompt(sections)
        messages = (build_messages(system, history, transcript) if conversation is None
                    else client_messages(system, conversation, transcript))
        await events.emit(StageEnded(stage="prompt"))
        await events.emit(PromptBuilt(messages=tuple(messages)))
        return messages

    def _sections(self, context: PromptContext) -> list[PromptSection]:
        return self._hooks.prompt_sections(context)

    async def _opener(self, request: TurnRequest, now: datetime) -> str:
        for opener in self.openers:
            try:
                words = await opener(request, now)
            except Exception:  # an opener must never cost the turn its reply
                log.exception("a reply opener failed")
                continue
            if words:
                return words
        return ""

    async def _speak_reply(self, request: TurnRequest, messages: list[ChatMessage],
                           events: TurnEvents, reply: _Reply) -> None:
        """Stream the chat reply into sentences, synthesise ahead, deliver in order.

        The chat runs in its own task; what it reports (its start and end, the first
        token, the face, tool calls, its failure) travels through the same queue as its
        sentences, so every event is emitted from here, in order, and the chat never
        waits for a device playing audio."""
        queue: asyncio.Queue[_Queued | None] = asyncio.Queue()
        lookahead = asyncio.Semaphore(self.settings.tts_lookahead)
        speak = request.speak and self.tts is not None
        tts_name = self.tts.name if self.tts else None

        async def synthesize(sentence: str) -> tuple[AudioClip | None, str | None]:
            assert self.tts is not None
            async with lookahead:
                try:
                    return await self.tts.synthesize(sentence), None
                except Exception as exc:  # noqa: BLE001 - a failed sentence is still shown
                    note = f"tts failed for {sentence!r}: {exc}"
                    reply.degraded.append(note)
                    log.warning("tts failed for %r: %s", sentence, exc)
                    return None, note

        async def produce() -> None:
            try:
                async for sentence in self._sentences(request, messages, queue.put_nowait,
                                                      reply):
                    task = asyncio.create_task(synthesize(sentence)) if speak else None
                    await queue.put((sentence, task))
            finally:
                await queue.put(None)

        if speak:
            await events.emit(StageStarted(stage="tts", component=tts_name))
        producer = asyncio.create_task(produce())
        pending: list[asyncio.Task[tuple[AudioClip | None, str | None]]] = []
        try:
            while (item := await queue.get()) is not None:
                if not isinstance(item, tuple):
                    await events.emit(item)
                    continue
                sentence, task = item
                audio, failure = None, None
                if task is not None:
                    pending.append(task)
                    audio, failure = await task
                if failure is not None:
                    await events.emit(Degraded(note=failure))
                reply.sentences.append(sentence)
                reply.audio.append(audio)
                await events.emit(Sentence(text=sentence, emotion=reply.emotion, audio=audio,
                                           component=tts_name if audio is not None else None))
            await producer
        finally:
            await self._stop_speaking(producer, pending, queue, events, speak)

    async def _stop_speaking(self, producer: asyncio.Task[None],
                             pending: list[asyncio.Task[tuple[AudioClip | None, str | None]]],
                             queue: asyncio.Queue[_Queued | None], events: TurnEvents,
                             speak: bool) -> None:
        """Cancel what still runs (after a barge-in), emit the chat's events not yet
        delivered (the trace keeps its tool calls), and end the ``tts`` stage."""
        for t in [producer, *pending]:
            if not t.done():
                t.cancel()
        # drain queued TTS tasks so none is left running after a barge-in
        undelivered: list[TurnEvent] = []
        while not queue.empty():
            item = queue.get_nowait()
            if isinstance(item, tuple):
                if item[1] is not None:
                    item[1].cancel()
            elif item is not None:
                undelivered.append(item)
        for event in undelivered:
            await events.emit(event)
        if speak:
            await events.emit(StageEnded(stage="tts"))

    async def _sentences(self, request: TurnRequest, messages: list[ChatMessage],
                         relay: Callable[[TurnEvent], None], reply: _Reply
                         ) -> AsyncIterator[str]:
        """Yield complete sentences of the reply; handles the emotion tag and tool calls.
        Events are handed to ``relay`` (they are emitted in order with the sentences)."""
        splitter = SentenceSplitter(
            first_sentence_comma_split=self.settings.first_sentence_comma_split)
        parser = StreamingEmotionParser()
        chat = request.chat or self.chat
        relay(StageStarted(stage="chat", component=chat.name))
        emotion_sent = first_token = False

        def add_text(text: str) -> list[str]:
            before = len(reply.text)
            reply.text += text
            sentences = splitter.feed(text)
            if sentences and reply.opener:
                text, sentences = _opener_after_first(reply, before, text, sentences)
            if request.stream_text and text:
                relay(ReplyText(text=text))
            return sentences

        def emit(text: str) -> list[str]:
            nonlocal emotion_sent
            tagged = parser.feed(text)
            if tagged is None:
                return []
            if not emotion_sent:
                reply.emotion = tagged.emotion
                emotion_sent = True
                relay(EmotionChosen(emotion=tagged.emotion))
            return add_text(tagged.text)

        tools = self.tools.for_turn(request, request.now or datetime.now(UTC))
        rounds = self.tools.settings.max_rounds
        try:
            messages = await tools.settle_confirmation(messages, relay)
            for round_ in range(rounds + 1):
                calls: list[ToolCall] = []
                # the last round offers no tools: the model has to answer
                offered = tools.specs if round_ < rounds else ()
                async for delta in chat.stream(messages, tools=offered):
                    if delta.tool_call is not None:
                        calls.append(delta.tool_call)
                        continue
                    if delta.text:
                        if not first_token:
                            first_token = True
                            relay(FirstToken(component=chat.name))
                        for s in emit(delta.text):
                            yield s
                if not calls or not tools:
                    break
                reply.client_tool_calls = tools.client_calls(calls)
                if reply.client_tool_calls:   # the client runs its own tools
                    break
                messages = [*messages, ChatMessage("assistant", "", tool_calls=tuple(calls))]
                results = await asyncio.gather(*(self._call_tool(tools, call, relay)
                                                 for call in calls))
                messages += [ChatMessage("tool", result, tool_call_id=call.id)
                             for call, result in zip(calls, results, strict=True)]
            relay(StageEnded(stage="chat"))
        except Exception as exc:  # noqa: BLE001 - a failing chat model degrades the turn
            _note_chat_failure(exc, reply, relay)
            if not reply.text.strip():
                reply.emotion = Emotion.SAD
                if not emotion_sent:
                    emotion_sent = True
                    relay(EmotionChosen(emotion=Emotion.SAD))
                reply.text = reply.opener = ""   # an apology opens with nothing else
                for s in add_text(APOLOGY):
                    yield s
        for s in _reply_end(request, reply, parser, splitter, relay, add_text, emotion_sent):
            yield s

    async def _call_tool(self, tools: TurnTools, call: ToolCall,
                         relay: Callable[[TurnEvent], None]) -> str:
        """One tool call; failures come back as an error text for the model (never raise)."""
        return await tools.call(call, relay)

    # -- bookkeeping -----------------------------------------------------------------
    async def _finish(self, request: TurnRequest, transcript: str, reply: _Reply,
                      recall: Recall | None, trace: TurnTrace, events: TurnEvents,
                      now: datetime, interrupted: bool) -> TurnResult:
        """Journal the exchange (when something was heard), record the trace, tell the
        observers, and emit ``Done`` with the result."""
        if request.recognition is not None:   # a turn that ended before recognising
            await request.recognition.cancel()
        exchange = None
        if transcript:
            exchange = Exchange(uuid.uuid4().hex, _history_key(request), transcript,
                                reply.text.strip() if not interrupted else
                                "".join(reply.sentences), now, request.session_id)
            if request.conversation is None and not reply.private:   # a chat client
                await self.history.add_async(exchange)               # keeps its own
            if request.guest or reply.client_tool_calls or reply.private:
                # a guest's is no one's: not journaled, extracted or in the feed; a reply
                # waiting on the client's tools is journaled when the client comes back
                exchange = None
            else:
                await self._journal(exchange, reply, events)
        self.traces.record(trace)
        if exchange is not None:
            self._hooks.turn_completed(CompletedTurn(
                exchange, trace, tuple(recall.memories if recall else ()), interrupted,
                reply.emotion, tuple(reply.degraded),
                recall.profile.facts if recall else ()))
        result = self._result(events.turn_id, request, transcript, reply, recall, trace,
                              interrupted)
        try:
            await events.emit(Done(result=result, exchange=exchange))
        except Exception:  # the turn is over: a subscriber failing now changes nothing
            log.exception("a subscriber failed on the end of turn %s", events.turn_id)
        return result

    async def _journal(self, exchange: Exchange, reply: _Reply, events: TurnEvents) -> None:
        try:
            if self.memory is not None:
                await self.memory.record_exchange(exchange)
        except Exception as exc:  # noqa: BLE001 - the turn still answers, and says so
            log.error("journaling failed for user %s: %s", exchange.user, exc)
            note = (f"memory: {exc}" if isinstance(exc, OmoideError) else
                    f"memory: journaling this exchange failed ({type(exc).__name__}: {exc})")
            reply.degraded.append(note)
            with contextlib.suppress(Exception):
                await events.emit(Degraded(note=note))

    def _result(self, turn_id: str, request: TurnRequest, transcript: str, reply: _Reply,
                recall: Recall | None, trace: TurnTrace, interrupted: bool) -> TurnResult:
        return TurnResult(turn_id, request.user, transcript, reply.text.strip(), reply.emotion,
                          list(recall.memories) if recall else [], reply.sentences, reply.audio,
                          trace.to_json(), reply.degraded, interrupted=interrupted,
                          profile=list(recall.profile.facts) if recall else [],
                          client_tool_calls=reply.client_tool_calls)


def _reply_end(request: TurnRequest, reply: _Reply, parser: StreamingEmotionParser,
               splitter: SentenceSplitter, relay: Callable[[TurnEvent], None],
               add_text: Callable[[str], list[str]], emotion_sent: bool) -> Iterator[str]:
    """The sentences left when the chat model is done (the emotion tag's tail, what the
    splitter held), the emotion chosen if no tag came, and the opener after the one
    sentence left if none ended before (events relayed in order with the sentences)."""
    tail = parser.finish()
    if not emotion_sent:
        reply.emotion = tail.emotion
        relay(EmotionChosen(emotion=tail.emotion))
    yield from add_text(tail.text)
    rest = splitter.flush()
    if reply.opener:   # no sentence ended before: the opener follows the one left
        opened, rest = _opener_after_first(reply, len(reply.text), "", rest)
        if request.stream_text and opened:
            relay(ReplyText(text=opened))
    yield from rest


def _opener_after_first(reply: _Reply, before: int, text: str,
                        sentences: list[str]) -> tuple[str, list[str]]:
    """Put the reply's opener after its first sentence (or alone, when there is none):
    in ``reply.text``, in ``text`` (what was added from ``before`` on) and among the
    ``sentences``; the opener is spent."""
    words, reply.opener = reply.opener.strip(), ""
    said = split_sentences(words)
    if not sentences:
        reply.text += words
        return text + words, said
    first = sentences[0]
    found = reply.text.find(first)   # the reply's first sentence
    end = found + len(first) if found >= 0 else len(reply.text)
    if first[-1] not in _ENDED:   # 「おかえり」 then 「そういえば…」: a full stop between
        first, words = first + "。", "。" + words
    reply.text = reply.text[:end] + words + reply.text[end:]
    cut = min(max(end - before, 0), len(text))
    return text[:cut] + words + text[cut:], [first, *said, *sentences[1:]]


_ENDED = frozenset("。．.！!？?、，,…‥」』）)")


def _history_key(request: TurnRequest) -> str:
    """Whose short-term history a turn continues: the person's, or for a guest the
    device's guest conversation (never a person's)."""
    return f"{request.user}@{request.device or '-'}" if request.guest else request.user


class _Said:
    """A reply the core decided (an enrolment step), streamed as a chat model's."""

    name = "voice_enrolment"

    def __init__(self, text: str) -> None:
        self.text = text

    async def stream(self, messages: Sequence[ChatMessage], *,
                     tools: Sequence[ToolSpec] = (), json_output: bool = False
                     ) -> AsyncIterator[ChatDelta]:
        yield ChatDelta(text=f"[neutral] {self.text}")


class ExtractionScheduler:
    """Observer plugin: tells the memory service about each completed turn."""

    def __init__(self, memory: MemoryService) -> None:
        self._memory = memory

    @hookimpl
    def on_turn_completed(self, turn: CompletedTurn) -> None:
        self._memory.note_turn_completed(turn.exchange)


def _note_chat_failure(exc: Exception, reply: _Reply,
                       relay: Callable[[TurnEvent], None]) -> None:
    """The chat stage ended with ``exc``: said in the trace, the log and the turn's
    degraded notes (the reply goes on with what it has, or an apology)."""
    relay(StageEnded(stage="chat", error=f"{type(exc).__name__}: {exc}"))
    log.warning("chat failed: %s", exc)
    reply.degraded.append(f"chat failed: {exc}")
    relay(Degraded(note=f"chat failed: {exc}"))
