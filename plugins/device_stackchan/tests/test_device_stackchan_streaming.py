"""Recognition while the person speaks, over the real WebSocket: when speech starts the
connection opens the server's recognition stream, feeds it every frame (a pause the turn
detector bridges included), and the turn only finishes it; the stable part may go to the
device as ``stt`` before the end (``stt_partials``, off by default); speech heard while a
turn runs keeps its own stream and is answered next; a stream no turn takes is cancelled;
push-to-talk (``listen`` ``mode: manual``) is recognised while the button is held and ends
at ``listen stop``; a recogniser that cannot stream gives the transcript of exactly the
utterance's audio.

The recogniser is a small test double that hears words as loud bursts (one word a
burst, settled once silence follows it), so every transcript says which audio it got.
"""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from omoide.api import (
    ASR,
    AudioClip,
    Capabilities,
    FloatArray,
    RecognitionContext,
    RecognitionStream,
    StreamingRecognition,
    Transcript,
    TurnConfig,
    TurnDetector,
    TurnResult,
)
from omoide.testing.doubles import FakeVAD
from omoide_device_stackchan.device import StackChan, StackChanConfig
from omoide_device_stackchan.simulator import SimulatedStackChan
from omoide_device_stackchan.testing import LiveServer, ScriptedHost, speech_like

RATE = 16000
FRAME = RATE * 30 // 1000
WORDS = ("いち", "に", "さん", "よん", "ご", "ろく", "なな", "はち")


def bursts(samples: FloatArray) -> tuple[int, bool]:
    """(loud bursts of at least 90 ms in ``samples``, whether the last one is followed
    by 150 ms of quiet)."""
    frames = len(samples) // FRAME
    loud = [float(np.sqrt(np.mean(samples[i * FRAME:(i + 1) * FRAME] ** 2))) > 0.05
            for i in range(frames)]
    count, run, quiet = 0, 0, 0
    for voiced in loud:
        if voiced:
            run, quiet = run + 1, 0
            continue
        quiet += 1
        if run >= 3:
            count += 1
        run = 0
    if run >= 3:
        return count + 1, False
    return count, quiet >= 5


def words(n: int) -> str:
    return "".join(WORDS[:n])


class BurstStream(StreamingRecognition):
    """Settles a word as soon as silence follows its burst; finishing decodes the rest."""

    asr: BurstASR

    def _input_grew(self) -> None:
        count, closed = bursts(self.input_audio())
        self._set_stable(words(count if closed else max(0, count - 1)))

    async def _final_streaming(self) -> Transcript:
        self.asr.stable_at_finish.append(self.stable_text)
        count, _ = bursts(self.input_audio())
        return Transcript(words(count), "Japanese")


class BurstASR(ASR):
    """A word per loud burst; streams unless ``streams`` is false."""

    name = "bursts"
    capabilities: ClassVar[Capabilities] = Capabilities(streaming=True)

    def __init__(self, config: Any, *, streams: bool = True) -> None:
        super().__init__(config)
        self.streams = streams
        self.opened: list[RecognitionStream] = []
        self.decoded: list[AudioClip] = []
        """The audio each whole-utterance ``transcribe`` got."""
        self.stable_at_finish: list[str] = []

    async def _transcribe(self, audio: AudioClip, context: RecognitionContext) -> Transcript:
        self.decoded.append(audio)
        return Transcript(words(bursts(audio.samples)[0]), "Japanese")

    def _open_stream(self, context: RecognitionContext | None,
                     sample_rate: int) -> RecognitionStream:
        stream = BurstStream(self, context, sample_rate) if self.streams else \
            RecognitionStream(self, context, sample_rate)
        self.opened.append(stream)
        return stream


class RecognisingHost(ScriptedHost):
    """The scripted server with a recogniser: the device's stream is finished by the
    turn, which then plays the script with what it heard."""

    def __init__(self, data_dir: Path, asr: BurstASR, judge: TurnDetector | None) -> None:
        super().__init__(data_dir, FakeVAD(FakeVAD.Config(min_silence_ms=300)))
        self.asr = asr
        self.judge = judge
        self.heard: list[str] = []

    async def open_recognition(self, user: str, sample_rate: int) -> RecognitionStream:
        return self.asr.open_stream(RecognitionContext(), sample_rate)

    def turn_detector(self) -> TurnDetector | None:
        return self.judge

    async def run_turn(self, request: Any, sink: Any) -> TurnResult:
        if request.recognition is not None:
            self.script.transcript = (await request.recognition.finish()).text
        elif request.audio is not None:
            self.script.transcript = (await self.asr.transcribe(request.audio)).text
        self.heard.append(self.script.transcript)
        return await super().run_turn(request, sink)


class LengthJudge(TurnDetector):
    """Unfinished below ``finished_after_s`` of audio (a mid-sentence pause), finished above."""

    name = "length_judge"

    def _finished_probability(self, audio: FloatArray) -> float:
        return 1.0 if len(audio) / RATE >= 1.2 else 0.0


async def recognising_server(tmp_path: Path, *, streams: bool = True,
                             judge: TurnDetector | None = None,
                             **options: Any) -> tuple[LiveServer, BurstASR]:
    asr = BurstASR(BurstASR.Config(), streams=streams)
    await asr.start()
    if judge is not None:
        await judge.start()
    config = StackChanConfig.model_validate({"hello_timeout_s": 1.0,
                                             "pairing_required": False, **options})
    device = StackChan(config)
    await device.start()
    server = LiveServer(device, RecognisingHost(tmp_path / "device", asr, judge))
    await server.start()
    return server, asr


async def connected(server: LiveServer) -> SimulatedStackChan:
    robot = SimulatedStackChan(server.url, speed=2.0)
    await robot.provision()
    await robot.connect()
    return robot


def spoken(*parts: tuple[float, float]) -> AudioClip:
    """Bursts of ``(seconds, silence after)``: one word each."""
    return AudioClip(np.concatenate([speech_like(s, silence_after=q).samples
                                     for s, q in parts]), RATE)


async def messages_until_reply_ends(robot: SimulatedStackChan) -> list[tuple[str, Any]]:
    """Every message up to the reply's ``tts stop`` (audio frames left out)."""
    seen: list[tuple[str, Any]] = []
    while True:
        kind, payload = await robot.next_message(timeout=20)
        if kind != "audio":
            seen.append((kind, payload))
        if kind == "tts" and payload.get("state") == "stop":
            return seen


def stt_texts(seen: list[tuple[str, Any]]) -> list[str]:
    return [payload["text"] for kind, payload in seen if kind == "stt"]


async def streams_closed(asr: BurstASR) -> bool:
    for _ in range(100):
        if all(s.closed for s in asr.opened):
            return True
        await asyncio.sleep(0.02)
    return False


# -- the turn finishes what was heard while the person spoke --------------------------------
async def test_the_turn_finishes_the_stream_fed_while_the_person_spoke(tmp_path: Path) -> None:
    server, asr = await recognising_server(tmp_path)
    try:
        robot = await connected(server)
        reply = await robot.say(spoken((0.3, 0.2), (0.3, 0.2), (0.3, 0.0)))
        stats = server.service.connections[robot.device_id].stats
        await robot.close()
    finally:
        await server.stop()
    assert reply.complete and reply.transcript == "いちにさん"
    assert server.host.requests[0].recognition is asr.opened[0] and stats.streamed == 1
    assert asr.stable_at_finish == ["いちにさん"]   # settled before the turn ended
    assert asr.decoded == []                       # nothing recognised twice


async def test_stable_partials_go_to_the_device_as_stt_when_enabled(tmp_path: Path) -> None:
    server, _ = await recognising_server(tmp_path, stt_partials=True)
    try:
        robot = await connected(server)
        await robot.start_listening("auto")
        await robot.stream_clip(spoken((0.3, 0.2), (0.3, 0.2), (0.3, 0.8)))
        seen = await messages_until_reply_ends(robot)
        await robot.close()
    finally:
        await server.stop()
    texts = stt_texts(seen)
    assert texts[0] == "いち" and "いちに" in texts
    assert texts[-1] == "いちにさん"                # the final transcript comes last
    assert all(b.startswith(a) for a, b in itertools.pairwise(texts))


async def test_without_stt_partials_the_device_gets_only_the_final_transcript(
        tmp_path: Path) -> None:
    server, _ = await recognising_server(tmp_path)
    try:
        robot = await connected(server)
        await robot.start_listening("auto")
        await robot.stream_clip(spoken((0.3, 0.2), (0.3, 0.2), (0.3, 0.8)))
        seen = await messages_until_reply_ends(robot)
        await robot.close()
    finally:
        await server.stop()
    assert stt_texts(seen) == ["いちにさん"]


async def test_a_pause_bridged_by_the_turn_detector_continues_the_same_stream(
        tmp_path: Path) -> None:
    server, asr = await recognising_server(tmp_path, judge=LengthJudge(TurnConfig(
        max_silence_ms=2000)))
    try:
        robot = await connected(server)
        reply = await robot.say(spoken((0.5, 0.7), (0.6, 0.0)))
        stats = server.service.connections[robot.device_id].stats
        await robot.close()
    finally:
        await server.stop()
    assert reply.transcript == "いちに" and stats.pauses_bridged == 1
    assert len(asr.opened) == 1 and len(server.host.requests) == 1


# -- nothing said is lost ----------------------------------------------------------------------
async def test_speech_during_a_running_turn_keeps_its_own_stream_and_is_answered_next(
        tmp_path: Path) -> None:
    server, asr = await recognising_server(tmp_path)
    server.host.script.delay_s = 1.5            # the first turn is still thinking
    try:
        robot = await connected(server)
        await robot.start_listening("auto")
        await robot.stream_clip(spoken((0.4, 0.5)))
        await asyncio.sleep(0.1)
        await robot.stream_clip(spoken((0.3, 0.2), (0.3, 0.2), (0.3, 0.6)))
        first = await robot.collect(timeout=20)
        second = await robot.collect(timeout=20)
        stats = server.service.connections[robot.device_id].stats
        await robot.close()
    finally:
        await server.stop()
    assert (first.transcript, second.transcript) == ("いち", "いちにさん")
    assert stats.queued == 1 and stats.queued_dropped == 0 and stats.streamed == 2
    assert [r.recognition for r in server.host.requests] == asr.opened


async def test_a_stream_no_turn_takes_is_cancelled(tmp_path: Path) -> None:
    server, asr = await recognising_server(tmp_path)
    try:
        robot = await connected(server)
        await robot.start_listening("auto")
        await robot.stream_clip(speech_like(0.6))    # then the robot goes away mid-word
        await robot.close()
        closed = await streams_closed(asr)
    finally:
        await server.stop()
    assert len(asr.opened) == 1 and closed
    assert server.host.requests == [] and asr.stable_at_finish == []


# -- push-to-talk ------------------------------------------------------------------------------
class CountingJudge(TurnDetector):
    """Never finished; counts how often it is asked."""

    name = "counting_judge"
    asked = 0

    def _finished_probability(self, audio: FloatArray) -> float:
        type(self).asked += 1
        return 0.0


async def test_push_to_talk_ends_the_turn_at_listen_stop_with_the_stream_fed_while_held(
        tmp_path: Path) -> None:
    """``listen`` ``mode: manual``: the button is the endpoint. A long pause while it is
    held ends nothing (no VAD silence, no turn stage is asked), ``listen stop`` right
    after the last word ends the turn, and what was said was recognised while held."""
    CountingJudge.asked = 0
    server, asr = await recognising_server(tmp_path, judge=CountingJudge(TurnConfig(
        max_silence_ms=10000)))
    try:
        robot = await connected(server)
        reply = await robot.say(spoken((0.3, 1.5), (0.3, 0.2), (0.3, 0.0)), mode="manual")
        stats = server.service.connections[robot.device_id].stats
        await robot.close()
    finally:
        await server.stop()
    assert reply.complete and reply.transcript == "いちにさん"
    assert len(server.host.requests) == 1 and CountingJudge.asked == 0
    assert server.host.requests[0].recognition is asr.opened[0] and stats.streamed == 1
    assert asr.stable_at_finish == ["いちに"]   # fed before the stop: only the last word left
    assert asr.decoded == []


async def test_push_to_talk_turns_each_get_their_own_stream(tmp_path: Path) -> None:
    server, asr = await recognising_server(tmp_path)
    try:
        robot = await connected(server)
        first = await robot.say(spoken((0.3, 0.2), (0.3, 0.0)), mode="manual")
        second = await robot.say(spoken((0.3, 0.0)), mode="manual")
        await robot.close()
    finally:
        await server.stop()
    assert (first.transcript, second.transcript) == ("いちに", "いち")
    assert [r.recognition for r in server.host.requests] == asr.opened
    assert len(asr.opened) == 2 and asr.decoded == []


# -- a recogniser that cannot stream -------------------------------------------------------------
async def test_a_recogniser_that_cannot_stream_hears_exactly_the_utterance(
        tmp_path: Path) -> None:
    server, asr = await recognising_server(tmp_path, streams=False)
    try:
        robot = await connected(server)
        reply = await robot.say(spoken((0.3, 0.2), (0.3, 0.0)))
        await robot.close()
    finally:
        await server.stop()
    request = server.host.requests[0]
    assert reply.transcript == "いちに" and request.recognition is asr.opened[0]
    assert len(asr.decoded) == 1
    np.testing.assert_array_equal(asr.decoded[0].samples, request.audio.samples)
