"""Turn taking over the real WebSocket: a pause is not the end of a turn when the server's
turn detector says the person is not finished, and speech while a turn runs is never
lost: it is queued and answered next, or (voice barge-in) interrupts the reply with the
whole utterance from its first voiced frame."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from omoide.api import AudioClip, FloatArray, TurnConfig, TurnDetector
from omoide.testing.doubles import FakeVAD
from omoide_device_stackchan.device import StackChan, StackChanConfig
from omoide_device_stackchan.simulator import WEB_PAGE, SimulatedStackChan
from omoide_device_stackchan.testing import LiveServer, ScriptedHost, speech_like

RATE = 16000


class LengthJudge(TurnDetector):
    """A turn detector for tests: an utterance shorter than ``finished_after_s`` is
    unfinished (the person paused mid-sentence), a longer one is finished."""

    name = "length_judge"
    finished_after_s: ClassVar[float] = 1.0
    fail = False

    def __init__(self, config: TurnConfig) -> None:
        super().__init__(config)
        self.judged: list[float] = []

    def _finished_probability(self, audio: FloatArray) -> float:
        if self.fail:
            raise RuntimeError("model crashed")
        self.judged.append(len(audio) / RATE)
        return 1.0 if len(audio) / RATE >= self.finished_after_s else 0.0


class JudgedHost(ScriptedHost):
    """The scripted server with a turn detector, as a `turn:` stage gives the real one."""

    def __init__(self, data_dir: Path, vad: Any, judge: TurnDetector | None) -> None:
        super().__init__(data_dir, vad)
        self.judge = judge

    def turn_detector(self) -> TurnDetector | None:
        return self.judge


async def judged_server(tmp_path: Path, judge: TurnDetector | None,
                        **options: Any) -> LiveServer:
    config = StackChanConfig.model_validate({"hello_timeout_s": 1.0,
                                             "pairing_required": False, **options})
    device = StackChan(config)
    await device.start()
    vad = FakeVAD(FakeVAD.Config(min_silence_ms=300))
    server = LiveServer(device, JudgedHost(tmp_path / "device", vad, judge))
    await server.start()
    return server


async def connected(server: LiveServer, **kw: Any) -> SimulatedStackChan:
    robot = SimulatedStackChan(server.url, speed=2.0, **kw)
    await robot.provision()
    await robot.connect()
    return robot


def phrase_pause_phrase(pause_s: float) -> AudioClip:
    """Two 0.6 s phrases with a pause between them, then the end of speech."""
    first = speech_like(0.6, silence_after=pause_s).samples
    second = speech_like(0.6).samples
    return AudioClip(np.concatenate([first, second]), RATE)


async def started(judge: TurnDetector) -> TurnDetector:
    await judge.start()
    return judge


# -- finished or pausing ----------------------------------------------------------------
async def test_without_a_turn_detector_a_pause_longer_than_the_silence_cuts_the_turn(
        tmp_path: Path) -> None:
    server = await judged_server(tmp_path, None)
    server.host.script.delay_s = 1.0
    try:
        robot = await connected(server)
        await robot.say(phrase_pause_phrase(0.7))
        await robot.collect(timeout=20)    # the second half: queued, a turn of its own
        await robot.close()
    finally:
        await server.stop()
    assert [r.audio.duration_s < 1.2 for r in server.host.requests] == [True, True]


async def test_a_pause_judged_unfinished_keeps_the_utterance_whole(tmp_path: Path) -> None:
    judge = await started(LengthJudge(TurnConfig(max_silence_ms=2000)))
    server = await judged_server(tmp_path, judge)
    try:
        robot = await connected(server)
        reply = await robot.say(phrase_pause_phrase(0.7))
        stats = server.service.connections[robot.device_id].stats
        await robot.close()
    finally:
        await server.stop()
    assert reply.complete and len(server.host.requests) == 1
    assert server.host.requests[0].audio.duration_s >= 1.9     # both phrases and the pause
    assert judge.judged[0] < 1.0 and judge.judged[-1] >= 1.9    # asked at each pause
    assert stats.pauses_bridged == 1


async def test_an_unfinished_pause_still_ends_at_the_ceiling(tmp_path: Path) -> None:
    judge = await started(LengthJudge(TurnConfig(max_silence_ms=600)))
    LengthJudge.finished_after_s = 99.0     # never finished: only the ceiling ends it
    try:
        server = await judged_server(tmp_path, judge)
        try:
            robot = await connected(server)
            reply = await robot.say(speech_like(0.6))
            await robot.close()
        finally:
            await server.stop()
    finally:
        LengthJudge.finished_after_s = 1.0
    assert reply.complete and len(server.host.requests) == 1


async def test_a_failing_detector_falls_back_to_silence_only_endpointing(
        tmp_path: Path) -> None:
    judge = await started(LengthJudge(TurnConfig(fallback_silence_ms=400)))
    judge.fail = True
    server = await judged_server(tmp_path, judge)
    try:
        robot = await connected(server)
        reply = await robot.say(speech_like(0.6))
        await robot.close()
    finally:
        await server.stop()
    assert reply.complete and len(server.host.requests) == 1


# -- nothing said is lost -----------------------------------------------------------------
async def test_speech_while_the_recogniser_is_busy_is_queued_and_answered_next(
        tmp_path: Path) -> None:
    server = await judged_server(tmp_path, None)
    server.host.script.delay_s = 1.5              # a slow recogniser
    try:
        robot = await connected(server)
        await robot.start_listening("auto")
        await robot.stream_clip(speech_like(0.6, silence_after=0.5))
        await asyncio.sleep(0.1)
        await robot.stream_clip(speech_like(0.9, silence_after=0.6))   # while it thinks
        first = await robot.collect(timeout=20)
        second = await robot.collect(timeout=20)
        stats = server.service.connections[robot.device_id].stats
        await robot.close()
    finally:
        await server.stop()
    assert first.complete and second.complete
    assert server.host.cancelled == 0             # the first turn was not interrupted
    assert len(server.host.requests) == 2 and stats.queued == 1
    assert server.host.requests[1].audio.duration_s >= 0.9   # all of it


async def test_talking_over_the_reply_interrupts_it_with_the_whole_utterance(
        tmp_path: Path) -> None:
    server = await judged_server(tmp_path, None, voice_barge_in=True)
    server.host.script.sentences = ["一つ目の文です。", "二つ目の文です。", "三つ目の文です。",
                                    "四つ目の文です。"]
    server.host.script.seconds_per_sentence = 0.6
    try:
        robot = await connected(server, habits=WEB_PAGE)
        await robot.wake()
        await robot.start_listening("realtime")
        await robot.stream_clip(speech_like(0.5, silence_after=0.5))
        interrupted = await robot.listen_to_reply(
            echo_gain=0.05, talk_over=speech_like(1.6, silence_after=0.8), after_s=0.9)
        server.host.script.sentences = ["はい。"]
        answer = await robot.collect(timeout=20)
        stats = server.service.connections[robot.device_id].stats
        await robot.close()
    finally:
        await server.stop()
    assert len(interrupted.frames) < 40 and answer.complete
    assert stats.voice_barge_ins == 1 and len(server.host.requests) == 2
    assert server.host.requests[1].audio.duration_s >= 1.6   # from its first voiced frame
