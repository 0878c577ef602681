"""One device connection: hello, listening, turns, barge-in, paced reply audio.

Each connection runs in its own task with its own state; nothing here waits on another
device. Three things run concurrently per connection:

- the receive loop (this task): JSON commands, uplink Opus -> end-of-speech detection;
- at most one turn task: ``host.run_turn`` publishing the turn's events to
  :class:`DeviceTurnSink`, which sends ``stt`` / ``llm`` / ``tts`` and paces Opus
  frames in real time;
- a watchdog closing the connection after ``close_after_silence_s`` without speech
  (after a spoken goodbye, so the robot ends as after any reply).

Listening follows the client's ``listen start`` / ``stop``; in auto and realtime mode it
resumes by itself after each reply (clients like the reference's web page never send
``listen start`` again), and it goes on while a turn runs: speech while the robot is still
silent (the recogniser or the chat busy) is queued and answered next, never dropped;
speech over the reply interrupts it when the device cancels its echo (``aec``, realtime)
or the echo gate hears it (``voice_barge_in``), keeping the utterance from its first
voiced frame. The log says which (``queued`` / ``barge-in``). The end of an utterance
is found by the VAD (with the server's ``turn`` stage, if any, telling a finished
sentence from a pause: :class:`TurnEnd`), by ``listen stop`` or by an empty binary frame
(the web page's "recording stopped"). Each utterance is recognised while it is spoken:
when speech starts the connection opens the server's recognition stream
(``DeviceHost.open_recognition``) and feeds it every frame, a bridged pause included, and
the turn only finishes it (:class:`HeardWhileSpoken`); with ``stt_partials`` the stable
part of the transcript goes to the device as ``stt`` while the person speaks (and while
no turn runs). A stream not handed to a turn is cancelled (a cough, a reset, a close).
A ``listen detect`` is a wake word when it names
one or arrives while nobody listens (robots report their wake word right after
connecting, then send ``listen start``): it gets a short spoken greeting, not an answer;
otherwise it is a typed utterance.

Every send goes through one lock with ``send_timeout_s``: a device that stops reading
is disconnected instead of holding anything up.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import time
import unicodedata
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from omoide.api import (
    GUEST,
    AudioClip,
    Emotion,
    EmotionChosen,
    Heard,
    Household,
    InvalidInput,
    Sentence,
    ToolCall,
    TurnEvent,
    TurnRequest,
    resample,
)
from omoide_device_stackchan import framing
from omoide_device_stackchan.bargein import EchoGate, rms
from omoide_device_stackchan.codec import OpusDecoder, OpusEncoder
from omoide_device_stackchan.emotions import face_emoji, stackchan_face
from omoide_device_stackchan.listening import (
    EnergyEndOfSpeech,
    HeardWhileSpoken,
    TurnEnd,
    UtteranceBuffer,
)
from omoide_device_stackchan.mcp import DeviceMcpClient

if TYPE_CHECKING:
    from starlette.websockets import WebSocket

    from omoide.api import DeviceHost, RecognitionStream, TurnDetector
    from omoide_device_stackchan.config import StackChanConfig

log = logging.getLogger("omoide.device.stackchan")

UPLINK_RATE = 16000
MAX_QUEUED = 4
"""Utterances waiting for the running turn at most; a fifth pushes out the oldest (logged)."""

# WebSocket close codes
CLOSE_NORMAL = 1000
CLOSE_PROTOCOL_ERROR = 1002
CLOSE_POLICY = 1008
CLOSE_TOO_BIG = 1009


class DeviceGone(Exception):
    """The device stopped taking messages (closed, or slower than ``send_timeout_s``)."""


class CloseConnection(Exception):
    """Close the connection with ``code`` and ``reason``."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


@dataclass(frozen=True)
class DeviceIdentity:
    """Who is on the other end, as established by the handshake."""

    device_id: str
    client_id: str
    user: str
    framing_version: int
    peer: str = "?"


@dataclass(frozen=True)
class QueuedUtterance:
    """Speech heard while a turn ran, waiting to be answered next."""

    audio: np.ndarray
    ended_at: float
    """``time.perf_counter()`` when it ended (the trace measures from there)."""
    mode: str | None
    recognition: RecognitionStream | None = None
    """Its recognition stream, fed while it was spoken (None: recognise ``audio``)."""


@dataclass
class ConnectionStats:
    """Counters a test or the benchmark may read."""

    frames_in: int = 0
    frames_out: int = 0
    bad_frames: int = 0
    errors: int = 0
    turns: int = 0
    greetings: int = 0
    barge_ins: int = 0
    voice_barge_ins: int = 0
    end_frames: int = 0
    queued: int = 0
    """Utterances heard while a turn ran and answered after it."""
    queued_dropped: int = 0
    """Queued utterances given up (the client aborted, or too many waited); logged."""
    pauses_bridged: int = 0
    """Pauses the turn detector judged unfinished that the person then spoke on after."""
    streamed: int = 0
    """Utterances recognised while spoken (their stream handed to the turn)."""
    partials: int = 0
    """``stt`` messages with stable text sent before the end of an utterance."""
    late_frames: int = 0
    voice_stopped_at: float | None = None
    """``time.perf_counter()`` when the detector last heard the voice stop (a pause or
    the end): what the benchmark measures the VAD's and the turn stage's waits from."""
    turn_ended_at: float | None = None
    """``time.perf_counter()`` when the last utterance's turn was ended (by silence, the
    turn stage, ``listen stop`` or an end frame): the turn's trace starts there."""
    closed_reason: str | None = None
    send_lag_ms: list[float] = field(default_factory=list)


class AudioPacer:
    """Sends downlink frames in real time, keeping ``pre_buffer`` frames ahead of playback.

    ``play_end`` estimates when the device will have played everything sent so far;
    a frame may go when less than ``pre_buffer - 1`` frames are still unplayed, so the
    first ``pre_buffer`` frames of a reply go at once and the rest at the frame rate.
    """

    def __init__(self, frame_s: float, pre_buffer: int) -> None:
        self.frame_s = frame_s
        self.pre_buffer = pre_buffer
        self.play_end = 0.0

    def reset(self) -> None:
        self.play_end = 0.0

    async def wait_for_slot(self) -> float:
        """Sleep until the next frame may be sent; returns how late the slot is (s)."""
        now = time.perf_counter()
        if self.play_end < now:
            late = now - self.play_end if self.play_end else 0.0
            self.play_end = now
        else:
            late = 0.0
        wait = self.play_end - now - (self.pre_buffer - 1) * self.frame_s
        if wait > 0:
            await asyncio.sleep(wait)
        return late

    def sent(self) -> None:
        self.play_end = max(self.play_end, time.perf_counter()) + self.frame_s

    async def drain(self) -> None:
        """Wait until the device should have played everything sent."""
        wait = self.play_end - time.perf_counter()
        if wait > 0:
            await asyncio.sleep(wait)


class DeviceTurnSink:
    """Delivers one turn's events to the device: ``Heard`` -> ``stt``, ``EmotionChosen``
    -> ``llm`` (the face, once), ``Sentence`` -> ``tts`` + paced Opus; the other events
    are not the robot's business. Greetings, goodbyes and announcements are spoken as
    the same events."""

    def __init__(self, conn: DeviceConnection) -> None:
        self._conn = conn
        self.tts_started = False
        self.emotion_sent = False
        self.sentences = 0

    async def on_event(self, event: TurnEvent) -> None:
        if isinstance(event, Heard):
            await self._show_transcript(event.transcript)
        elif isinstance(event, EmotionChosen):
            await self._show_face(event.emotion)
        elif isinstance(event, Sentence):
            await self._speak(event.text, event.audio)

    async def _show_transcript(self, text: str) -> None:
        if text:   # nothing heard: the robot shows no empty bubble
            await self._conn.send_json({"type": "stt", "text": text})

    async def _show_face(self, emotion: Emotion) -> None:
        if self.emotion_sent:
            return
        self.emotion_sent = True
        face = stackchan_face(emotion)
        await self._conn.send_json({"type": "llm", "text": face_emoji(face), "emotion": face})

    async def _speak(self, text: str, audio: AudioClip | None) -> None:
        conn = self._conn
        if not self.emotion_sent:   # the face always changes before the robot speaks
            await self._show_face(Emotion.NEUTRAL)
        if not self.tts_started:
            self.tts_started = True
            await conn.send_json({"type": "tts", "state": "start"})
            conn.mark_speaking()
        self.sentences += 1
        await conn.send_json({"type": "tts", "state": "sentence_start", "text": text})
        if audio is not None and len(audio.samples):
            await conn.stream_audio(audio)


class DeviceConnection:
    """The protocol state machine of one connected device."""

    def __init__(self, ws: WebSocket, host: DeviceHost, config: StackChanConfig,
                 identity: DeviceIdentity,
                 still_allowed: Callable[[], bool] | None = None,
                 household: Callable[[], Household] | None = None) -> None:
        self.ws = ws
        self._still_allowed = still_allowed
        self._household = household
        """Who the robot serves, read at each turn (None: ``identity.user`` alone)."""
        self._people_heard: set[str] = set()
        self.last_speaker: dict[str, Any] | None = None
        """Who spoke in the last turn, when the voice was identified (the trace's
        ``speaker``: person, voice, score, margin, reason); None before any."""
        self.host = host
        self.config = config
        self.identity = identity
        self.session_id = str(uuid.uuid4())
        self.stats = ConnectionStats()
        self.features: dict[str, Any] = {}
        self.mcp: DeviceMcpClient | None = None
        self._send_lock = asyncio.Lock()
        self._closed = False
        self._hello_done = False
        self._decoder: OpusDecoder | None = None
        self._encoder = OpusEncoder(config.downlink_sample_rate, config.downlink_frame_ms,
                                    voice=False, complexity=config.opus_complexity)
        self._pacer = AudioPacer(config.downlink_frame_ms / 1000, config.pre_buffer_frames)
        # listening state
        self.listen_mode: str | None = None
        """What we capture now (None while a reply runs in auto mode)."""
        self.session_mode: str | None = None
        """The mode of the client's last ``listen start`` until its ``listen stop``."""
        self._detector: Any = None
        self._buffer = UtteranceBuffer(UPLINK_RATE)
        self._speech_from: int | None = None
        self._turn_end = TurnEnd(None)
        self._queued: deque[QueuedUtterance] = deque()
        self._heard: HeardWhileSpoken | None = None
        """The recognition stream of the utterance being spoken, if one is open."""
        self._voice: Any = None
        """The voice of the utterance being spoken, identified while it is spoken
        (``listen_for_voice`` of the host), if the turn will identify it."""
        self._partials: asyncio.Task[None] | None = None
        self._wake_words = {wake_word_key(w) for w in config.wake_words}
        self._echo_gate = EchoGate(
            margin_db=config.barge_in_margin_db, min_ms=config.barge_in_min_ms,
            floor=config.energy_threshold) if config.voice_barge_in else None
        # turn state
        self._turn: asyncio.Task[None] | None = None
        self._speaking = False
        """The running turn has sent ``tts start`` (the robot talks)."""
        self._last_voice = time.monotonic()
        self._tasks: set[asyncio.Task[Any]] = set()

    # -- sending -------------------------------------------------------------------
    async def _send(self, message: dict[str, Any]) -> None:
        if self._closed:
            raise DeviceGone("connection closed")
        try:
            # asyncio.timeout, not wait_for: on 3.11 wait_for swallows a cancellation
            # that lands just as the send completes, which would defeat barge-in.
            async with self._send_lock, asyncio.timeout(self.config.send_timeout_s):
                await self.ws.send(message)
        except TimeoutError:
            self._closed = True
            log.warning("device %s: not reading for %.1fs; disconnecting",
                        self.identity.device_id, self.config.send_timeout_s)
            with contextlib.suppress(Exception):
                await self.ws.close(CLOSE_POLICY, "too slow")
            raise DeviceGone("send timed out") from None
        except DeviceGone:
            raise
        except Exception as exc:  # starlette raises RuntimeError/OSError once closed
            self._closed = True
            raise DeviceGone(str(exc)) from exc

    async def send_json(self, payload: dict[str, Any]) -> None:
        payload.setdefault("session_id", self.session_id)
        await self._send({"type": "websocket.send",
                          "text": json.dumps(payload, ensure_ascii=False)})

    async def send_binary(self, data: bytes) -> None:
        await self._send({"type": "websocket.send", "bytes": data})

    async def send_error(self, message: str) -> None:
        """Tell the device (or a test client) what was wrong; close after too many."""
        self.stats.errors += 1
        log.info("device %s: %s", self.identity.device_id, message)
        if self.stats.errors > self.config.max_errors:
            raise CloseConnection(CLOSE_POLICY, "too many protocol errors")
        with contextlib.suppress(DeviceGone):
            await self.send_json({"type": "error", "message": message})

    async def stream_audio(self, clip: AudioClip) -> None:
        """Encode ``clip`` to Opus frames and send them paced in real time.

        The first frame is encoded right here so it leaves without a thread hop; the
        rest is encoded on worker threads one pre-buffer's worth at a time, the next
        chunk while the current one is paced out, so the event loop (shared by every
        device) mostly just sends.
        """
        encoder = self._encoder
        if clip.sample_rate != encoder.sample_rate:
            clip = await asyncio.to_thread(resample, clip, encoder.sample_rate)
        samples = clip.samples
        total = -(-len(samples) // encoder.frame_samples)
        chunk = max(1, self.config.pre_buffer_frames)
        start_ms = int(time.monotonic() * 1000)
        packets = encoder.encode_frames(samples, 0, 1)
        pending: asyncio.Future[list[bytes]] | None = None
        sent = 0
        try:
            while packets:
                after = sent + len(packets)
                pending = asyncio.ensure_future(asyncio.to_thread(
                    encoder.encode_frames, samples, after, chunk)) if after < total else None
                for packet in packets:
                    late = await self._pacer.wait_for_slot()
                    if sent and late > self._pacer.frame_s / 2:   # a stutter inside a sentence
                        self.stats.late_frames += 1
                    data = framing.encode(self.identity.framing_version, packet,
                                          timestamp_ms=start_ms + sent * encoder.frame_ms)
                    await self.send_binary(data)
                    self._pacer.sent()
                    if self._echo_gate is not None:
                        n = encoder.frame_samples
                        self._echo_gate.played(rms(samples[sent * n:(sent + 1) * n]),
                                               self._pacer.play_end)
                    self.stats.frames_out += 1
                    sent += 1
                packets = await pending if pending is not None else []
        finally:
            if pending is not None:
                pending.cancel()

    def mark_speaking(self) -> None:
        """The current turn's ``tts start`` went out: the robot talks from now on.

        Without echo cancellation the microphone now hears the robot, so speech still
        under way is cut here and queued with what was heard of it."""
        self._speaking = True
        if self._speech_from is not None and self.listen_mode is not None \
                and not self._hears_over_reply():
            audio = self._buffer.take(self._speech_from)
            self._speech_from = None
            self._turn_end.cancel()
            if self._detector is None:   # manual: what was queued is not heard again
                self._buffer.drop_before(self._buffer.end)
            self._queue(audio, self.listen_mode, " (cut short by the reply)",
                        self._take_recognition(audio))

    def _hears_over_reply(self) -> bool:
        """The device cancels its echo and streams while it talks (``aec``, realtime)."""
        return bool(self.features.get("aec")) and self.listen_mode == "realtime"

    # -- lifecycle -----------------------------------------------------------------
    async def run(self) -> None:
        """Serve the connection until the device leaves or is closed. Never raises."""
        code, reason = CLOSE_NORMAL, "bye"
        try:
            await self._await_hello()
            self._spawn(self._watch_silence())
            while True:
                message = await self.ws.receive()
                if message["type"] == "websocket.disconnect":
                    reason = "device disconnected"
                    break
                await self._dispatch(message)
        except CloseConnection as exc:
            code, reason = exc.code, exc.reason
            log.warning("device %s: closing (%d %s)", self.identity.device_id, code, reason)
        except DeviceGone as exc:
            reason = f"gone: {exc}"
        except Exception:  # a bug here must cost one connection, not the server
            log.exception("device %s: connection failed", self.identity.device_id)
            code, reason = 1011, "internal error"
        finally:
            await self._shutdown(code, reason)

    async def close(self, code: int = CLOSE_NORMAL, reason: str = "bye") -> None:
        """Close from outside (server stopping, a newer connection of the same device)."""
        await self._shutdown(code, reason)

    async def _shutdown(self, code: int, reason: str) -> None:
        if self.stats.closed_reason is not None:
            return
        self.stats.closed_reason = reason
        turn = self._turn
        if turn is not None and not turn.done():
            turn.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(turn), 5.0)
        for task in list(self._tasks):
            if task is not asyncio.current_task():
                task.cancel()
        self._drop_recognition()      # (their cancels run after the tasks above)
        self._drop_queued("the connection closed")
        if self.mcp is not None:
            self.mcp.close()
        if not self._closed:
            self._closed = True
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.ws.close(code, reason[:120]), 2.0)
        log.info("device %s (user %s) disconnected: %s", self.identity.device_id,
                 self.identity.user, reason)
        try:
            for person in sorted(self._people_heard | {self.identity.user}):
                await self.host.session_ended(person)
        except Exception:
            log.exception("device %s: session_ended failed", self.identity.device_id)

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- hello -----------------------------------------------------------------------
    async def _await_hello(self) -> None:
        deadline = time.monotonic() + self.config.hello_timeout_s
        while not self._hello_done:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise CloseConnection(CLOSE_PROTOCOL_ERROR, "no hello")
            try:
                message = await asyncio.wait_for(self.ws.receive(), remaining)
            except TimeoutError:
                raise CloseConnection(CLOSE_PROTOCOL_ERROR, "no hello") from None
            if message["type"] == "websocket.disconnect":
                raise DeviceGone("disconnected before hello")
            if message.get("bytes") is not None:
                self._check_size(message["bytes"], self.config.max_frame_bytes)
                await self.send_error("send hello first; audio before hello is dropped")
                continue
            text = message.get("text") or ""
            self._check_size(text.encode("utf-8"), self.config.max_text_bytes)
            payload = self._parse_json(text)
            if payload is None:
                await self.send_error("malformed JSON")
                continue
            if payload.get("type") != "hello":
                await self.send_error(f"send hello first; {payload.get('type')!r} ignored")
                continue
            await self._on_hello(payload)

    async def _on_hello(self, hello: dict[str, Any]) -> None:
        features = hello.get("features")
        self.features = dict(features) if isinstance(features, dict) else {}
        raw_params = hello.get("audio_params")
        params: dict[str, Any] = raw_params if isinstance(raw_params, dict) else {}
        rate = params.get("sample_rate", UPLINK_RATE)
        if params.get("format", "opus") != "opus" or rate not in (8000, 12000, 16000, 24000,
                                                                   48000):
            raise CloseConnection(CLOSE_PROTOCOL_ERROR,
                                  f"unsupported uplink audio {params.get('format')}/{rate}")
        self._decoder = OpusDecoder(int(rate))
        await self.send_json({
            "type": "hello", "transport": "websocket", "version": 1,
            "audio_params": {"format": "opus", "sample_rate": self.config.downlink_sample_rate,
                             "channels": 1, "frame_duration": self.config.downlink_frame_ms}})
        first = not self._hello_done
        self._hello_done = True
        log.info("device %s (user %s, framing v%d) said hello; session %s",
                 self.identity.device_id, self.identity.user, self.identity.framing_version,
                 self.session_id)
        if first and self.features.get("mcp"):
            self.mcp = DeviceMcpClient(self._send_mcp, self.config.mcp_timeout_s)
            self._spawn(self.mcp.start())

    async def _send_mcp(self, payload: dict[str, Any]) -> None:
        await self.send_json({"type": "mcp", "payload": payload})

    # -- incoming ------------------------------------------------------------------
    def _check_size(self, data: bytes | str, limit: int) -> None:
        if len(data) > limit:
            raise CloseConnection(CLOSE_TOO_BIG, f"message of {len(data)} bytes is too big")

    @staticmethod
    def _parse_json(text: str) -> dict[str, Any] | None:
        try:
            payload = json.loads(text)
        except (ValueError, RecursionError):   # RecursionError: nested too deeply
            return None
        return payload if isinstance(payload, dict) else None

    async def _dispatch(self, message: Mapping[str, Any]) -> None:
        data = message.get("bytes")
        if data is not None:
            self._check_size(data, self.config.max_frame_bytes)
            try:
                frame = framing.decode(self.identity.framing_version, data)
            except framing.FramingError as exc:
                raise CloseConnection(CLOSE_PROTOCOL_ERROR, str(exc)) from None
            if frame.type == framing.TYPE_JSON:
                await self._on_text(frame.payload.decode("utf-8", "replace"))
            elif not frame.payload:
                await self._on_end_frame()
            else:
                await self._on_audio(frame.payload)
            return
        await self._on_text(message.get("text") or "")

    async def _on_text(self, text: str) -> None:
        self._check_size(text.encode("utf-8"), self.config.max_text_bytes)
        payload = self._parse_json(text)
        if payload is None:
            await self.send_error("malformed JSON (expected an object with a type)")
            return
        kind = payload.get("type")
        if kind == "listen":
            await self._on_listen(payload)
        elif kind == "abort":
            self._drop_queued("the client aborted")
            await self._on_abort(str(payload.get("reason") or "abort"))
        elif kind == "mcp":
            if self.mcp is not None:
                self.mcp.handle(payload.get("payload"))
        elif kind == "hello":
            await self._on_hello(payload)
        elif kind == "ping":
            await self.send_json({"type": "pong"})
        elif kind == "iot":
            log.debug("device %s: legacy iot message ignored", self.identity.device_id)
        else:
            await self.send_error(f"unknown message type {kind!r}")

    async def _on_listen(self, payload: dict[str, Any]) -> None:
        state = payload.get("state")
        if state == "start":
            mode = payload.get("mode", "auto")
            if mode not in ("auto", "manual", "realtime"):
                await self.send_error(f"unknown listen mode {mode!r}")
                return
            # Not a barge-in: clients send `abort` for that. The firmware sends `listen
            # start` right after reporting its wake word, while our greeting plays.
            self.session_mode = mode
            if mode == self.listen_mode and self._speech_from is not None:
                return   # a repeated start must not drop speech in progress
            self._start_listening(mode)
        elif state == "stop":
            self.session_mode = None
            await self._finish_listening()
        elif state == "detect":
            text = str(payload.get("text") or "").strip()
            self._last_voice = time.monotonic()
            if not text:
                return
            if wake_word_key(text) in self._wake_words or self.session_mode is None:
                await self._greet(text)
            else:
                await self._start_turn(text=text)
        else:
            await self.send_error(f"unknown listen state {state!r}")

    async def _finish_listening(self) -> None:
        """``listen stop`` (or the end frame in manual mode): what was heard is a turn."""
        if self.listen_mode is None:
            return
        self.stats.turn_ended_at = time.perf_counter()
        audio = self._buffer.take(self._speech_from if self._speech_from is not None else 0)
        recognition, voice = self._take_recognition(audio), self._take_voice()
        self.listen_mode = None
        self._speech_from = None
        self._turn_end.cancel()
        if len(audio) >= UPLINK_RATE // 10:
            await self._start_turn(audio=audio, end_of_speech_at=time.perf_counter(),
                                   recognition=recognition, voice=voice)
            return
        if recognition is not None:
            self._spawn(recognition.cancel())
        if voice is not None:
            voice.cancel()

    def _start_listening(self, mode: str) -> None:
        self.listen_mode = mode
        self._drop_recognition()
        self._buffer = UtteranceBuffer(UPLINK_RATE)
        self._speech_from = None
        self._detector = None
        self._turn_end.cancel()
        self._turn_end = TurnEnd(None)
        if mode != "manual":
            self._detector = self.host.new_end_of_speech_detector() or EnergyEndOfSpeech(
                self.config.energy_threshold, self.config.energy_silence_ms)
            self._turn_end = TurnEnd(self._turn_detector())

    def _turn_detector(self) -> TurnDetector | None:
        """The server's end-of-turn detector, if it has one (older hosts lack the call)."""
        getter = getattr(self.host, "turn_detector", None)
        return getter() if callable(getter) else None

    async def _on_end_frame(self) -> None:
        """An empty binary frame: the client stopped recording (the web page's signal).
        Ends the utterance in progress; neither an error nor a turn by itself."""
        self.stats.end_frames += 1
        if self.listen_mode is None:
            return
        if self._detector is None:
            await self._finish_listening()
        elif self._speech_from is not None:
            await self._end_utterance(self._buffer.end)

    async def _on_audio(self, packet: bytes) -> None:
        self.stats.frames_in += 1
        if self._decoder is None:
            await self.send_error("audio before hello is dropped")
            return
        try:
            samples = self._decoder.decode(packet)
        except InvalidInput as exc:
            self.stats.bad_frames += 1
            await self.send_error(str(exc))
            return
        if self._decoder.sample_rate != UPLINK_RATE:
            samples = resample(AudioClip(samples, self._decoder.sample_rate),
                               UPLINK_RATE).samples
        if self._turn_running() and self._speaking and not self._hears_over_reply():
            # Without echo cancellation the mic hears the robot itself: only the echo
            # gate (voice_barge_in) may judge it; otherwise it is ignored. Before the
            # robot speaks (recognising, thinking) the mic hears only the person.
            if self._echo_gate is not None and self.session_mode != "manual" \
                    and self._echo_gate.push(samples, time.perf_counter()):
                await self._barge_in_by_voice()
            return
        if self.listen_mode is None:
            return  # the device may stream while we think; xiaozhi servers drop it too
        self._buffer.append(samples)
        if self._voice is not None:
            self._voice.feed(samples)
        if self._heard is not None and not self._heard.feed(samples):
            self._drop_recognition()
        if self._detector is None:   # manual: keep everything until listen stop
            if self._speech_from is None:
                # Push-to-talk: the button is the endpoint, so everything from the first
                # frame is the utterance, recognised while the button is held.
                self._speech_from = self._buffer.end - len(samples)
                await self._open_recognition()
            if self._buffer.kept_seconds > self.config.max_utterance_s:
                await self._end_utterance(self._buffer.end)
            return
        await self._detect(samples)

    async def _barge_in_by_voice(self) -> None:
        """The echo gate heard the user over the reply: stop it and listen to them,
        starting with the audio that made the gate fire."""
        assert self._echo_gate is not None
        heard = self._echo_gate.recent()
        self.stats.voice_barge_ins += 1
        log.info("device %s: barge-in by voice; the utterance is kept from its first voiced "
                 "frame (%.2f s so far)", self.identity.device_id, len(heard) / UPLINK_RATE)
        await self._on_abort("voice over the reply (echo gate)")
        self._start_listening(self.session_mode or "auto")
        self._buffer.append(heard)
        if self._detector is not None:
            await self._detect(heard)

    async def _detect(self, samples: np.ndarray) -> None:
        pre_roll = UPLINK_RATE * self.config.pre_roll_ms // 1000
        turn_end = self._turn_end
        for event in self._detector.push(samples):
            if event.kind == "speech_start":
                await self._on_speech_start(int(event.at_s * UPLINK_RATE) - pre_roll)
            elif event.kind == "speech_end" and self._speech_from is not None:
                self.stats.voice_stopped_at = time.perf_counter()
                end = int(event.at_s * UPLINK_RATE)
                if turn_end.detector is None:   # silence-only endpointing
                    await self._end_utterance(end)
                    return
                turn_end.pause(self._buffer.take(self._speech_from, end), end)
        if self._speech_from is not None and not self._detector.in_speech \
                and not turn_end.pausing and not turn_end.restore():
            self._speech_from = None   # too short to count: a click or a cough
            self._drop_recognition()
        turn_end.listen(getattr(self._detector, "silence_from_s", None), self._buffer,
                        self._speech_from)
        if self._speech_from is None:
            self._buffer.drop_before(self._buffer.end - pre_roll)
        elif turn_end.paused_at is not None and turn_end.due(self._buffer.end):
            log.debug("device %s: end of turn (finished: %s)", self.identity.device_id,
                      turn_end.probability)
            await self._end_utterance(turn_end.paused_at)
        elif (early := turn_end.ends_early(self._buffer.end)) is not None:
            self.stats.voice_stopped_at = time.perf_counter()   # the turn stage heard it
            await self._end_utterance(early)
        elif (self._buffer.end - self._speech_from) / UPLINK_RATE > self.config.max_utterance_s:
            await self._end_utterance(self._buffer.end)

    async def _on_speech_start(self, start: int) -> None:
        """The detector heard speech begin (``start``: with the pre-roll): a new
        utterance, or the one in a pause going on."""
        if self._speech_from is None:
            self._speech_from = max(0, start)
            await self._open_recognition()
        elif self._turn_end.pausing:
            self.stats.pauses_bridged += 1
        self._turn_end.resume()
        self._last_voice = time.monotonic()
        if not self._turn_running():
            return
        if self._hears_over_reply():
            await self._on_abort("voice barge-in")
        else:
            log.info("device %s: speech while a turn runs; listening (it is answered next)",
                     self.identity.device_id)

    def _turn_household(self) -> Household:
        return self._household() if self._household is not None \
            else Household.of_one(self.identity.user)

    def _turn_person(self) -> str | None:
        """Whose memory the next turn uses until its voice is identified: the
        household's default person, None for a guest."""
        return self._turn_household().person_for(None)

    # -- recognition while the person speaks ------------------------------------------
    async def _open_recognition(self) -> None:
        """Speech started: open the server's recognition stream for this utterance and
        feed it what is kept of it (from the pre-roll on). Without one, or when opening
        fails, the turn recognises the audio it is sent, as before."""
        household = self._turn_household()
        self._listen_for_voice(household)
        opener = getattr(self.host, "open_recognition", None)   # older hosts lack it
        if not callable(opener):
            return
        start, buffer = self._speech_from, self._buffer
        # with several members the voice decides whose turn it is, after the audio:
        # no one's memory words bias what is heard before that
        person = household.person_for(None) if len(household.members) == 1 else None
        try:
            stream = await (opener(person, UPLINK_RATE) if person is not None else
                            opener(GUEST, UPLINK_RATE, guest=True))
        except Exception as exc:  # noqa: BLE001 - the turn recognises the audio instead
            log.warning("device %s: no recognition while speaking (%s)",
                        self.identity.device_id, exc)
            return
        if stream is None:
            return
        if start is None or self._speech_from != start or self._buffer is not buffer \
                or self._heard is not None:
            self._spawn(stream.cancel())   # the utterance ended while the stream opened
            return
        heard = HeardWhileSpoken(stream)
        if not heard.feed(buffer.take(start)):
            self._spawn(stream.cancel())
            return
        self._heard = heard
        if heard.live:   # the turn stage may read what was heard up to a pause
            self._turn_end.hearing = stream.heard_so_far
        if self.config.stt_partials and heard.live:
            self._partials = self._spawn(self._send_partials(stream))

    def _listen_for_voice(self, household: Household) -> None:
        """Speech started: identify the voice while it is spoken (the embedding of the
        speech so far starts after a couple of seconds), fed from the same sample on as
        the audio the turn gets."""
        listen = getattr(self.host, "listen_for_voice", None)   # older hosts lack it
        if self._voice is not None:
            self._voice.cancel()
        self._voice = listen(household, UPLINK_RATE) if callable(listen) else None
        if self._voice is not None and self._speech_from is not None:
            self._voice.feed(self._buffer.take(self._speech_from))

    def _take_voice(self) -> Any:
        voice, self._voice = self._voice, None
        return voice

    async def _send_partials(self, stream: RecognitionStream) -> None:
        """``stt`` with the stable text as it grows, while no turn runs (a partial must
        not land between a reply's messages)."""
        async for text in stream.partials():
            if text and not self._turn_running():
                self.stats.partials += 1
                with contextlib.suppress(DeviceGone):
                    await self.send_json({"type": "stt", "text": text})

    def _take_recognition(self, audio: np.ndarray) -> RecognitionStream | None:
        """The utterance (``audio``) ended: its stream, to hand to the turn."""
        heard, self._heard = self._heard, None
        self._stop_partials()
        if heard is None:
            return None
        stream = heard.hand_over(audio)
        if stream is None:
            self._spawn(heard.stream.cancel())
        return stream

    def _drop_recognition(self) -> None:
        """The utterance was given up (too short, listening restarted, closed)."""
        heard, self._heard = self._heard, None
        self._turn_end.hearing = None
        if (voice := self._take_voice()) is not None:
            voice.cancel()
        self._stop_partials()
        if heard is not None:
            self._spawn(heard.stream.cancel())

    def _stop_partials(self) -> None:
        if self._partials is not None:
            self._partials.cancel()
            self._partials = None

    async def _end_utterance(self, end: int) -> None:
        self.stats.turn_ended_at = time.perf_counter()
        audio = self._buffer.take(self._speech_from or 0, end)
        recognition, voice = self._take_recognition(audio), self._take_voice()
        mode = self.listen_mode
        self._speech_from = None
        self._turn_end.cancel()
        if mode in ("auto", "realtime"):
            # Keep listening while the turn runs: what is said meanwhile is queued.
            self._start_listening(mode)
        else:
            self.listen_mode = None
        if self._turn_running():
            if voice is not None:   # a queued utterance is identified when answered
                voice.cancel()
            self._queue(audio, mode, "", recognition)
            return
        await self._start_turn(audio=audio, end_of_speech_at=time.perf_counter(),
                               listen_again=mode, recognition=recognition, voice=voice)

    def _queue(self, audio: np.ndarray, mode: str | None, why: str,
               recognition: RecognitionStream | None) -> None:
        """Keep speech heard while a turn runs; it is answered when the turn ends."""
        if len(audio) < UPLINK_RATE // 10:
            if recognition is not None:
                self._spawn(recognition.cancel())
            return
        if len(self._queued) >= MAX_QUEUED:
            dropped = self._queued.popleft()
            if dropped.recognition is not None:
                self._spawn(dropped.recognition.cancel())
            self.stats.queued_dropped += 1
            log.warning("device %s: %d utterances already wait; the oldest is dropped",
                        self.identity.device_id, MAX_QUEUED)
        self._queued.append(QueuedUtterance(audio, time.perf_counter(), mode, recognition))
        self.stats.queued += 1
        log.info("device %s: %.2f s of speech during a running turn queued%s; answered next",
                 self.identity.device_id, len(audio) / UPLINK_RATE, why)

    def _drop_queued(self, why: str) -> None:
        if self._queued:
            self.stats.queued_dropped += len(self._queued)
            log.info("device %s: %d queued utterance(s) dropped: %s",
                     self.identity.device_id, len(self._queued), why)
            for queued in self._queued:
                if queued.recognition is not None:
                    self._spawn(queued.recognition.cancel())
            self._queued.clear()

    async def _answer_queued(self, finished: asyncio.Task[Any]) -> None:
        """Once ``finished`` (the turn that was running) is done, answer the oldest
        utterance heard meanwhile, unless another turn started first."""
        await asyncio.wait({finished})
        if self._turn_running() or not self._queued or self._closed:
            return
        queued = self._queued.popleft()
        await self._start_turn(audio=queued.audio, end_of_speech_at=queued.ended_at,
                               listen_again=queued.mode, recognition=queued.recognition)

    # -- turns ---------------------------------------------------------------------
    def _turn_running(self) -> bool:
        return self._turn is not None and not self._turn.done()

    async def _start_turn(self, *, audio: np.ndarray | None = None, text: str | None = None,
                          end_of_speech_at: float | None = None,
                          listen_again: str | None = None,
                          recognition: RecognitionStream | None = None,
                          voice: Any = None) -> None:
        if self._turn_running():
            await self._on_abort("new utterance")
        self._last_voice = time.monotonic()
        tools, handler = [], None
        if self.mcp is not None:
            tools = self.mcp.tool_specs()
            handler = self._call_tool if tools else None
        household = self._turn_household()
        person = household.person_for(None)
        if person is not None:
            self._people_heard.add(person)
        request = TurnRequest(
            user=person or GUEST, guest=person is None, session_id=self.session_id,
            device=self.identity.device_id, text=text,
            audio=AudioClip(audio.astype(np.float32), UPLINK_RATE) if audio is not None else None,
            tools=tools, tool_handler=handler, end_of_speech_at=end_of_speech_at,
            recognition=recognition, household=household if audio is not None else None,
            voice=voice if audio is not None else None)
        self.stats.turns += 1
        if recognition is not None:
            self.stats.streamed += 1

        async def turn(sink: DeviceTurnSink) -> None:
            try:
                result = await self.host.run_turn(request, sink)
                trace = getattr(result, "trace", None) or {}
                if not trace.get("guest") and result is not None:
                    self._people_heard.add(result.user)   # the voice's, when identified
                self.last_speaker = trace.get("speaker")
            finally:   # a host that did not finish it (it failed, or was interrupted)
                if recognition is not None:
                    await recognition.cancel()

        self._turn = self._spawn(self._deliver(turn, listen_again))

    async def _greet(self, wake_word: str) -> None:
        """The robot heard its wake word: a short spoken greeting (nothing journaled)."""
        if self._turn_running():
            await self._on_abort("wake word")
        self.stats.greetings += 1
        log.info("device %s: wake word %r; greeting", self.identity.device_id,
                 wake_word[:40])
        line = random.choice(self.config.greetings) if self.config.greetings else None

        async def greeting(sink: DeviceTurnSink) -> None:
            await sink.on_event(Heard(transcript=wake_word, user=self.identity.user))
            if line:
                await self.speak_line(sink, line, Emotion.HAPPY)

        self._turn = self._spawn(self._deliver(greeting, None))

    async def speak_line(self, sink: DeviceTurnSink, text: str, emotion: Emotion) -> None:
        """Say a fixed line through the sink: face, subtitle, the server's TTS voice.
        Without TTS (or if it fails) the line is shown without sound."""
        user = self.identity.user
        await sink.on_event(EmotionChosen(emotion=emotion, user=user))
        try:
            audio = await self.host.synthesize(text)
        except Exception as exc:  # noqa: BLE001 - a line without sound is still shown
            log.warning("device %s: cannot synthesise %r: %s", self.identity.device_id,
                        text, exc)
            audio = None
        await sink.on_event(Sentence(text=text, emotion=emotion, audio=audio, user=user))

    async def _call_tool(self, call: ToolCall) -> str:
        assert self.mcp is not None
        return await self.mcp.call(call)

    async def _deliver(self, produce: Callable[[DeviceTurnSink], Awaitable[None]],
                       listen_again: str | None) -> None:
        """Run one turn (or greeting) into a fresh sink, then end it as the protocol
        wants: ``tts stop`` once the robot has played everything, and listening again
        in auto mode (the client need not send ``listen start``)."""
        sink = DeviceTurnSink(self)
        if self._echo_gate is not None:
            self._echo_gate.reset()
        try:
            await produce(sink)
        except asyncio.CancelledError:
            # barge-in: `_on_abort` sends `tts stop` itself
            raise
        except DeviceGone:
            return
        except Exception as exc:
            log.exception("device %s: turn failed", self.identity.device_id)
            with contextlib.suppress(DeviceGone):
                await self.send_json({"type": "error", "message": f"turn failed: {exc}"})
        finally:
            self._last_voice = time.monotonic()
        try:
            if sink.tts_started:
                await self._pacer.drain()
                await self.send_json({"type": "tts", "state": "stop"})
                self._speaking = False
                if self.listen_mode in ("auto", "realtime") and not self._hears_over_reply():
                    # the mic was ignored while the robot spoke: start afresh
                    self._start_listening(self.listen_mode)
                elif self.session_mode == "auto" and self.listen_mode is None:
                    self._start_listening("auto")
            elif listen_again == "auto" and self.listen_mode is None:
                # Nothing was said, so the device never leaves Listening: keep listening.
                self._start_listening("auto")
        except DeviceGone:
            return
        current = asyncio.current_task()
        if self._queued and current is not None:
            self._spawn(self._answer_queued(current))

    async def _on_abort(self, reason: str) -> None:
        turn = self._turn
        if turn is not None and not turn.done():
            self.stats.barge_ins += 1
            log.info("device %s: barge-in (%s)", self.identity.device_id, reason)
            turn.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(turn), 2.0)
        self._pacer.reset()
        self._speaking = False
        await self.send_json({"type": "tts", "state": "stop"})
        if self.session_mode == "auto" and self.listen_mode is None:
            self._start_listening("auto")

    async def _watch_silence(self) -> None:
        """Close after ``close_after_silence_s`` without speech (saying goodbye first),
        or at once when revoked."""
        limit = self.config.close_after_silence_s
        while True:
            await asyncio.sleep(min(1.0, limit / 4))
            if self._still_allowed is not None and not self._still_allowed():
                log.warning("device %s was revoked; closing its connection",
                            self.identity.device_id)
                await self._shutdown(CLOSE_POLICY, "revoked")
                return
            if self._turn_running() or (self._detector is not None
                                        and self._detector.in_speech):
                self._last_voice = time.monotonic()
                continue
            if time.monotonic() - self._last_voice > limit:
                log.info("device %s: %.0fs without speech; closing",
                         self.identity.device_id, limit)
                if await self._say_goodbye():
                    # Clients such as py-xiaozhi go back to "listening" on ``tts stop``;
                    # closing at that instant leaves them listening on a dead socket.
                    await asyncio.sleep(self.config.close_grace_s)
                self._closed = True
                with contextlib.suppress(Exception):
                    await self.ws.close(CLOSE_NORMAL, "idle")
                return

    async def _say_goodbye(self) -> bool:
        """A last spoken line before closing for silence, ended with ``tts stop`` like any
        reply: clients show a normal end instead of a dropped connection. True when a
        goodbye was said (the close then waits ``close_grace_s``)."""
        if not self.config.goodbye:
            return False
        goodbye = self.config.goodbye

        async def farewell(sink: DeviceTurnSink) -> None:
            await self.speak_line(sink, goodbye, Emotion.SLEEPY)

        self.session_mode = None     # nothing to listen for after it
        self._turn = asyncio.create_task(self._deliver(farewell, None))
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(self._turn), 30.0)
        return True


def wake_word_key(text: str) -> str:
    """A wake word as compared: NFKC, lower case, without spaces and punctuation
    (「嘿，你好呀」 == 「嘿你好呀」, "Hi, Stack-chan" == "hi stackchan")."""
    text = unicodedata.normalize("NFKC", text).lower()
    return "".join(c for c in text if unicodedata.category(c)[0] in "LN")
