"""A moment pushed to a real StackChan (its simulator over real sockets, the real
server, the stackchan plugin): a household's second member's reminder reaches the robot
they share, unprompted, and is said once; it is journaled as an exchange of theirs and
their short-term history carries it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import yaml

pytest.importorskip("omoide_device_stackchan")

from omoide.server.loopback import LoopbackOmoide, settings_from_data
from omoide.types import Memory
from omoide_device_stackchan.simulator import SimulatedStackChan

TOKYO = ZoneInfo("Asia/Tokyo")


def config_data(data_dir: Path) -> dict[str, Any]:
    return yaml.safe_load(f"""
server: {{data_dir: {data_dir}}}
memory: {{extraction: {{on_disconnect: false}}}}
vad: {{use: fake, min_silence_ms: 300}}
asr: {{use: fake, text: こんにちは}}
embed: {{use: fake}}
store: {{use: fake}}
chat: {{use: standin}}
tts: {{use: fake, ms_per_char: 10}}
devices: [{{use: stackchan, hello_timeout_s: 3}}]
moments: {{quiet_hours: "00:00-00:00", check_seconds: 0.2}}
""")


@pytest.fixture
async def omoide(tmp_path: Path) -> AsyncIterator[LoopbackOmoide]:
    server = LoopbackOmoide(settings_from_data(config_data(tmp_path / "data")))
    await server.start(ready_timeout_s=60)
    now = datetime.now(TOKYO)
    at = now - timedelta(minutes=1)   # its hour-long window opened a minute ago
    reminder = (f"あなたは毎日{at.hour}時{at.minute}分に薬を飲むので、その時間に声をかけて"
                "ほしいと頼んだ。")
    await server.omoide.memory.add_memories("ben", [
        Memory("m-ben", "ben", reminder, now - timedelta(days=1), (), "habit")])
    await server.omoide.memory.journal.note_user("ben")
    try:
        yield server
    finally:
        await server.stop()


async def _sentences(robot: SimulatedStackChan, timeout: float = 15) -> list[str]:
    said = []
    while True:
        kind, payload = await robot.next_message(timeout)
        if kind == "tts" and payload["state"] == "sentence_start":
            said.append(payload["text"])
        if kind == "tts" and payload["state"] == "stop":
            return said


async def test_a_members_reminder_reaches_the_shared_robot_once(
        omoide: LoopbackOmoide) -> None:
    robot = SimulatedStackChan(omoide.url, speed=4.0)
    pairings = omoide.device("stackchan").service.pairings
    pairings.pair(robot.device_id, "aki")
    pairings.update_household(robot.device_id, add=("ben",))
    await robot.provision()
    await robot.connect()
    try:
        said = await _sentences(robot)
        assert said == ["そろそろ薬を飲む時間だよ。"]
        with pytest.raises((asyncio.TimeoutError, TimeoutError)):
            await _sentences(robot, timeout=1.5)   # said once, not at every look
    finally:
        await robot.close()
    listing = await omoide.omoide.moments.scheduler.listing("ben")
    assert [(e["kind"], e["how"]) for e in listing["said"]] == [("reminder", "pushed")]


async def test_the_pushed_reminder_is_in_bens_journal_and_his_conversation(
        omoide: LoopbackOmoide) -> None:
    robot = SimulatedStackChan(omoide.url, speed=4.0)
    pairings = omoide.device("stackchan").service.pairings
    pairings.pair(robot.device_id, "aki")
    pairings.update_household(robot.device_id, add=("ben",))
    await robot.provision()
    await robot.connect()
    try:
        await _sentences(robot)
    finally:
        await robot.close()
    [said] = (await omoide.omoide.moments.scheduler.listing("ben"))["said"]
    journal = omoide.omoide.memory.journal
    [exchange] = await journal.exchanges([f"moment-{said['key']}"])
    assert (exchange.user, exchange.user_text) == ("ben", "")
    assert exchange.assistant_text == "そろそろ薬を飲む時間だよ。"
    assert [e.id for e in await journal.pending("ben")] == [exchange.id]
    history = omoide.omoide.assistant.history.recent("ben", datetime.now(TOKYO))
    assert [e.assistant_text for e in history] == [exchange.assistant_text]
