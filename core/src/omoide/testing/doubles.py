"""Test doubles for every component kind, with fixed, configurable latencies.

They are registered under the name ``fake`` through the ``testing`` plugin (the
same entry-point path a third-party plugin takes), so a config can say
``asr: {use: fake, text: ...}``. They are for tests and benchmarks, never for use.
"""

from __future__ import annotations

import asyncio
import bisect
import hashlib
import json
import math
import re
import time
import unicodedata
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from pydantic import Field

from omoide.components import (
    ASR,
    TTS,
    VAD,
    AnnounceOutcome,
    ASRConfig,
    ChatConfig,
    ChatModel,
    Embedder,
    EmbedderConfig,
    RecognitionContext,
    Tool,
    ToolConfig,
    ToolContext,
    ToolError,
    ToolFunction,
    TTSConfig,
    VADConfig,
    VectorStore,
)
from omoide.components.speaker import SpeakerEncoder
from omoide.components.store import ScrollPage, StoreCapabilities, VectorStoreConfig
from omoide.components.turn import TurnDetector
from omoide.components.turn_events import Sentence, StageEnded, StageStarted, TurnEvent
from omoide.components.vad import EndOfSpeechDetector
from omoide.errors import ComponentError
from omoide.types import (
    AudioClip,
    ChatDelta,
    ChatMessage,
    EmbedderFingerprint,
    EmbedPurpose,
    Emotion,
    FloatArray,
    Priority,
    ToolCall,
    ToolSpec,
    Transcript,
    VectorHit,
    VectorRecord,
)

DOUBLE = "a test double, not for real use"
AnyEvent = TypeVar("AnyEvent")


class FakeASRConfig(ASRConfig):
    text: str = Field("こんにちは", description="Transcript returned for any audio.")
    latency_ms: float = Field(0.0, ge=0, description="Simulated recognition time.")


class FakeASR(ASR):
    """Returns ``text`` for any audio after ``latency_ms``; records each request's
    recognition context in ``contexts`` (what tests of memory-biased recognition read)."""

    name = "fake"
    Config = FakeASRConfig
    config: FakeASRConfig
    stand_in = DOUBLE

    def __init__(self, config: FakeASRConfig) -> None:
        super().__init__(config)
        self.durations_ms: list[float] = []
        """How long each call really took (benchmarks subtract it from turn times)."""
        self.contexts: list[RecognitionContext] = []
        """The context each call received, after the core merged in the hotwords."""

    async def _transcribe(self, audio: AudioClip, context: RecognitionContext) -> Transcript:
        started = time.perf_counter()
        self.contexts.append(context)
        await asyncio.sleep(self.config.latency_ms / 1000)
        self.durations_ms.append((time.perf_counter() - started) * 1000)
        return Transcript(self.config.text, self.config.language)


class FakeVAD(VAD):
    """Speech = frame RMS above 0.02 (good enough for synthetic test audio)."""

    name = "fake"
    Config = VADConfig
    stand_in = DOUBLE

    def new_state(self) -> Any:
        return None

    def _speech_probability(self, frame: FloatArray, state: Any) -> float:
        rms = float(np.sqrt(np.mean(frame.astype(np.float64) ** 2)))
        return min(1.0, rms / 0.02 * 0.5)


class FakeChatConfig(ChatConfig):
    reply: str = Field("[happy] はい、元気です。あなたはどう？", description="Reply text.")
    first_token_ms: float = Field(0.0, ge=0, description="Delay before the first piece.")
    per_token_ms: float = Field(0.0, ge=0, description="Delay between pieces.")
    chunk_chars: int = Field(2, ge=1, description="Characters per streamed piece.")
    fail_with: str | None = Field(None, description="Raise this message instead of replying.")
    echo_memories: bool = Field(
        False, description="Append the <retrieved_memory> block to the reply (tests).")
    call_tools: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Tool calls ({name, arguments}) made before replying when the turn offers "
                    "tools and the last message is the user's; after the results, `reply`.")


class FakeChat(ChatModel):
    """Streams ``reply`` in ``chunk_chars`` pieces with fixed delays; records requests."""

    name = "fake"
    Config = FakeChatConfig
    config: FakeChatConfig
    stand_in = DOUBLE

    def __init__(self, config: FakeChatConfig) -> None:
        super().__init__(config)
        self.requests: list[list[ChatMessage]] = []
        self.offered: list[list[ToolSpec]] = []
        """The tools offered with each request."""
        self.tool_calls_done_at: list[float] = []
        """``perf_counter`` when each tool-calling round finished streaming its calls."""
        self.started_at: list[float] = []
        """``perf_counter`` when each request started."""
        self.token_times_ms: list[float] = []
        """When each piece of the last reply was yielded, ms after the call started."""

    async def _stream(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec],
                      json_output: bool) -> AsyncIterator[ChatDelta]:
        self.started_at.append(time.perf_counter())
        self.requests.append(list(messages))
        self.offered.append(list(tools))
        cfg = self.config
        if cfg.fail_with:
            raise ComponentError(cfg.fail_with, retryable=False)
        if cfg.call_tools and tools and messages and messages[-1].role == "user":
            await asyncio.sleep(cfg.first_token_ms / 1000)
            for i, call in enumerate(cfg.call_tools):
                arguments = call.get("arguments", {})
                yield ChatDelta(tool_call=ToolCall(
                    f"call_{i}", str(call["name"]),
                    arguments if isinstance(arguments, str) else json.dumps(arguments)))
            self.tool_calls_done_at.append(time.perf_counter())
            return
        reply = cfg.reply
        if cfg.echo_memories:
            block = re.search(r"<retrieved_memory>.*?</retrieved_memory>",
                              messages[0].content, re.S)
            reply += block.group(0) if block else "(no memory)"
        started = time.perf_counter()
        self.token_times_ms = []
        await asyncio.sleep(cfg.first_token_ms / 1000)
        for i in range(0, len(reply), cfg.chunk_chars):
            if i:
                await asyncio.sleep(cfg.per_token_ms / 1000)
            self.token_times_ms.append((time.perf_counter() - started) * 1000)
            yield ChatDelta(text=reply[i:i + cfg.chunk_chars])


class FakeTTSConfig(TTSConfig):
    latency_ms: float = Field(0.0, ge=0, description="Simulated synthesis time per sentence.")
    sample_rate: int = Field(24000, gt=0, description="Output sample rate.")
    ms_per_char: float = Field(60.0, gt=0, description="Audio length per character.")
    fail_on: str | None = Field(None, description="Fail for sentences containing this text.")


class FakeTTS(TTS):
    """A 440 Hz tone as long as the text would take to say."""

    name = "fake"
    Config = FakeTTSConfig
    config: FakeTTSConfig
    stand_in = DOUBLE

    def __init__(self, config: FakeTTSConfig) -> None:
        super().__init__(config)
        self.durations_ms: list[float] = []
        """How long each synthesis really took, in call order."""

    async def _synthesize(self, text: str) -> AudioClip:
        cfg = self.config
        started = time.perf_counter()
        await asyncio.sleep(cfg.latency_ms / 1000)
        self.durations_ms.append((time.perf_counter() - started) * 1000)
        if cfg.fail_on and cfg.fail_on in text:
            raise ComponentError(f"fake tts refuses {text!r}")
        n = int(cfg.sample_rate * cfg.ms_per_char * len(text) / 1000)
        t = np.arange(n, dtype=np.float32) / cfg.sample_rate
        return AudioClip((0.2 * np.sin(2 * math.pi * 440 * t)).astype(np.float32),
                         cfg.sample_rate)


class HashEmbedderConfig(EmbedderConfig):
    dims: int = Field(64, ge=4, le=4096, description="Vector length.")
    latency_ms: float = Field(0.0, ge=0, description="Simulated time per call.")


class HashEmbedder(Embedder):
    """Character-bigram hashing: similar strings get similar vectors. A test double."""

    name = "fake"
    Config = HashEmbedderConfig
    config: HashEmbedderConfig
    stand_in = DOUBLE

    @property
    def model_id(self) -> str:
        return f"fake-hash-{self.config.dims}"

    @property
    def dims(self) -> int:
        return self.config.dims

    def _vector(self, text: str) -> FloatArray:
        text = unicodedata.normalize("NFKC", text)
        vec = np.zeros(self.config.dims, dtype=np.float32)
        grams = [text[i:i + 2] for i in range(max(1, len(text) - 1))]
        for g in grams:
            h = int.from_bytes(hashlib.blake2b(g.encode(), digest_size=8).digest(), "little")
            vec[h % self.config.dims] += 1.0 if (h >> 32) & 1 else -1.0
        if not vec.any():
            vec[0] = 1.0
        return vec

    async def _embed(self, texts: Sequence[str], purpose: EmbedPurpose,
                     priority: Priority) -> FloatArray:
        if self.config.latency_ms:
            await asyncio.sleep(self.config.latency_ms / 1000)
        return np.stack([self._vector(t) for t in texts])


class MemoryStoreConfig(VectorStoreConfig):
    pass


class InMemoryStore(VectorStore):
    """A dict per user; brute-force cosine. Not persistent. A test double."""

    name = "fake"
    Config = MemoryStoreConfig
    capabilities = StoreCapabilities(persistent=False)
    stand_in = DOUBLE

    def __init__(self, config: MemoryStoreConfig) -> None:
        super().__init__(config)
        self._data: dict[str, dict[str, VectorRecord]] = {}
        self._order: dict[str, list[str]] = {}
        """Each user's ids, sorted (the paging order; dropped on every write)."""
        self._fp: EmbedderFingerprint | None = None

    async def _read_fingerprint(self) -> EmbedderFingerprint | None:
        return self._fp

    async def _write_fingerprint(self, fingerprint: EmbedderFingerprint) -> None:
        self._fp = fingerprint

    async def _create(self, dims: int) -> None:
        self._data, self._order = {}, {}

    async def _drop(self) -> None:
        self._data, self._order, self._fp = {}, {}, None

    async def _upsert(self, user: str, records: Sequence[VectorRecord]) -> None:
        self._order.pop(user, None)
        bucket = self._data.setdefault(user, {})
        for r in records:
            bucket[r.id] = r

    async def _search(self, user: str, vector: FloatArray, limit: int,
                      where: dict[str, Any] | None) -> list[VectorHit]:
        recs = [r for r in self._data.get(user, {}).values()
                if not where or all(r.payload.get(k) == v for k, v in where.items())]
        if not recs:
            return []
        scores = np.stack([r.vector for r in recs]) @ np.asarray(vector, dtype=np.float32)
        order = np.argsort(-scores)[:limit]
        return [VectorHit(recs[i].id, float(scores[i]), dict(recs[i].payload)) for i in order]

    async def _get(self, user: str, ids: Sequence[str]) -> list[VectorRecord]:
        bucket = self._data.get(user, {})
        return [bucket[i] for i in ids if i in bucket]

    async def _delete(self, user: str, ids: Sequence[str]) -> None:
        self._order.pop(user, None)
        bucket = self._data.get(user, {})
        for i in ids:
            bucket.pop(i, None)

    async def _scroll_page(self, user: str, cursor: str | None, limit: int) -> ScrollPage:
        bucket = self._data.get(user, {})
        ids = self._order.get(user)
        if ids is None:  # sorted once per change, so a page costs the same anywhere
            ids = self._order[user] = sorted(bucket)
        start = 0 if cursor is None else bisect.bisect_left(ids, cursor)
        chosen = ids[start:start + limit]
        following = start + limit
        return ScrollPage([bucket[i] for i in chosen],
                          ids[following] if following < len(ids) else None)

    @property
    def shared(self) -> bool:
        return False

    async def _count(self, user: str) -> int:
        return len(self._data.get(user, {}))


class TurnEventRecorder:
    """An event sink that keeps every event of the turns it is given, in order;
    ``play_s`` per ``Sentence`` stands for a device playing it (back-pressure)."""

    def __init__(self, play_s: float = 0.0) -> None:
        self.play_s = play_s
        self.events: list[TurnEvent] = []

    async def on_event(self, event: TurnEvent) -> None:
        self.events.append(event)
        if self.play_s and isinstance(event, Sentence):
            await asyncio.sleep(self.play_s)

    def kinds(self) -> list[str]:
        """The events' class names, in order (``StageStarted:chat`` for stage events)."""
        return [f"{type(e).__name__}:{e.stage}" if isinstance(e, StageStarted | StageEnded)
                else type(e).__name__ for e in self.events]

    def of(self, kind: type[AnyEvent]) -> list[AnyEvent]:
        """The events of one class, in order."""
        return [e for e in self.events if isinstance(e, kind)]


class DeviceHostDouble:
    """A :class:`omoide.components.DeviceHost` that records calls; runs no pipeline."""

    def __init__(self, data_dir: Path, vad: VAD | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.requests: list[Any] = []
        self.ended: list[str] = []
        self.spoken: list[str] = []
        self.announcements: dict[str, list[Any]] = {}
        """Queued announcements per user that ``take_announcements`` hands out."""
        self._vad = vad

    async def run_turn(self, request: Any, sink: Any) -> Any:
        self.requests.append(request)
        raise ComponentError("DeviceHostDouble runs no turns")

    async def open_recognition(self, user: str, sample_rate: int, *,
                               guest: bool = False) -> Any:
        """No recognition stream: the device sends the audio with the turn (subclasses
        may open one)."""
        return None

    def new_end_of_speech_detector(self) -> EndOfSpeechDetector | None:
        return self._vad.new_detector() if self._vad else None

    def turn_detector(self) -> TurnDetector | None:
        """No end-of-turn detector: the VAD's silence ends a turn (subclasses may add one)."""
        return None

    async def session_ended(self, user: str) -> None:
        self.ended.append(user)

    async def synthesize(self, text: str) -> AudioClip | None:
        """Records the line; returns no audio (subclasses may synthesise a stand-in)."""
        self.spoken.append(text)
        return None

    async def take_announcements(self, user: str) -> list[Any]:
        return self.announcements.pop(user, [])


class MemoryServiceDouble:
    """A :class:`omoide.memory.api.MemoryService` that returns canned memories.

    Records journaled exchanges and extraction requests; ``delay_s`` simulates a slow
    store; ``fail`` makes ``recall`` and ``recognition_vocabulary`` raise;
    ``vocabulary`` is what ``recognition_vocabulary`` returns (after
    ``vocabulary_delay_s``).
    """

    engine_name = "double"

    def __init__(self, memories: Sequence[Any] = (), *, delay_s: float = 0.0,
                 fail: bool = False, vocabulary: Sequence[str] = (),
                 vocabulary_delay_s: float = 0.0) -> None:
        self.memories = list(memories)
        self.delay_s = delay_s
        self.fail = fail
        self.vocabulary = list(vocabulary)
        self.vocabulary_delay_s = vocabulary_delay_s
        self.vocabulary_requests: list[tuple[str, int]] = []
        self.journal: list[Any] = []
        self.noted: list[Any] = []
        self.ended: list[str] = []
        self.extracted: list[str] = []

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    def warm_indexes(self) -> None:
        """Nothing to prepare."""

    async def recall(self, user: str, query: str, now: Any) -> Any:
        from omoide.memory.api import Recall
        if self.fail:
            raise ComponentError("memory double fails on purpose")
        await asyncio.sleep(self.delay_s)
        return Recall([m for m in self.memories if m.memory.user == user], "double",
                      {"embed": 0.0, "search": self.delay_s * 1000})

    async def record_exchange(self, exchange: Any) -> None:
        self.journal.append(exchange)

    def note_turn_completed(self, exchange: Any) -> None:
        self.noted.append(exchange)

    async def session_ended(self, user: str) -> None:
        self.ended.append(user)

    async def extract_now(self, user: str) -> Any:
        from omoide.memory.api import ExtractionReport
        self.extracted.append(user)
        return ExtractionReport(user, 0, [])

    async def list_memories(self, user: str) -> list[Any]:
        return [m.memory for m in self.memories if m.memory.user == user]

    async def recognition_vocabulary(self, user: str, limit: int) -> list[str]:
        self.vocabulary_requests.append((user, limit))
        if self.fail:
            raise ComponentError("memory double fails on purpose")
        await asyncio.sleep(self.vocabulary_delay_s)
        return self.vocabulary[:limit]

class ToolDoubleConfig(ToolConfig):
    huge_chars: int = Field(100_000, ge=1, description="Length of `huge`'s result.")
    stubborn_s: float = Field(2.0, ge=0, description="How long `stubborn` ignores its "
                                                      "cancellation before giving up.")
    latency_ms: float = Field(0.0, ge=0, description="Simulated time `echo` takes.")


class ToolDouble(Tool):
    """A tool with one function per behaviour a tool loop must survive. A test double.

    ``echo`` returns its arguments; ``fail`` raises; ``refuse`` raises :class:`ToolError`;
    ``hang`` sleeps for an hour; ``stubborn`` ignores cancellation for ``stubborn_s``;
    ``not_json`` returns an object; ``huge`` returns ``huge_chars`` characters;
    ``switch`` needs confirmation and records every run in ``switched``.
    """

    name = "fake"
    Config = ToolDoubleConfig
    config: ToolDoubleConfig
    stand_in = DOUBLE

    def __init__(self, config: ToolDoubleConfig) -> None:
        super().__init__(config)
        self.calls: list[tuple[str, dict[str, Any], ToolContext]] = []
        self.switched: list[dict[str, Any]] = []
        self.durations_ms: list[float] = []
        """How long each `echo` really took (benchmarks subtract it)."""

    def functions(self) -> Sequence[ToolFunction]:
        obj = {"type": "object", "properties": {}}
        return [ToolFunction("echo", "Returns its arguments.", obj),
                ToolFunction("fail", "Always raises.", obj),
                ToolFunction("refuse", "Always refuses.", obj),
                ToolFunction("hang", "Never answers.", obj),
                ToolFunction("stubborn", "Ignores cancellation for a while.", obj),
                ToolFunction("not_json", "Returns something that is not JSON.", obj),
                ToolFunction("huge", "Returns a very long text.", obj),
                ToolFunction("switch", "Switches the lamp (asks first).",
                             {"type": "object", "properties": {"to": {"type": "string"}}},
                             needs_confirmation=True)]

    async def _invoke(self, function: str, arguments: dict[str, Any],
                      context: ToolContext) -> Any:
        self.calls.append((function, arguments, context))
        if function == "echo":
            started = time.perf_counter()
            await asyncio.sleep(self.config.latency_ms / 1000)
            self.durations_ms.append((time.perf_counter() - started) * 1000)
            return {"echo": arguments, "user": context.user}
        if function == "fail":
            raise RuntimeError("the tool double fails on purpose")
        if function == "refuse":
            raise ToolError("それはできないよ。")
        if function == "hang":
            await asyncio.sleep(3600)
        if function == "stubborn":
            deadline = time.monotonic() + self.config.stubborn_s
            while time.monotonic() < deadline:
                try:
                    await asyncio.sleep(deadline - time.monotonic())
                except asyncio.CancelledError:
                    continue
            return "finally"
        if function == "not_json":
            return object()
        if function == "huge":
            return "x" * self.config.huge_chars
        self.switched.append(arguments)
        return {"switched": arguments.get("to"), "message": "切り替えたよ。"}


class ToolHostDouble:
    """A :class:`omoide.components.ToolHost` that records announcements.

    ``reachable`` users get ``delivered``, others ``queued``; ``memory`` is whatever
    memory service the test hands in, ``database_url`` the shared database (None).
    """

    def __init__(self, data_dir: Path, *, memory: Any = None, timezone: str = "Asia/Tokyo",
                 reachable: Sequence[str] = (), database_url: str | None = None) -> None:
        self._data_dir = Path(data_dir)
        self.database_url = database_url
        """The shared database a test hands in (None: the tool's data folder)."""
        self._timezone = timezone
        self._memory = memory
        self.reachable = set(reachable)
        self.announced: list[tuple[str, str, Emotion]] = []
        self.announcement = asyncio.Event()
        """Set on every announcement (tests wait for timers with it)."""

    @property
    def data_dir(self) -> Path:
        self._data_dir.mkdir(parents=True, exist_ok=True)
        return self._data_dir

    @property
    def timezone(self) -> str:
        return self._timezone

    @property
    def memory(self) -> Any:
        return self._memory

    def reaches(self, user: str) -> bool:
        return user in self.reachable

    async def announce(self, user: str, text: str,
                       emotion: Emotion = Emotion.NEUTRAL) -> AnnounceOutcome:
        self.announced.append((user, text, emotion))
        self.announcement.set()
        return AnnounceOutcome("delivered" if user in self.reachable else "queued")


class SpectrumSpeakerEncoder(SpeakerEncoder):
    """A speaker encoder double: the voiceprint is the mean log spectrum in 16 bands (one
    window, centred), the frames view each 512-sample frame's log power. Voices told
    apart by their timbre alone, in microseconds and with no model."""

    name = "spectrum"

    @property
    def model_id(self) -> str:
        return "spectrum-16"

    @property
    def dims(self) -> int:
        return 16

    def _embed_partials(self, audio: FloatArray) -> FloatArray:
        frames = audio[:len(audio) // 512 * 512].reshape(-1, 512)
        power = np.abs(np.fft.rfft(frames, axis=1)) ** 2
        bands = np.array_split(power.mean(axis=0)[1:], 16)
        vector = np.log10(np.array([b.mean() for b in bands]) + 1e-9)
        out: FloatArray = (vector - vector.mean())[None, :].astype(np.float32)
        return out

    def _frame_features(self, audio: FloatArray) -> FloatArray | None:
        frames = audio[:len(audio) // 512 * 512].reshape(-1, 512)
        out: FloatArray = np.log10(np.mean(frames ** 2, axis=1, keepdims=True)
                                   + 1e-9).astype(np.float32)
        return out
