"""A robot paired to a household, against the real omoide server on loopback.

The server runs the ``fake`` ASR, chat, TTS, embedder and store doubles, the real memory
engine and journal and the real ``stackchan`` plugin; the robot is its simulator over
real sockets. A household whose voice no one recognised is a guest recalls and stores
nothing of anyone; the same robot answering as a member uses that member's memory.
Changes made from the CLI or the owner's API apply at the robot's next turn.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

pytest.importorskip("omoide_device_stackchan")

from omoide.server.loopback import LoopbackOmoide, settings_from_data
from omoide.testing.auth import admin_headers
from omoide.types import Memory
from omoide_device_stackchan.simulator import SimulatedStackChan
from omoide_device_stackchan.testing import speech_like

ALLERGY = "あなたはそばアレルギーだ。"


def config_data(data_dir: Path) -> dict[str, Any]:
    return yaml.safe_load(f"""
server: {{data_dir: {data_dir}}}
memory: {{extraction: {{on_disconnect: false}}}}
vad: {{use: fake, min_silence_ms: 300}}
asr: {{use: fake, text: 何が食べられないんだっけ？}}
embed: {{use: fake}}
store: {{use: fake}}
chat: {{use: fake, reply: "[neutral] ええと、なんだったかな。"}}
tts: {{use: fake, ms_per_char: 10}}
devices: [{{use: stackchan, hello_timeout_s: 3}}]
""")


@pytest.fixture
async def omoide(tmp_path: Path) -> AsyncIterator[LoopbackOmoide]:
    server = LoopbackOmoide(settings_from_data(config_data(tmp_path / "data")))
    await server.start(ready_timeout_s=60)
    await server.omoide.memory.add_memories("alice", [
        Memory("m-alice", "alice", ALLERGY, datetime.now(UTC))])
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "omoide.yaml"
    path.write_text(yaml.safe_dump(config_data(tmp_path / "data"), allow_unicode=True))
    return path


async def robot_of(server: LoopbackOmoide, user: str) -> SimulatedStackChan:
    robot = SimulatedStackChan(server.url, speed=4.0)
    server.device("stackchan").service.pairings.pair(robot.device_id, user)
    await robot.provision()
    await robot.connect()
    return robot


def last_prompt(server: LoopbackOmoide) -> str:
    chat: Any = server.omoide.assistant.chat
    return str(chat.requests[-1][0].content)


async def journaled(server: LoopbackOmoide, user: str) -> int:
    return sum(p.exchanges for p in await server.omoide.memory.pending(user))


async def test_a_guest_household_recalls_and_stores_no_ones_memory(
        omoide: LoopbackOmoide, omoide_cli: Any, config_file: Path) -> None:
    robot = await robot_of(omoide, "alice")
    try:
        changed = omoide_cli("devices", "household", "--config", str(config_file),
                             robot.device_id, "--add", "bob", "--guest")
        assert changed.returncode == 0, changed.stderr
        assert "a guest" in changed.stdout
        spoken = await robot.say(speech_like(1.0), mode="auto", timeout=30)
        typed = await robot.type_text("アレルギーある?")
    finally:
        await robot.close()
    assert spoken.complete and typed.complete
    assert "そば" not in last_prompt(omoide)
    [first, second] = omoide.omoide.traces.recent("guest")
    assert first["guest"] is True and second["guest"] is True
    assert first["stages"]["retrieve"]["note"] == "guest: no one's memory is read or written"
    assert omoide.omoide.traces.recent("alice") == []
    for person in ("alice", "bob", "guest"):
        assert await journaled(omoide, person) == 0
    assert [m.text for m in await omoide.omoide.memory.list_memories("alice")] == [ALLERGY]
    assert await omoide.omoide.memory.list_memories("guest") == []


async def test_the_default_person_set_from_the_api_answers_at_the_next_turn(
        omoide: LoopbackOmoide, tmp_path: Path) -> None:
    robot = await robot_of(omoide, "bob")
    try:
        async with httpx.AsyncClient() as client:
            answer = await client.patch(
                f"{omoide.url}/v1/devices/{robot.device_id}/household",
                json={"add": ["alice"], "default_person": "alice"},
                headers=admin_headers(tmp_path / "data"))
        assert answer.status_code == 200, answer.text
        assert answer.json()["device"]["household"] == {
            "members": ["bob", "alice"], "default_person": "alice", "guest": False}
        assert (await robot.type_text("アレルギーある?")).complete
    finally:
        await robot.close()
    assert ALLERGY.rstrip("。") in last_prompt(omoide)
    [trace] = omoide.omoide.traces.recent("alice")
    assert "guest" not in trace
    assert await journaled(omoide, "alice") == 1
    assert await journaled(omoide, "bob") == 0


async def test_a_robot_paired_to_one_person_answers_as_that_person(
        omoide: LoopbackOmoide) -> None:
    robot = await robot_of(omoide, "alice")
    try:
        assert (await robot.type_text("アレルギーある?")).complete
    finally:
        await robot.close()
    assert ALLERGY.rstrip("。") in last_prompt(omoide)
    assert await journaled(omoide, "alice") == 1
