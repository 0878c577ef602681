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
from omoide_device_stackchan.listening import TurnEnd, UtteranceBuffer
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


async def listened(turn_end: TurnEnd, audio: FloatArray) -> int:
    """Feed ``audio`` in 60 ms frames through FakeVAD's end-of-speech detector to
    ``turn_end`` in the device's order; returns how many judgements had started (or
    finished) when the voice's stop was reported."""
    detector = FakeVAD(FakeVAD.Config(min_silence_ms=300)).new_detector()
    buffer, asked_at_pause = UtteranceBuffer(RATE), -1
    judge = turn_end.detector
    assert isinstance(judge, LengthJudge)
    for start in range(0, len(audio), 960):
        buffer.append(audio[start:start + 960])
        for event in detector.push(audio[start:start + 960]):
            if event.kind == "speech_start":
                turn_end.resume()
            else:
                asked_at_pause = judge.asked
                end = int(event.at_s * RATE)
                turn_end.pause(buffer.take(0, end), end)
        turn_end.listen(detector.silence_from_s, buffer, 0)
        await asyncio.sleep(0.01)     # the judgements in the background get their turn
    return asked_at_pause


class CountingJudge(LengthJudge):
    name = "counting_judge"
    asked = 0

    async def finished_probability(self, audio: FloatArray) -> float:
        self.asked += 1
        return await super().finished_probability(audio)


async def test_the_judgement_starts_at_a_short_silence_and_serves_the_pause() -> None:
    judge = await started(CountingJudge(TurnConfig(max_silence_ms=2000)))
    turn_end = TurnEnd(judge)
    asked_at_pause = await listened(turn_end, speech_like(1.2, silence_after=0.5).samples)
    await asyncio.sleep(0.2)
    assert asked_at_pause == 1 and judge.asked == 1 and turn_end.early_used == 1
    assert turn_end.due(turn_end.paused_at or 0) and turn_end.probability == 1.0
    assert len(judge.judged) == 1 and 1.1 < judge.judged[0] < 1.3   # the voice up to its stop


async def test_an_early_judgement_is_discarded_when_speech_resumes() -> None:
    judge = await started(CountingJudge(TurnConfig(max_silence_ms=2000)))
    turn_end = TurnEnd(judge)
    first, second = speech_like(0.6, silence_after=0.2), speech_like(0.8, silence_after=0.5)
    await listened(turn_end, np.concatenate([first.samples, second.samples]))
    await asyncio.sleep(0.2)
    # the 0.6 s before the short stop was judged (unfinished) and dropped; the pause
    # uses the judgement of the whole utterance, which is finished
    assert judge.asked == 2 and turn_end.early_used == 1
    assert turn_end.due(turn_end.paused_at or 0) and turn_end.probability == 1.0


async def text_read(turn_end: TurnEnd) -> None:
    """Until the judgement and the text heard up to the pause are both in (they come from
    worker threads: a fixed sleep is a race on a busy machine)."""
    for _ in range(400):
        turn_end.due(turn_end.paused_at or 0)      # takes in what has come
        if turn_end.text is not None and turn_end.probability is not None:
            return
        await asyncio.sleep(0.025)


def heard_as(text: str, asked: list[str]) -> Any:
    """What the recogniser heard up to a pause, for a detector that reads text."""
    async def hearing(through_s: float) -> str:
        assert 1.1 < through_s < 1.3     # the voice up to its stop
        asked.append(text)
        return text
    return hearing


async def test_a_pause_after_a_particle_waits_though_the_audio_sounds_finished() -> None:
    judge = await started(CountingJudge(TurnConfig(
        max_silence_ms=2000, text_complete_silence_ms=400, text_open_silence_ms=1000)))
    turn_end, asked = TurnEnd(judge), []
    turn_end.hearing = heard_as("来週の土曜日に", asked)
    await listened(turn_end, speech_like(1.2, silence_after=0.5).samples)   # judged finished
    await text_read(turn_end)
    paused_at = turn_end.paused_at or 0
    assert not turn_end.due(paused_at + RATE * 900 // 1000)
    assert turn_end.probability == 1.0 and turn_end.text == "来週の土曜日に"
    assert turn_end.due(paused_at + RATE)
    assert asked == ["来週の土曜日に"]     # asked once, with the early judgement


async def test_a_complete_sentence_ends_soon_though_the_audio_sounds_unfinished() -> None:
    # (text_min_probability 0: the words are trusted however unsure the audio is)
    judge = await started(CountingJudge(TurnConfig(
        max_silence_ms=2000, text_complete_silence_ms=400, text_min_probability=0.0)))
    LengthJudge.finished_after_s = 99.0     # the flat voice the model judges unfinished
    try:
        turn_end, asked = TurnEnd(judge), []
        turn_end.hearing = heard_as("友達と箱根に行くんだ", asked)
        await listened(turn_end, speech_like(1.2, silence_after=0.5).samples)
        await text_read(turn_end)
    finally:
        LengthJudge.finished_after_s = 1.0
    paused_at = turn_end.paused_at or 0
    assert not turn_end.due(paused_at + RATE * 300 // 1000)
    assert turn_end.due(paused_at + RATE * 400 // 1000)     # not the 2 s ceiling
    assert turn_end.probability == 0.0


async def test_the_words_are_asked_from_the_first_silent_frame_before_the_judgement() -> None:
    """A recognition pass takes longer than a judgement: it starts as soon as the voice
    stops, the judgement only after the short silence that makes it worth the cost."""
    judge = await started(CountingJudge(TurnConfig(
        max_silence_ms=2000, text_complete_silence_ms=400, text_open_silence_ms=1000)))
    turn_end, asked = TurnEnd(judge), []
    turn_end.hearing = heard_as("来週の土曜日に", asked)
    await listened(turn_end, speech_like(1.2, silence_after=0.1).samples)
    await asyncio.sleep(0.05)
    assert asked == ["来週の土曜日に"] and judge.asked == 0
    assert not turn_end.pausing


async def test_a_detector_that_reads_no_text_never_asks_for_it() -> None:
    judge = await started(CountingJudge(TurnConfig(max_silence_ms=2000)))
    turn_end, asked = TurnEnd(judge), []
    turn_end.hearing = heard_as("来週の土曜日に", asked)
    await listened(turn_end, speech_like(1.2, silence_after=0.5).samples)
    await asyncio.sleep(0.2)
    assert turn_end.due(turn_end.paused_at or 0) and asked == []


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


async def early_end(turn_end: TurnEnd, audio: FloatArray) -> int | None:
    """``audio`` heard as the device hears it, then what :meth:`TurnEnd.ends_early` says
    once the early judgement (and the words, when read) are in."""
    await listened(turn_end, audio)
    for _ in range(400):
        judgement = turn_end._early
        heard = turn_end._early_heard
        if judgement is not None and judgement[1].done() and \
                (heard is None or heard[1] is None or heard[1].done()):
            break
        await asyncio.sleep(0.025)
    return turn_end.ends_early(len(audio))


async def test_a_sure_end_ends_the_turn_before_the_vads_silence() -> None:
    """Judged finished at 150 ms of silence, with words that end complete: the turn ends
    there, where the voice stopped, though the VAD's 300 ms have not passed."""
    judge = await started(CountingJudge(TurnConfig(
        max_silence_ms=2000, text_complete_silence_ms=0, text_open_silence_ms=1000)))
    turn_end = TurnEnd(judge)
    turn_end.hearing = heard_as("友達と箱根に行くんだ", [])
    at = await early_end(turn_end, speech_like(1.2, silence_after=0.24).samples)
    assert at is not None and 1.1 * RATE < at < 1.3 * RATE
    assert not turn_end.pausing and turn_end.ended_early == 1
    assert turn_end.probability == 1.0 and turn_end.text == "友達と箱根に行くんだ"


async def test_words_that_go_on_or_an_unfinished_voice_wait_for_the_pause() -> None:
    judge = await started(CountingJudge(TurnConfig(
        max_silence_ms=2000, text_complete_silence_ms=0, text_open_silence_ms=1000)))
    turn_end = TurnEnd(judge)
    turn_end.hearing = heard_as("来週の土曜日に", [])
    assert await early_end(turn_end, speech_like(1.2, silence_after=0.24).samples) is None
    LengthJudge.finished_after_s = 99.0     # the voice sounds unfinished
    try:
        unsure = TurnEnd(await started(CountingJudge(TurnConfig(max_silence_ms=2000))))
        assert await early_end(unsure, speech_like(1.2, silence_after=0.24).samples) is None
    finally:
        LengthJudge.finished_after_s = 1.0
    assert turn_end.ended_early == unsure.ended_early == 0
