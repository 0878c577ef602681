"""Skills end to end, offline: a simulated StackChan asks for a timer, hears it go off,
has omoide remember and forget something — through the real server, the stand-in chat's
tool calls, the skills plugin, the real memory engine and the StackChan protocol.

Test doubles: ASR, TTS, embedder and store (``fake``); the robot types its utterances
(``listen detect`` with text), as the protocol allows.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("omoide_device_stackchan")
pytest.importorskip("omoide_skills")

from omoide.server.loopback import LoopbackOmoide, settings_from_data
from omoide_device_stackchan.simulator import SimulatedStackChan


def config_data(data_dir: Path) -> dict[str, Any]:
    return yaml.safe_load(f"""
server: {{data_dir: {data_dir}}}
memory: {{extraction: {{on_disconnect: false}}}}
asr: {{use: fake}}
embed: {{use: fake}}
store: {{use: fake}}
chat: {{use: standin, entities: false}}
tts: {{use: fake, ms_per_char: 20}}
devices: [{{use: stackchan, hello_timeout_s: 3}}]
tools: [{{use: clock}}, {{use: timers}}, {{use: memory}}]
""")


@pytest.fixture
async def omoide(tmp_path: Path) -> AsyncIterator[LoopbackOmoide]:
    server = LoopbackOmoide(settings_from_data(config_data(tmp_path / "data")))
    await server.start(ready_timeout_s=60)
    try:
        yield server
    finally:
        await server.stop()


async def robot_of(server: LoopbackOmoide, user: str) -> SimulatedStackChan:
    robot = SimulatedStackChan(server.url)
    server.device("stackchan").service.pairings.pair(robot.device_id, user)
    await robot.provision()
    await robot.connect()
    return robot


async def announcement(robot: SimulatedStackChan, timeout: float = 30) -> list[str]:
    """The sentences of the next thing the robot says unprompted."""
    sentences: list[str] = []
    while True:
        kind, payload = await robot.next_message(timeout)
        if kind == "tts" and payload["state"] == "sentence_start":
            sentences.append(payload["text"])
        if kind == "tts" and payload["state"] == "stop":
            return sentences


async def test_a_timer_asked_for_by_voice_goes_off_on_the_robot(omoide: LoopbackOmoide) -> None:
    robot = await robot_of(omoide, "hanako")
    try:
        reply = await robot.type_text("1秒タイマー")
        went_off = await announcement(robot)
    finally:
        await robot.close()
    assert reply.text.startswith("1秒のタイマーをセットしたよ。")
    assert went_off == ["1秒のタイマーが終わったよ！"]
    [trace] = omoide.omoide.traces.recent("hanako")
    assert [(c["name"], c["outcome"]) for c in trace["tools"]] == [("set_timer", "ok")]


async def test_a_timer_that_goes_off_while_the_robot_is_away_is_heard_when_it_is_back(
        omoide: LoopbackOmoide) -> None:
    import httpx

    from omoide.testing.auth import admin_headers
    async with httpx.AsyncClient(base_url=omoide.url,
                                 headers=admin_headers(omoide.omoide.settings)) as http:
        r = await http.post("/v1/turns", json={"user": "taro", "text": "1秒タイマー"})
    assert r.json()["reply"].startswith("1秒のタイマーをセットしたよ。")
    queue = omoide.omoide.announcer.queue
    for _ in range(500):
        if await queue.pending("taro"):
            break
        await asyncio.sleep(0.02)
    assert [a.text for a in await queue.pending("taro")] == ["1秒のタイマーが終わったよ！"]
    robot = await robot_of(omoide, "taro")
    try:
        assert await announcement(robot) == ["1秒のタイマーが終わったよ！"]
    finally:
        await robot.close()
    assert await queue.pending("taro") == []


async def test_remember_and_forget_by_voice_with_a_yes(omoide: LoopbackOmoide) -> None:
    memory = omoide.omoide.memory
    robot = await robot_of(omoide, "hanako")
    try:
        await robot.type_text("来週の土曜日に友達と箱根に行くんだ")
        stored = await robot.type_text("それは覚えておいて")
        remembered = [m.text for m in await memory.list_memories("hanako")]
        asked = await robot.type_text("箱根のことは忘れて")
        still_there = [m.text for m in await memory.list_memories("hanako")]
        done = await robot.type_text("うん、お願い")
    finally:
        await robot.close()
    assert stored.text == "わかった、覚えておくね。"
    assert len(remembered) == 1 and "箱根" in remembered[0]
    assert asked.text.startswith("「あなたは") and asked.text.endswith("という記憶を忘れていい？")
    assert still_there == remembered
    assert done.text == "わかった、忘れたよ。"
    assert await memory.list_memories("hanako") == []


async def test_a_no_keeps_the_memory(omoide: LoopbackOmoide) -> None:
    memory = omoide.omoide.memory
    robot = await robot_of(omoide, "hanako")
    try:
        await robot.type_text("毎朝6時に起きてるんだ")
        await robot.type_text("それは覚えておいて")
        await robot.type_text("6時に起きることは忘れて")
        kept = await robot.type_text("いや、やっぱりやめて")
    finally:
        await robot.close()
    assert kept.text == "わかった、やめておくね。"
    assert len(await memory.list_memories("hanako")) == 1
