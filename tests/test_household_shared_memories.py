"""Household-shared memories (issue 28, part 4): what every member recalls, a guest none.

The real omoide server on loopback, the real Resemblyzer speaker stage, the real memory
engine (``fake`` embedder and store, ASR, chat, TTS) and the real ``stackchan`` plugin;
the robot is its simulator over real sockets. A family trip is imported for the
household's shared owner (``household-alice``: its first member's household), each
member has a memory of their own. Alice speaks with OpenJTalk's voice, Bob with Kokoro's
jm_kumo, a visitor with jf_gongitsune.
Synthetic voices are a proxy for people.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from omoide.components.device import Household
from omoide.server.loopback import LoopbackOmoide, settings_from_data
from omoide.testing import voices
from omoide.testing.voices import ASK, ENROL, kokoro, openjtalk
from omoide.types import Memory
from omoide.voices.household_memory import shared_owner

simulator = pytest.importorskip("omoide_device_stackchan.simulator")
bundled = pytest.importorskip("omoide_speaker_resemblyzer.bundled")
voices.require_engines()
pytestmark = voices.weights_mark(bundled)

TRIP = "家族旅行は来月、みんなで箱根に行く。"
ALICE_FACT = "あなたはそばアレルギーだ。"
BOB_FACT = "あなたはえびアレルギーだ。"


@pytest.fixture
async def omoide(tmp_path: Path) -> AsyncIterator[LoopbackOmoide]:
    server = LoopbackOmoide(settings_from_data(voices.speaker_server_config(
        tmp_path / "data", asr_text="何が食べられないんだっけ？来月の予定は？")))
    await server.start(ready_timeout_s=120)
    try:
        yield server
    finally:
        await server.stop()


async def test_every_member_recalls_the_households_memories_and_a_visitor_none(
        omoide: LoopbackOmoide) -> None:
    speaker = omoide.omoide.assistant.speaker
    assert speaker is not None
    await speaker.enrol("alice", [openjtalk(t) for t in ENROL], source="test")
    await speaker.enrol("bob", [kokoro(t) for t in ENROL], source="test")
    owner = shared_owner(Household(("alice", "bob"), None))
    assert owner == "household-alice"
    now = datetime.now(UTC)
    memory = omoide.omoide.memory
    await memory.add_memories(owner, [Memory("m-trip", owner, TRIP, now)])
    await memory.add_memories("alice", [Memory("m-a", "alice", ALICE_FACT, now)])
    await memory.add_memories("bob", [Memory("m-b", "bob", BOB_FACT, now)])
    robot = await voices.household_robot(omoide, simulator, default=None)
    prompts, notes = [], []
    try:
        for clip in (openjtalk(ASK), kokoro(ASK, "jm_kumo"), kokoro(ASK, "jf_gongitsune")):
            assert (await robot.say(clip, mode="manual", timeout=120)).complete
            prompts.append(voices.last_prompt(omoide))
            notes.append(omoide.omoide.traces.recent()[-1]["stages"]["retrieve"]["note"])
    finally:
        await robot.close()
    alice, bob, visitor = prompts
    assert "箱根" in alice and "そば" in alice and "えび" not in alice
    assert "箱根" in bob and "えび" in bob and "そば" not in bob
    assert "箱根" not in visitor and "そば" not in visitor and "えび" not in visitor
    assert "1 shared by the household" in notes[0] and "1 shared by the household" in notes[1]
