"""The habits of the clients nobody here wrote, played by the simulator: the reference
server's web page (no ``listen start`` after a reply, an empty frame when recording
stops, wake word then ``listen start``, credentials in the query, a bare hello),
py-xiaozhi (no ``aec``, ``listen start`` before typing) and the firmware (wake word,
goodbye on idle)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from omoide.testing.doubles import FakeVAD
from omoide_device_stackchan.simulator import PY_XIAOZHI, WEB_PAGE, SimulatedStackChan
from omoide_device_stackchan.testing import LiveServer, speech_like, start_server


async def connected(server: LiveServer, **kw: object) -> SimulatedStackChan:
    robot = SimulatedStackChan(server.url, speed=4.0, **kw)  # type: ignore[arg-type]
    await robot.provision()
    await robot.connect()
    return robot


def kinds_of(robot: SimulatedStackChan) -> list[str]:
    return [s["kind"] for s in robot.stray]


# -- the web page ---------------------------------------------------------------------
async def test_the_web_page_connects_with_query_credentials_and_a_bare_hello(
        server: LiveServer) -> None:
    robot = await connected(server, habits=WEB_PAGE)
    try:
        hello = robot.server_hello
    finally:
        await robot.close()
    assert hello is not None and hello["transport"] == "websocket" and hello["session_id"]


async def test_its_wake_word_gets_a_greeting_not_an_answer(server: LiveServer) -> None:
    robot = await connected(server, habits=WEB_PAGE)
    try:
        greeting = await robot.wake("嘿，你好呀")
    finally:
        await robot.close()
    assert greeting.complete
    assert greeting.transcript == "嘿，你好呀"
    assert greeting.sentences[0] in StackChanGreetings
    assert len(greeting.frames) == 3                    # the fixed line, in the TTS voice
    assert server.host.requests == []                   # no turn: nothing journaled
    assert server.host.spoken == greeting.sentences


StackChanGreetings = ("はーい、なあに？", "うん、どうしたの？", "はい、聞いてるよ。")


async def test_listen_start_right_after_the_wake_word_does_not_cancel_the_greeting(
        server: LiveServer) -> None:
    server.host.script.line_seconds = 1.0               # long enough to be interrupted
    robot = await connected(server, habits=WEB_PAGE)
    try:
        greeting = await robot.wake()                   # detect, then listen start
    finally:
        await robot.close()
    assert greeting.complete and len(greeting.frames) == 17
    assert server.service.closed[-1].stats.barge_ins == 0


async def test_it_is_heard_again_after_a_reply_without_sending_listen_start(
        server: LiveServer) -> None:
    robot = await connected(server, habits=WEB_PAGE)
    try:
        await robot.wake()
        first = await robot.say(speech_like(0.6), mode="auto", timeout=20)
        second = await robot.say(speech_like(0.6), mode="auto", timeout=20)
    finally:
        await robot.close()
    assert first.complete and second.complete
    assert len(server.host.requests) == 2
    starts = [m for m in robot.sent if m.get("type") == "listen" and m.get("state") == "start"]
    assert len(starts) == 1                             # the one after the wake word


async def test_its_empty_frame_ends_the_utterance_and_is_no_error(tmp_path: Path) -> None:
    # a VAD that would wait 5 s of silence: only the end frame can end the utterance soon
    server = await start_server(tmp_path, FakeVAD(FakeVAD.Config(min_silence_ms=5000)),
                                pairing_required=False, max_errors=1)
    try:
        robot = await connected(server, habits=WEB_PAGE)
        await robot.wake()
        await robot.stream_clip(speech_like(0.6))
        await robot.send_end_frame()
        reply = await robot.collect(timeout=3)
        await robot.send_end_frame()                    # again, while nobody talks
        await robot.send_end_frame()
        reply2 = await robot.say(speech_like(0.5), mode="auto", timeout=10)
        stats = server.service.connections[robot.device_id].stats
        await robot.close()
    finally:
        await server.stop()
    assert reply.complete and reply2.complete
    assert stats.errors == 0 and stats.end_frames == 4
    assert 0.5 < server.host.requests[0].audio.duration_s < 1.2


async def test_its_typed_text_is_answered_as_an_utterance(server: LiveServer) -> None:
    robot = await connected(server, habits=WEB_PAGE)
    try:
        await robot.wake()
        reply = await robot.type_text("今日は何曜日？")
    finally:
        await robot.close()
    assert reply.complete and server.host.requests[0].text == "今日は何曜日？"


# -- py-xiaozhi and the firmware -------------------------------------------------------
async def test_py_xiaozhi_types_after_opening_a_listening_session(server: LiveServer) -> None:
    robot = await connected(server, habits=PY_XIAOZHI)
    try:
        reply = await robot.type_text("こんばんは")
    finally:
        await robot.close()
    assert "aec" not in robot.hello()["features"]
    assert reply.complete and server.host.requests[0].text == "こんばんは"


async def test_the_firmwares_own_wake_word_gets_a_greeting(server: LiveServer) -> None:
    robot = await connected(server)
    try:
        greeting = await robot.wake("Hi, ESP")          # reported before any listen start
        reply = await robot.say(speech_like(0.6), mode="auto", timeout=20)
    finally:
        await robot.close()
    assert greeting.transcript == "Hi, ESP" and greeting.sentences[0] in StackChanGreetings
    assert reply.complete and len(server.host.requests) == 1


async def test_without_greetings_the_wake_word_is_only_acknowledged(tmp_path: Path) -> None:
    server = await start_server(tmp_path, pairing_required=False, greetings=[])
    try:
        robot = await connected(server)
        await robot.send_json({"type": "listen", "state": "detect", "text": "你好小智"})
        await robot.send_json({"type": "ping"})
        kinds = [(await robot.next_message())[0] for _ in range(2)]
        await robot.close()
    finally:
        await server.stop()
    assert sorted(kinds) == ["pong", "stt"] and server.host.requests == []


async def test_silence_ends_with_a_spoken_goodbye_then_a_normal_close(tmp_path: Path) -> None:
    server = await start_server(tmp_path, pairing_required=False, close_after_silence_s=0.5)
    try:
        robot = await connected(server)
        goodbye = await robot.collect(timeout=10)
        code = await robot.wait_closed(timeout=5)
        await robot.close()
    finally:
        await server.stop()
    assert goodbye.complete and goodbye.face == "sleepy"
    assert goodbye.sentences == ["そろそろ休むね。また話しかけてね。"]
    assert len(goodbye.frames) == 3
    assert code == 1000


# -- voice barge-in for clients without echo cancellation ------------------------------
LONG_REPLY = ["一つ目の文です。", "二つ目の文です。", "三つ目の文です。", "四つ目の文です。"]


async def echo_server(tmp_path: Path, **options: object) -> LiveServer:
    server = await start_server(tmp_path, FakeVAD(FakeVAD.Config(min_silence_ms=300)),
                                pairing_required=False, **options)
    server.host.script.sentences = LONG_REPLY
    server.host.script.seconds_per_sentence = 0.6
    return server


async def test_off_by_default_talking_over_the_reply_changes_nothing(tmp_path: Path) -> None:
    server = await echo_server(tmp_path)
    try:
        robot = await connected(server, habits=WEB_PAGE)
        await robot.wake()
        await robot.start_listening("realtime")
        await robot.stream_clip(speech_like(0.5, silence_after=0.5))
        reply = await robot.listen_to_reply(echo_gain=0.3, talk_over=speech_like(0.8),
                                            after_s=0.9)
        await robot.close()
    finally:
        await server.stop()
    assert reply.complete and len(reply.frames) == 40
    assert server.host.cancelled == 0


async def test_the_reply_own_echo_does_not_interrupt_it(tmp_path: Path) -> None:
    server = await echo_server(tmp_path, voice_barge_in=True)
    try:
        robot = await connected(server, habits=WEB_PAGE)
        await robot.wake()
        await robot.start_listening("realtime")
        await robot.stream_clip(speech_like(0.5, silence_after=0.5))
        reply = await robot.listen_to_reply(echo_gain=0.5)
        await robot.close()
    finally:
        await server.stop()
    assert reply.complete and len(reply.frames) == 40
    assert server.host.cancelled == 0


async def test_the_user_talking_over_the_reply_interrupts_it_and_is_heard(
        tmp_path: Path) -> None:
    server = await echo_server(tmp_path, voice_barge_in=True)
    try:
        robot = await connected(server, habits=WEB_PAGE)
        await robot.wake()
        await robot.start_listening("realtime")
        await robot.stream_clip(speech_like(0.5, silence_after=0.5))
        interrupted = await robot.listen_to_reply(
            echo_gain=0.05, talk_over=speech_like(1.2, silence_after=0.8), after_s=0.9)
        server.host.script.sentences = ["はい。"]
        answer = await robot.collect(timeout=20)
        stats = server.service.connections[robot.device_id].stats
        await robot.close()
    finally:
        await server.stop()
    assert len(interrupted.frames) < 40
    assert stats.voice_barge_ins == 1 and server.host.cancelled == 1
    assert answer.complete and len(server.host.requests) == 2
    assert server.host.requests[1].audio.duration_s > 0.8   # the whole talk-over


async def test_a_client_announcing_aec_is_left_to_the_vad(tmp_path: Path) -> None:
    server = await echo_server(tmp_path, voice_barge_in=True)
    try:
        robot = SimulatedStackChan(server.url, speed=4.0, habits=PY_XIAOZHI)
        await robot.provision()
        hello = robot.hello()
        hello["features"]["aec"] = True
        await robot.connect(hello=hello)
        await robot.start_listening("realtime")
        await robot.stream_clip(speech_like(0.5, silence_after=0.5))
        reply = await robot.listen_to_reply(echo_gain=0.0, talk_over=speech_like(0.8),
                                            after_s=0.9)
        stats = server.service.connections[robot.device_id].stats
        await robot.close()
        await asyncio.sleep(0)
    finally:
        await server.stop()
    assert len(reply.frames) < 40
    assert stats.voice_barge_ins == 0 and stats.barge_ins >= 1


async def test_listening_stops_when_the_client_says_stop(server: LiveServer) -> None:
    robot = await connected(server, habits=WEB_PAGE)
    try:
        await robot.wake()
        assert (await robot.say(speech_like(0.6), mode="auto", timeout=20)).complete
        await robot.send_json({"type": "listen", "state": "stop"})
        await robot.stream_clip(speech_like(0.6, silence_after=0.6))
        await robot.send_json({"type": "ping"})
        kind, _ = await robot.next_message()
    finally:
        await robot.close()
    assert kind == "pong"
    assert len(server.host.requests) == 1
