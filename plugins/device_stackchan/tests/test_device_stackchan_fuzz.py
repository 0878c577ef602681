"""Bad input on the WebSocket: every case gets an error message or a clean close, and
other devices keep being served."""

from __future__ import annotations

import asyncio
import json
import random
import struct
from pathlib import Path

import pytest

from omoide_device_stackchan.simulator import SimulatedStackChan
from omoide_device_stackchan.testing import LiveServer, speech_like, start_server


async def robot(server: LiveServer, hello: bool = True, **kw: object) -> SimulatedStackChan:
    r = SimulatedStackChan(server.url, mcp=False, speed=4.0, **kw)  # type: ignore[arg-type]
    await r.provision()
    if hello:
        await r.connect()
    return r


async def raw_connection(server: LiveServer, **kw: object) -> SimulatedStackChan:
    """Open the socket without saying hello."""
    from websockets.asyncio.client import connect
    r = await robot(server, hello=False, **kw)
    r._ws = await connect(r.ws_url or "", additional_headers=r.handshake_headers(), proxy=None)
    r._reader = asyncio.create_task(r._read())
    return r


async def still_alive(r: SimulatedStackChan) -> bool:
    await r.send_json({"type": "ping"})
    while True:
        kind, _ = await r.next_message(timeout=5)
        if kind == "pong":
            return True


async def next_error(r: SimulatedStackChan) -> str:
    while True:
        kind, payload = await r.next_message(timeout=5)
        if kind == "error":
            return str(payload["message"])


@pytest.mark.parametrize(("text", "complaint"), [
    ("{not json", "malformed JSON"), ("[1, 2]", "malformed JSON"), ("null", "malformed JSON"),
    ('"hello"', "malformed JSON"), ("{}", "unknown message type")])
async def test_malformed_json_gets_an_error_and_the_connection_lives(
        server: LiveServer, text: str, complaint: str) -> None:
    r = await robot(server)
    try:
        await r.send_raw(text)
        assert complaint in await next_error(r)
        assert await still_alive(r)
    finally:
        await r.close()


async def test_unknown_message_type_gets_an_error(server: LiveServer) -> None:
    r = await robot(server)
    try:
        await r.send_json({"type": "teleport"})
        assert "unknown message type" in await next_error(r)
        assert await still_alive(r)
    finally:
        await r.close()


@pytest.mark.parametrize("payload", [{"type": "listen", "state": "start", "mode": "psychic"},
                                     {"type": "listen", "state": "sideways"}])
async def test_unknown_listen_values_get_an_error(server: LiveServer,
                                                  payload: dict[str, str]) -> None:
    r = await robot(server)
    try:
        await r.send_json(payload)
        assert "unknown listen" in await next_error(r)
    finally:
        await r.close()


async def test_audio_before_hello_gets_an_error_and_hello_still_works(
        server: LiveServer) -> None:
    r = await raw_connection(server)
    try:
        await r.send_raw(b"\x78" * 40)
        assert "hello" in await next_error(r)
        await r.send_json({"type": "hello", "version": 1, "transport": "websocket",
                           "audio_params": {"format": "opus", "sample_rate": 16000,
                                            "channels": 1, "frame_duration": 60}})
        kind, payload = await r.next_message()
        assert kind == "hello" and payload["session_id"]
    finally:
        await r.close()


async def test_no_hello_closes_the_connection(server: LiveServer) -> None:
    r = await raw_connection(server)           # hello_timeout_s is 1 s in tests
    try:
        assert await r.wait_closed(timeout=5) == 1002
    finally:
        await r.close()


async def test_hello_with_unsupported_audio_closes(server: LiveServer) -> None:
    r = await raw_connection(server)
    try:
        await r.send_json({"type": "hello", "transport": "websocket",
                           "audio_params": {"format": "pcm", "sample_rate": 44100}})
        assert await r.wait_closed() == 1002
    finally:
        await r.close()


async def test_oversized_binary_frame_closes_with_1009(server: LiveServer) -> None:
    r = await robot(server)
    try:
        await r.send_raw(b"\x00" * 5000)
        assert await r.wait_closed() == 1009
    finally:
        await r.close()


async def test_oversized_text_closes_with_1009(server: LiveServer) -> None:
    r = await robot(server)
    try:
        await r.send_raw(json.dumps({"type": "ping", "pad": "x" * 70000}))
        assert await r.wait_closed() == 1009
    finally:
        await r.close()


async def test_invalid_opus_gets_an_error_and_listening_continues(server: LiveServer) -> None:
    r = await robot(server)
    try:
        await r.send_json({"type": "listen", "state": "start", "mode": "manual"})
        await r.send_raw(b"\xff\xfe\xfd\xfc garbage")
        assert "Opus" in await next_error(r)
        reply = await r.say(speech_like(0.5), mode="manual", timeout=10)
        assert reply.complete
    finally:
        await r.close()


async def test_frames_in_another_framing_version_close_with_1002(server: LiveServer) -> None:
    r = await robot(server, hello=False)
    r.framing_version = 2
    await r.connect()
    try:
        await r.send_raw(struct.pack(">BBH", 0, 0, 3) + b"abc")   # a v3 frame on a v2 link
        assert await r.wait_closed() == 1002
    finally:
        await r.close()


async def test_too_many_errors_close_with_a_policy_code(tmp_path: Path) -> None:
    srv = await start_server(tmp_path, pairing_required=False, max_errors=3)
    try:
        r = await robot(srv)
        for _ in range(5):
            await r.send_raw("nope")
        assert await r.wait_closed() == 1008
        await r.close()
    finally:
        await srv.stop()


async def test_disconnect_mid_turn_cancels_the_turn_and_ends_the_session(
        server: LiveServer) -> None:
    server.host.script.sentences = ["長い話。"] * 5
    server.host.script.seconds_per_sentence = 1.0
    r = await robot(server)
    await r.start_listening()   # typed text comes while listening
    await r.send_json({"type": "listen", "state": "detect", "text": "話して"})
    while (await r.next_message())[0] != "audio":
        pass
    await r.close()
    for _ in range(200):
        if server.host.ended:
            break
        await asyncio.sleep(0.02)
    assert server.host.cancelled == 1
    assert server.host.ended == [server.host.requests[0].user]


def _garbage(rng: random.Random) -> bytes | str:
    choice = rng.randrange(6)
    if choice == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))
    if choice == 1:
        return json.dumps({"type": rng.choice(["listen", "abort", "mcp", "hello", "x"]),
                           "state": rng.choice(["start", "stop", "detect", 7, None]),
                           "mode": rng.choice(["auto", "manual", "realtime", []]),
                           "payload": rng.choice([None, {"id": 99}, [1], "s"])})
    if choice == 2:
        return "".join(chr(rng.randrange(32, 0x3000)) for _ in range(rng.randrange(1, 80)))
    if choice == 3:
        return json.dumps({"type": "listen", "state": "detect", "text": "x" * rng.randrange(3)})
    if choice == 4:
        return b""
    return json.dumps({"type": "mcp", "payload": {"jsonrpc": "2.0", "id": rng.randrange(5),
                                                  "result": {"tools": "nope"}}})


async def test_a_fuzzing_device_never_disturbs_a_well_behaved_one(tmp_path: Path) -> None:
    srv = await start_server(tmp_path, pairing_required=False, max_errors=1000)
    srv.host.script.sentences = ["はい。"]
    try:
        good = await robot(srv)
        fuzzers = [await robot(srv) for _ in range(3)]

        async def fuzz(r: SimulatedStackChan, seed: int) -> None:
            rng = random.Random(seed)
            for _ in range(150):
                try:
                    await r.send_raw(_garbage(rng))
                except Exception:  # noqa: BLE001 - the server may close the socket: fine
                    return                                   # the server closed it: fine
                await asyncio.sleep(0)

        fuzzing = asyncio.gather(*(fuzz(f, i) for i, f in enumerate(fuzzers)))
        replies = [await good.say(speech_like(0.4), mode="manual", timeout=10)
                   for _ in range(3)]
        await fuzzing
        for f in fuzzers:
            await f.close()
        assert all(r.complete for r in replies)
        assert await still_alive(good)
        await good.close()
    finally:
        await srv.stop()
