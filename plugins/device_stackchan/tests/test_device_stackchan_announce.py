"""Announcements: the robot speaks unprompted (a timer went off), or hears it when back."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from omoide.announcements import Announcement
from omoide.types import Emotion
from omoide_device_stackchan.emotions import stackchan_face
from omoide_device_stackchan.simulator import SimulatedStackChan
from omoide_device_stackchan.testing import LiveServer, tone


def _announcement(user: str, *sentences: str) -> Announcement:
    return Announcement("a1", user, "".join(sentences), Emotion.SURPRISED, datetime.now(UTC),
                        tuple((s, tone(0.2)) for s in sentences))


async def _heard(robot: SimulatedStackChan, timeout: float = 10) -> dict[str, Any]:
    """What the robot received up to ``tts stop``: face, subtitles, audio frames."""
    heard: dict[str, Any] = {"face": None, "sentences": [], "frames": 0, "states": []}
    while True:
        kind, payload = await robot.next_message(timeout)
        if kind == "llm":
            heard["face"] = payload.get("emotion")
        elif kind == "audio":
            heard["frames"] += 1
        elif kind == "tts":
            heard["states"].append(payload["state"])
            if payload["state"] == "sentence_start":
                heard["sentences"].append(payload["text"])
            if payload["state"] == "stop":
                return heard


async def _connected(server: LiveServer) -> tuple[SimulatedStackChan, str]:
    robot = SimulatedStackChan(server.url)
    await robot.provision()
    await robot.connect()
    for _ in range(200):
        conns = list(server.service.connections.values())
        if conns and server.service.announcer.reaches(conns[0].identity.user):
            return robot, conns[0].identity.user
        await asyncio.sleep(0.02)
    raise AssertionError("the robot never became reachable")


async def test_a_connected_robot_speaks_an_announcement(server: LiveServer) -> None:
    robot, user = await _connected(server)
    try:
        delivered = await server.device.announce(
            user, _announcement(user, "タイマーが終わったよ！", "お湯を止めてね。"))
        heard = await _heard(robot)
    finally:
        await robot.close()
    assert delivered
    assert heard["face"] == stackchan_face(Emotion.SURPRISED)
    assert heard["sentences"] == ["タイマーが終わったよ！", "お湯を止めてね。"]
    assert heard["states"][0] == "start" and heard["frames"] > 0


async def test_a_person_without_a_connected_robot_is_not_reached(server: LiveServer) -> None:
    assert not server.device.reaches("nobody")
    assert not await server.device.announce("nobody", _announcement("nobody", "やあ。"))


async def test_a_robot_that_comes_back_hears_what_was_queued(server: LiveServer) -> None:
    robot = SimulatedStackChan(server.url)
    user = f"device-{robot.device_id.replace(':', '')}"
    server.host.announcements[user] = [_announcement(user, "7時だよ！")]
    await robot.provision()
    await robot.connect()
    try:
        heard = await _heard(robot)
    finally:
        await robot.close()
    assert heard["sentences"] == ["7時だよ！"]
    assert server.host.announcements == {}
