"""A whole conversation over the real WebSocket: hello, listening, turns, barge-in."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from omoide.types import Emotion
from omoide_device_stackchan.emotions import STACKCHAN_FACES
from omoide_device_stackchan.simulator import SimulatedStackChan
from omoide_device_stackchan.testing import LiveServer, speech_like, start_server


async def connected(server: LiveServer, **kw: object) -> SimulatedStackChan:
    robot = SimulatedStackChan(server.url, speed=4.0, **kw)  # type: ignore[arg-type]
    await robot.provision()
    await robot.connect()
    return robot


async def test_server_hello_announces_24khz_60ms_and_a_session(server: LiveServer) -> None:
    robot = await connected(server)
    try:
        hello = robot.server_hello
        assert hello is not None and hello["type"] == "hello"
        assert hello["transport"] == "websocket"
        assert hello["audio_params"] == {"format": "opus", "sample_rate": 24000, "channels": 1,
                                         "frame_duration": 60}
        assert hello["session_id"]
    finally:
        await robot.close()


async def test_auto_mode_turn_runs_stt_llm_tts_in_order(server: LiveServer) -> None:
    robot = await connected(server)
    try:
        reply = await robot.say(speech_like(1.0), mode="auto", timeout=20)
    finally:
        await robot.close()
    assert reply.complete
    assert reply.transcript == "こんにちは"
    assert reply.face == "happy" and reply.emoji == "🙂"
    assert reply.sentences == ["はい、元気です。", "あなたは？"]
    assert reply.stt_at <= reply.llm_at <= reply.tts_start_at <= reply.first_audio_at \
        <= reply.tts_stop_at
    # two 0.12 s sentences at 60 ms per frame: 2 frames each
    assert len(reply.frames) == 4
    assert reply.frame_sentence == [0, 0, 1, 1]
    assert abs(reply.audio().duration_s - 0.24) < 0.01
    request = server.host.requests[0]
    assert request.audio is not None and request.audio.sample_rate == 16000
    assert 0.8 < request.audio.duration_s < 2.0
    assert request.end_of_speech_at is not None
    assert request.session_id == robot.session_id


async def test_manual_mode_turn_starts_on_listen_stop(server: LiveServer) -> None:
    robot = await connected(server)
    try:
        reply = await robot.say(speech_like(0.6), mode="manual", timeout=20)
    finally:
        await robot.close()
    assert reply.complete and reply.transcript == "こんにちは"
    assert abs(server.host.requests[0].audio.duration_s - 0.6) < 0.07


async def test_reply_audio_is_paced_in_real_time_after_the_pre_buffer(
        server: LiveServer) -> None:
    server.host.script.sentences = ["ながい文です。"]
    server.host.script.seconds_per_sentence = 1.2   # 20 frames
    robot = await connected(server)
    try:
        reply = await robot.say(speech_like(0.5), mode="manual", timeout=20)
    finally:
        await robot.close()
    times = reply.frame_times
    assert len(times) == 20
    # the 5-frame pre-buffer arrives at once; the remaining 15 take ~15 x 60 ms
    assert times[4] - times[0] < 0.15
    assert 0.75 < times[-1] - times[4] < 1.4   # not sent as fast as possible (~0 s)


async def test_typed_text_through_listen_detect_is_answered(server: LiveServer) -> None:
    robot = await connected(server)
    try:
        reply = await robot.type_text("今日は何曜日？")
    finally:
        await robot.close()
    assert reply.transcript == "今日は何曜日？"
    assert server.host.requests[0].text == "今日は何曜日？"


async def test_wake_word_detect_starts_no_turn(server: LiveServer) -> None:
    robot = await connected(server)
    try:
        await robot.send_json({"type": "listen", "state": "detect", "text": "你好小智"})
        await robot.send_json({"type": "ping"})
        kind, _ = await robot.next_message()
    finally:
        await robot.close()
    assert kind == "pong"
    assert server.host.requests == []


async def test_abort_cancels_the_turn_and_stops_speech_at_once(server: LiveServer) -> None:
    server.host.script.sentences = ["一つ目。", "二つ目。", "三つ目。", "四つ目。"]
    server.host.script.seconds_per_sentence = 1.0
    robot = await connected(server)
    try:
        await robot.start_listening()   # typed text comes while listening
        await robot.send_json({"type": "listen", "state": "detect", "text": "話して"})
        while (await robot.next_message())[0] != "audio":
            pass
        await robot.abort()
        kinds = []
        while True:
            kind, payload = await robot.next_message()
            kinds.append(kind if kind != "tts" else f"tts {payload['state']}")
            if kinds[-1] == "tts stop":
                break
        await asyncio.sleep(0.3)
        late = robot._events.qsize()
    finally:
        await robot.close()
    assert server.host.cancelled == 1
    assert "tts sentence_start" not in kinds          # no further sentence after abort
    assert late == 0                                  # nothing after tts stop
    assert server.service.closed[-1].stats.barge_ins == 1


@pytest.mark.parametrize("version", [1, 2, 3])
async def test_every_framing_version_carries_audio_both_ways(server: LiveServer,
                                                              version: int) -> None:
    server.host.script.sentences = ["はい。"]
    server.host.script.seconds_per_sentence = 0.3
    robot = await connected(server)
    robot.framing_version = version
    await robot.close()
    await robot.connect()
    try:
        reply = await robot.say(speech_like(0.5), mode="manual", timeout=20)
    finally:
        await robot.close()
    assert len(reply.frames) == 5
    assert server.host.requests[-1].audio.duration_s > 0.4


async def test_every_emotion_reaches_the_device_as_a_stackchan_face(
        server: LiveServer) -> None:
    server.host.script.sentences = ["うん。"]
    robot = await connected(server)
    faces = {}
    try:
        for emotion in Emotion:
            server.host.script.emotion = emotion
            faces[emotion] = (await robot.type_text("ねえ")).face
    finally:
        await robot.close()
    assert set(faces.values()) <= set(STACKCHAN_FACES)
    assert faces[Emotion.THINKING] == "doubtful" and faces[Emotion.SAD] == "sad"


async def test_a_failing_turn_reports_an_error_and_keeps_the_connection(
        server: LiveServer) -> None:
    server.host.script.fail_with = "chat is down"
    robot = await connected(server)
    try:
        reply = await robot.type_text("ねえ")
        server.host.script.fail_with = None
        second = await robot.type_text("もう一回")
    finally:
        await robot.close()
    assert any("chat is down" in e for e in reply.errors)
    assert second.complete


async def test_silence_closes_the_connection_after_the_configured_time(
        tmp_path: Path) -> None:
    srv = await start_server(tmp_path, None, pairing_required=False,
                             close_after_silence_s=0.5)
    try:
        robot = await connected(srv)
        code = await robot.wait_closed(timeout=5)
    finally:
        await srv.stop()
    assert code == 1000
    assert srv.host.ended == [srv.service.closed[-1].identity.user]


async def test_energy_fallback_finds_end_of_speech_without_a_server_vad(tmp_path: Path) -> None:
    srv = await start_server(tmp_path, None, pairing_required=False)
    try:
        robot = await connected(srv)
        reply = await robot.say(speech_like(0.8), mode="auto", timeout=20)
        await robot.close()
    finally:
        await srv.stop()
    assert reply.complete
    assert 0.7 < srv.host.requests[0].audio.duration_s < 1.6


async def test_realtime_mode_with_aec_lets_the_voice_interrupt_the_robot(
        server: LiveServer) -> None:
    server.host.script.sentences = ["一つ目。", "二つ目。", "三つ目。"]
    server.host.script.seconds_per_sentence = 1.0
    robot = SimulatedStackChan(server.url, speed=2.0)
    await robot.provision()
    await robot.connect(hello={
        "type": "hello", "version": 1, "transport": "websocket",
        "features": {"aec": True},
        "audio_params": {"format": "opus", "sample_rate": 16000, "channels": 1,
                         "frame_duration": 60}})
    try:
        await robot.send_json({"type": "listen", "state": "start", "mode": "realtime"})
        await robot.stream_clip(speech_like(0.6, silence_after=0.6))
        while (await robot.next_message(timeout=10))[0] != "audio":
            pass
        await robot.stream_clip(speech_like(0.6))        # the user talks over the robot
        kinds = []
        while "tts stop" not in kinds:
            kind, payload = await robot.next_message(timeout=10)
            kinds.append(f"tts {payload['state']}" if kind == "tts" else kind)
    finally:
        await robot.close()
    assert server.host.cancelled >= 1
    assert server.service.closed[-1].stats.barge_ins >= 1


async def test_without_aec_the_robot_is_not_interrupted_by_its_own_voice(
        server: LiveServer) -> None:
    server.host.script.sentences = ["一つ目。"]
    server.host.script.seconds_per_sentence = 0.6
    robot = await connected(server)
    try:
        await robot.send_json({"type": "listen", "state": "start", "mode": "realtime"})
        await robot.stream_clip(speech_like(0.6, silence_after=0.6))
        while (await robot.next_message(timeout=10))[0] != "audio":
            pass
        await robot.stream_clip(speech_like(0.3, silence_after=0.5))   # its own echo
        while True:
            kind, payload = await robot.next_message(timeout=10)
            if kind == "tts" and payload["state"] == "stop":
                break
        await asyncio.sleep(0.3)
    finally:
        await robot.close()
    assert server.host.cancelled == 0
    assert len(server.host.requests) == 1


async def test_an_utterance_with_nothing_to_say_keeps_auto_mode_listening(
        server: LiveServer) -> None:
    server.host.script.sentences = []
    robot = await connected(server)
    try:
        await robot.send_json({"type": "listen", "state": "start", "mode": "auto"})
        await robot.stream_clip(speech_like(0.5, silence_after=0.6))
        kind, _ = await robot.next_message(timeout=10)
        assert kind == "stt"
        server.host.script.sentences = ["はい。"]
        await robot.stream_clip(speech_like(0.5, silence_after=0.6))   # no new listen start
        kinds = []
        while "tts" not in kinds:
            kinds.append((await robot.next_message(timeout=10))[0])
    finally:
        await robot.close()
    assert len(server.host.requests) == 2


async def test_nothing_heard_sends_no_empty_stt(server: LiveServer) -> None:
    server.host.script.transcript = ""
    server.host.script.sentences = []
    robot = await connected(server)
    try:
        await robot.start_listening("manual")
        await robot.stream_clip(speech_like(0.5))
        await robot.send_json({"type": "listen", "state": "stop"})
        while server.host.completed < 1:          # the turn ran and heard nothing
            await asyncio.sleep(0.01)
        await robot.send_json({"type": "ping"})
        kind, _ = await robot.next_message()
    finally:
        await robot.close()
    assert kind == "pong"                          # no {"type": "stt", "text": ""} first
    assert robot.stray == []
