"""A simulated StackChan against the real omoide server on loopback.

The server is :func:`omoide.server.app.create_app` under uvicorn with the ``fake``
test doubles for ASR, chat, TTS, embedder and store (fixed latencies, named as doubles),
the real memory engine and journal, and the real ``stackchan`` device plugin. The robot
is the plugin's simulator speaking the xiaozhi protocol over real sockets.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("omoide_device_stackchan")

from omoide.server.loopback import LoopbackOmoide, settings_from_data
from omoide_device_stackchan.simulator import ProvisioningRefused, SimulatedStackChan
from omoide_device_stackchan.testing import speech_like

REPLY = "[happy] 今日はいい日だよ。散歩しよう。"


def config_data(data_dir: Path, **chat: Any) -> dict[str, Any]:
    return yaml.safe_load(f"""
server: {{data_dir: {data_dir}}}
memory: {{extraction: {{on_disconnect: false}}}}
vad: {{use: fake, min_silence_ms: 300}}
asr: {{use: fake, text: 今日は何の日？}}
embed: {{use: fake}}
store: {{use: fake}}
tts: {{use: fake, ms_per_char: 60}}
devices: [{{use: stackchan, hello_timeout_s: 3}}]
""") | {"chat": {"use": "fake", "reply": REPLY, **chat}}


async def serve(data: dict[str, Any]) -> LoopbackOmoide:
    server = LoopbackOmoide(settings_from_data(data))
    await server.start(ready_timeout_s=60)
    return server


@pytest.fixture
async def omoide(tmp_path: Path) -> AsyncIterator[LoopbackOmoide]:
    server = await serve(config_data(tmp_path / "data"))
    try:
        yield server
    finally:
        await server.stop()


async def paired_robot(server: LoopbackOmoide, user: str, **kw: Any) -> SimulatedStackChan:
    robot = SimulatedStackChan(server.url, speed=4.0, **kw)
    server.device("stackchan").service.pairings.pair(robot.device_id, user)
    await robot.provision()
    await robot.connect()
    return robot


async def journaled(server: LoopbackOmoide, user: str) -> int:
    return sum(p.exchanges for p in await server.omoide.memory.pending(user))


async def test_a_paired_robot_talks_through_the_whole_pipeline(
        omoide: LoopbackOmoide) -> None:
    robot = await paired_robot(omoide, "hanako")
    try:
        reply = await robot.say(speech_like(1.0), mode="auto", timeout=30)
    finally:
        await robot.close()
    assert reply.complete
    assert reply.transcript == "今日は何の日?"          # NFKC-normalised by the core
    assert reply.face == "happy"
    assert reply.sentences == ["今日はいい日だよ。", "散歩しよう。"]
    # the fake TTS speaks 60 ms per character: 15 characters -> 0.9 s -> 15 frames
    assert reply.audio().duration_s == pytest.approx(0.9, abs=0.13)
    traces = omoide.omoide.traces.recent("hanako")
    assert len(traces) == 1 and "first_sentence_audio" in traces[0]["stages"]
    assert await journaled(omoide, "hanako") == 1


async def test_an_unpaired_robot_activates_when_its_code_is_paired_from_the_cli(
        omoide: LoopbackOmoide, omoide_cli: Any, tmp_path: Path) -> None:
    config = tmp_path / "omoide.yaml"
    config.write_text(yaml.safe_dump(config_data(tmp_path / "data"), allow_unicode=True))
    robot = SimulatedStackChan(omoide.url, speed=4.0, serial_number="SN-E2E-0001",
                               chip_key=b"chip-key")
    with pytest.raises(ProvisioningRefused) as info:
        await robot.provision()
    code, challenge = info.value.activation["code"], info.value.activation["challenge"]
    assert challenge
    assert await robot.activate() == 202                # polls like the firmware
    listed = omoide_cli("devices", "list", "--config", str(config))
    assert f"waiting, code {code}" in listed.stdout and "SN-E2E-0001" in listed.stdout
    polling = asyncio.create_task(robot.wait_until_activated(interval_s=0.05, timeout_s=60))
    paired = omoide_cli("devices", "pair", "--config", str(config), "--code", code,
                        "--user", "taro", "--name", "子ども部屋")
    assert paired.returncode == 0, paired.stderr
    assert await polling == 200
    await robot.provision()
    await robot.connect()
    try:
        assert (await robot.type_text("こんにちは")).complete
    finally:
        await robot.close()
    pairing = omoide.device("stackchan").service.pairings.get(robot.device_id)
    assert (pairing.user, pairing.name, pairing.client_id) == ("taro", "子ども部屋",
                                                               robot.client_id)
    assert pairing.serial_number == "SN-E2E-0001" and pairing.activation_hmac
    [trace] = omoide.omoide.traces.recent("taro")
    assert trace["device"] == robot.device_id           # the console shows which robot


async def test_revoking_from_the_cli_closes_the_robot_and_refuses_it(
        omoide: LoopbackOmoide, omoide_cli: Any, tmp_path: Path) -> None:
    config = tmp_path / "omoide.yaml"
    config.write_text(yaml.safe_dump(config_data(tmp_path / "data"), allow_unicode=True))
    robot = await paired_robot(omoide, "hanako")
    revoked = omoide_cli("devices", "revoke", "--config", str(config), robot.device_id)
    assert revoked.returncode == 0, revoked.stderr
    assert await robot.wait_closed(timeout=10) == 1008
    await robot.close()
    from websockets.exceptions import InvalidStatus
    with pytest.raises(InvalidStatus) as info:
        await robot.connect()
    assert info.value.response.status_code == 401


async def test_barge_in_stops_the_reply_and_keeps_the_exchange(tmp_path: Path) -> None:
    long_reply = "[happy] " + "".join(f"これは{i}番目の文です。" for i in range(12))
    server = await serve(config_data(tmp_path / "data", reply=long_reply))
    try:
        robot = await paired_robot(server, "hanako")
        await robot.start_listening()   # typed text comes while listening
        await robot.send_json({"type": "listen", "state": "detect", "text": "長い話をして"})
        while (await robot.next_message(timeout=10))[0] != "audio":
            pass
        await robot.abort()
        while True:
            kind, payload = await robot.next_message(timeout=10)
            if kind == "tts" and payload["state"] == "stop":
                break
        await robot.close()
        for _ in range(100):
            if await journaled(server, "hanako"):
                break
            await asyncio.sleep(0.02)
        assert await journaled(server, "hanako") == 1
        trace = server.omoide.traces.recent("hanako")[-1]
        assert "interrupted" in (trace["stages"]["done"]["note"] or "")
    finally:
        await server.stop()


async def test_robots_are_separate_users_and_a_fuzzing_one_disturbs_nobody(
        omoide: LoopbackOmoide) -> None:
    good = [await paired_robot(omoide, f"user-{i}") for i in range(2)]
    bad = await paired_robot(omoide, "mallory")
    rng = random.Random(7)

    async def misbehave() -> None:
        await bad.type_text("ひとこと")                      # one exchange, journaled
        await bad.start_listening()   # typed text comes while listening
        await bad.send_json({"type": "listen", "state": "detect", "text": "また話して"})
        for _ in range(200):
            junk: bytes | str = (bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
                                 if rng.random() < 0.5 else
                                 "{" + "".join(chr(rng.randrange(32, 127)) for _ in range(20)))
            try:
                await bad.send_raw(junk)
            except Exception:  # noqa: BLE001 - the server may close the socket: fine
                break
            await asyncio.sleep(0)
        await bad.close()                                     # gone in the middle of a turn

    async def behave(robot: SimulatedStackChan) -> list[Any]:
        return [await robot.say(speech_like(0.5), mode="manual", timeout=30)
                for _ in range(2)]

    results = await asyncio.gather(misbehave(), *(behave(r) for r in good))
    for robot in good:
        await robot.close()
    assert all(reply.complete for replies in results[1:] for reply in replies)
    for i in range(2):
        assert await journaled(omoide, f"user-{i}") == 2
    assert await journaled(omoide, "mallory") >= 1
    assert {t["user"] for t in omoide.omoide.traces.recent()} >= {"user-0", "user-1"}
