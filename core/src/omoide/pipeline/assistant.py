"""One turn, end to end: asr -> retrieve -> prompt -> chat (streamed) -> split -> tts.

TTS is pipelined with generation: each sentence is synthesised as soon as the
splitter completes it (up to ``tts_lookahead`` ahead of playback), while the sink
is still playing the previous one. Failures degrade the turn instead of ending it:
a failed retrieval means no memory, a failed chat model an apology, a failed
sentence is shown without audio. Every exchange is journaled before observers
(extraction scheduling) hear of it.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pluggy

from omoide.components import ASR, TTS, ChatModel
from omoide.config import AssistantSettings, ToolCallSettings
from omoide.errors import OmoideError
from omoide.hooks import Hooks
from omoide.hookspecs import hookimpl
from omoide.memory.api import MemoryService, Recall
from omoide.memory.recall.profile import Profile
from omoide.pipeline.emotion import StreamingEmotionParser
from omoide.pipeline.history import ConversationHistory
from omoide.pipeline.prompt import (
    PromptContext,
    PromptSection,
    assemble_system_prompt,
    build_messages,
)
from omoide.pipeline.recognition import recognition_context
from omoide.pipeline.splitter import SentenceSplitter
from omoide.pipeline.tools import ToolRunner, TurnTools
from omoide.pipeline.trace import TraceLog, TurnTrace
from omoide.pipeline.turn import CompletedTurn, TurnRequest, TurnResult, TurnSink
from omoide.types import AudioClip, ChatMessage, Emotion, Exchange, ToolCall

log = logging.getLogger("omoide.pipeline")

APOLOGY = "ごめんね、今ちょっと考えがまとまらないみたい。もう一度話しかけてくれる？"


@dataclass
class _Reply:
    """Mutable state of the reply being produced."""

    emotion: Emotion = Emotion.NEUTRAL
    text: str = ""
    sentences: list[str] = field(default_factory=list)
    audio: list[AudioClip | None] = field(default_factory=list)
    degraded: list[str] = field(default_factory=list)


class Assistant:
    """Runs turns over a set of started components.

    ``memory`` may be None (no long-term memory); ``hooks`` is the plugin manager
    whose ``prompt_sections`` and ``on_turn_completed`` hooks are called.
    """

    def __init__(self, *, settings: AssistantSettings, asr: ASR | None, chat: ChatModel,
                 tts: TTS | None, memory: MemoryService | None, hooks: pluggy.PluginManager,
                 traces: TraceLog | None = None, tools: ToolRunner | None = None) -> None:
        self.settings = settings
        self.asr = asr
        self.chat = chat
        self.tts = tts
        self.memory = memory
        self.hooks = hooks
        self._hooks = Hooks(hooks)
        self.traces = traces or TraceLog(None)
        self.tools = tools or ToolRunner([], ToolCallSettings(), settings.timezone)
        self.history = ConversationHistory(
            settings.history_exchanges, timedelta(minutes=settings.history_window_minutes))

    async def run_turn(self, request: TurnRequest, sink: TurnSink) -> TurnResult:
        """Run one turn. Cancelling it (barge-in) journals what was said and re-raises."""
        turn_id = uuid.uuid4().hex[:12]
        trace = TurnTrace(turn_id, request.user, device=request.device)
        if request.end_of_speech_at is not None:
            trace.t0 = request.end_of_speech_at
        trace.mark("end_of_speech")
        now = request.now or datetime.now(UTC)
        reply = _Reply()
        transcript = ""
        recall: Recall | None = None
        interrupted = False
        try:
            transcript = await self._transcribe(request, trace)
            await sink.on_transcript(transcript)
            if not transcript:
                trace.mark("done", note="nothing heard")
                return self._result(turn_id, request, transcript, reply, recall, trace)
            recall = await self._recall(request.user, transcript, now, trace, reply.degraded)
            history = self.history.recent(request.user, now)
            trace.begin("prompt")
            context = PromptContext(request.user, now, transcript, recall.memories if recall
                                    else [], history, self.settings, request.device,
                                    recall.profile if recall else Profile())
            system = assemble_system_prompt(self._sections(context))
            messages = build_messages(system, history, transcript)
            trace.end("prompt")
            await self._speak_reply(request, messages, sink, trace, reply)
            trace.mark("done")
        except asyncio.CancelledError:
            interrupted = True
            trace.mark("done", note="interrupted (barge-in)")
            raise
        finally:
            if transcript:
                await asyncio.shield(self._finish(request, transcript, reply, recall, trace,
                                                  now, interrupted))
            else:
                self.traces.record(trace)
        return self._result(turn_id, request, transcript, reply, recall, trace)

    # -- stages ----------------------------------------------------------------------
    async def _transcribe(self, request: TurnRequest, trace: TurnTrace) -> str:
        if request.text is not None:
            return request.text.strip()
        if request.audio is None:
            raise OmoideError("a turn needs text or audio")
        if self.asr is None:
            raise OmoideError("no ASR configured for audio turns")
        context = await recognition_context(
            self.memory, request.user, self.asr.config.memory_vocabulary,
            tool_phrases=self.tools.recognition_phrases())
        trace.begin("asr", self.asr.name)
        try:
            result = await self.asr.transcribe(request.audio, context)
        except OmoideError as exc:
            trace.end("asr", error=str(exc))
            raise
        trace.end("asr", note=f"{len(context.vocabulary)} memory and tool words as context"
                  if context else None)
        return result.text

    async def _recall(self, user: str, text: str, now: datetime, trace: TurnTrace,
                      degraded: list[str]) -> Recall | None:
        """Memories for the turn; a failure or the time budget running out leaves the turn
        without memory and says so in ``degraded``."""
        if self.memory is None:
            return None
        trace.begin("retrieve", getattr(self.memory, "engine_name", None))
        try:
            recall = await self.memory.recall(user, text, now)
        except Exception as exc:
            log.exception("retrieval failed for %s", user)
            trace.end("retrieve", error=f"{type(exc).__name__}: {exc}")
            degraded.append(f"memory: recall failed ({type(exc).__name__}: {exc});"
                            " no memory this turn")
            return None
        note = f"{len(recall.memories)} memories"
        if recall.timed_out:
            note = "time budget exceeded: no memory this turn"
            spent = recall.timings_ms.get("total")
            degraded.append("memory: recall ran past its time budget"
                            + (f" ({spent:.0f} ms)" if spent is not None else "")
                            + "; no memory this turn")
        elif recall.error:
            degraded.append(f"memory: recall failed ({recall.error}); no memory this turn")
        degraded.extend(f"memory: {shortfall}" for shortfall in recall.shortfalls)
        trace.end("retrieve", error=recall.error, note=note)
        return recall

    def _sections(self, context: PromptContext) -> list[PromptSection]:
        return self._hooks.prompt_sections(context)

    async def _speak_reply(self, request: TurnRequest, messages: list[ChatMessage],
                           sink: TurnSink, trace: TurnTrace, reply: _Reply) -> None:
        """Stream the chat reply into sentences, synthesise ahead, deliver in order."""
        queue: asyncio.Queue[tuple[str, asyncio.Task[AudioClip | None] | None] | None] = \
            asyncio.Queue()
        lookahead = asyncio.Semaphore(self.settings.tts_lookahead)
        speak = request.speak and self.tts is not None

        async def synthesize(sentence: str) -> AudioClip | None:
            assert self.tts is not None
            async with lookahead:
                try:
                    return await self.tts.synthesize(sentence)
                except Exception as exc:  # noqa: BLE001 - a failed sentence is still shown
                    reply.degraded.append(f"tts failed for {sentence!r}: {exc}")
                    log.warning("tts failed for %r: %s", sentence, exc)
                    return None

        async def produce() -> None:
            try:
                async for sentence in self._sentences(request, messages, sink, trace, reply):
                    task = asyncio.create_task(synthesize(sentence)) if speak else None
                    await queue.put((sentence, task))
            finally:
                await queue.put(None)

        producer = asyncio.create_task(produce())
        pending: list[asyncio.Task[AudioClip | None]] = []
        if speak:
            trace.begin("tts", self.tts.name if self.tts else None)
        try:
            while (item := await queue.get()) is not None:
                sentence, task = item
                audio = None
                if task is not None:
                    pending.append(task)
                    audio = await task
                    if audio is not None:
                        trace.mark("first_sentence_audio", self.tts.name if self.tts else None)
                reply.sentences.append(sentence)
                reply.audio.append(audio)
                await sink.on_sentence(sentence, audio)
            await producer
        finally:
            for t in [producer, *pending]:
                if not t.done():
                    t.cancel()
            # drain queued TTS tasks so none is left running after a barge-in
            while not queue.empty():
                item = queue.get_nowait()
                if item is not None and item[1] is not None:
                    item[1].cancel()
            if speak:
                trace.end("tts")

    async def _sentences(self, request: TurnRequest, messages: list[ChatMessage],
                         sink: TurnSink, trace: TurnTrace, reply: _Reply
                         ) -> AsyncIterator[str]:
        """Yield complete sentences of the reply; handles the emotion tag and tool calls."""
        splitter = SentenceSplitter(
            first_sentence_comma_split=self.settings.first_sentence_comma_split)
        parser = StreamingEmotionParser()
        trace.begin("chat", self.chat.name)
        emotion_sent = False

        async def emit(text: str) -> list[str]:
            nonlocal emotion_sent
            tagged = parser.feed(text)
            if tagged is None:
                return []
            if not emotion_sent:
                reply.emotion = tagged.emotion
                emotion_sent = True
                await sink.on_emotion(tagged.emotion)
            reply.text += tagged.text
            return splitter.feed(tagged.text)

        tools = self.tools.for_turn(request, request.now or datetime.now(UTC))
        rounds = self.tools.settings.max_rounds
        try:
            messages = await tools.settle_confirmation(messages, trace)
            for round_ in range(rounds + 1):
                calls: list[ToolCall] = []
                # the last round offers no tools: the model has to answer
                offered = tools.specs if round_ < rounds else ()
                async for delta in self.chat.stream(messages, tools=offered):
                    if delta.tool_call is not None:
                        calls.append(delta.tool_call)
                        continue
                    if delta.text:
                        trace.mark("chat_first_token", self.chat.name)
                        for s in await emit(delta.text):
                            yield s
                if not calls or not tools:
                    break
                messages = [*messages, ChatMessage("assistant", "", tool_calls=tuple(calls))]
                results = await asyncio.gather(*(self._call_tool(tools, call, trace)
                                                 for call in calls))
                messages += [ChatMessage("tool", result, tool_call_id=call.id)
                             for call, result in zip(calls, results, strict=True)]
            trace.end("chat")
        except Exception as exc:  # noqa: BLE001 - a failing chat model degrades the turn
            trace.end("chat", error=f"{type(exc).__name__}: {exc}")
            log.warning("chat failed: %s", exc)
            reply.degraded.append(f"chat failed: {exc}")
            if not reply.text.strip():
                reply.emotion = Emotion.SAD
                if not emotion_sent:
                    emotion_sent = True
                    await sink.on_emotion(Emotion.SAD)
                reply.text = APOLOGY
                for s in splitter.feed(APOLOGY):
                    yield s
        tail = parser.finish()
        if not emotion_sent:
            reply.emotion = tail.emotion
            await sink.on_emotion(tail.emotion)
        if tail.text:
            reply.text += tail.text
            for s in splitter.feed(tail.text):
                yield s
        for s in splitter.flush():
            yield s

    async def _call_tool(self, tools: TurnTools, call: ToolCall, trace: TurnTrace) -> str:
        """One tool call; failures come back as an error text for the model (never raise)."""
        return await tools.call(call, trace)

    # -- bookkeeping -----------------------------------------------------------------
    async def _finish(self, request: TurnRequest, transcript: str, reply: _Reply,
                      recall: Recall | None, trace: TurnTrace, now: datetime,
                      interrupted: bool) -> None:
        exchange = Exchange(uuid.uuid4().hex, request.user, transcript,
                            reply.text.strip() if not interrupted else
                            "".join(reply.sentences), now, request.session_id)
        try:
            if self.memory is not None:
                await self.memory.record_exchange(exchange)
        except Exception as exc:  # noqa: BLE001 - the turn still answers, and says so
            log.error("journaling failed for user %s: %s", request.user, exc)
            reply.degraded.append(f"memory: {exc}" if isinstance(exc, OmoideError) else
                                  f"memory: journaling this exchange failed"
                                  f" ({type(exc).__name__}: {exc})")
        self.history.add(exchange)
        self.traces.record(trace)
        self._hooks.turn_completed(CompletedTurn(
            exchange, trace, tuple(recall.memories if recall else ()), interrupted,
            reply.emotion, tuple(reply.degraded),
            recall.profile.facts if recall else ()))

    def _result(self, turn_id: str, request: TurnRequest, transcript: str, reply: _Reply,
                recall: Recall | None, trace: TurnTrace) -> TurnResult:
        return TurnResult(turn_id, request.user, transcript, reply.text.strip(), reply.emotion,
                          list(recall.memories) if recall else [], reply.sentences, reply.audio,
                          trace.to_json(), reply.degraded,
                          profile=list(recall.profile.facts) if recall else [])


class ExtractionScheduler:
    """Observer plugin: tells the memory service about each completed turn."""

    def __init__(self, memory: MemoryService) -> None:
        self._memory = memory

    @hookimpl
    def on_turn_completed(self, turn: CompletedTurn) -> None:
        self._memory.note_turn_completed(turn.exchange)


