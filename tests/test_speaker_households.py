"""Whose memory a turn uses is decided by the voice, on one robot of a household.

The real omoide server on loopback runs the real ``resemblyzer`` speaker stage, the real
memory engine and journal and the real ``stackchan`` plugin (``fake`` ASR, chat, TTS,
embedder and store); the robot is its simulator over real sockets, sending Opus. Alice
speaks with OpenJTalk's voice, Bob with Kokoro's jm_kumo; a visitor with Kokoro's
jf_gongitsune, whom no one enrolled (of the bench's voices, the one this encoder keeps
farthest from both: the figures on close voices are the bench's).
Synthetic voices are a proxy for people.
"""

from __future__ import annotations

import stat
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from omoide.server.loopback import LoopbackOmoide, settings_from_data
from omoide.testing import voices
from omoide.testing.auth import admin_headers
from omoide.testing.voices import ASK, ENROL, kokoro, openjtalk
from omoide.types import Memory

simulator = pytest.importorskip("omoide_device_stackchan.simulator")
bundled = pytest.importorskip("omoide_speaker_resemblyzer.bundled")
voices.require_engines()
pytestmark = voices.weights_mark(bundled)

ALICE_FACT = "あなたはそばアレルギーだ。"
BOB_FACT = "あなたはえびアレルギーだ。"


@pytest.fixture
async def omoide(tmp_path: Path) -> AsyncIterator[LoopbackOmoide]:
    server = LoopbackOmoide(settings_from_data(voices.speaker_server_config(
        tmp_path / "data", asr_text="何が食べられないんだっけ？")))
    await server.start(ready_timeout_s=120)
    memory = server.omoide.memory
    await memory.add_memories("alice", [Memory("m-a", "alice", ALICE_FACT, datetime.now(UTC))])
    await memory.add_memories("bob", [Memory("m-b", "bob", BOB_FACT, datetime.now(UTC))])
    try:
        yield server
    finally:
        await server.stop()


async def enrol_alice_and_bob(server: LoopbackOmoide) -> None:
    speaker = server.omoide.assistant.speaker
    assert speaker is not None
    alice = await speaker.enrol("alice", [openjtalk(t) for t in ENROL], source="test")
    bob = await speaker.enrol("bob", [kokoro(t) for t in ENROL], source="test")
    assert alice.used == bob.used == len(ENROL)


async def test_each_voice_recalls_only_its_own_memories_and_a_visitor_none(
        omoide: LoopbackOmoide) -> None:
    await enrol_alice_and_bob(omoide)
    robot = await voices.household_robot(omoide, simulator, default=None)
    prompts, speakers = [], []
    try:
        for clip in (openjtalk(ASK), kokoro(ASK, "jm_kumo"), kokoro(ASK, "jf_gongitsune")):
            reply = await robot.say(clip, mode="manual", timeout=120)
            assert reply.complete
            prompts.append(voices.last_prompt(omoide))
            speakers.append(omoide.omoide.traces.recent()[-1]["speaker"])
    finally:
        await robot.close()
    alice, bob, visitor = prompts
    assert "そば" in alice and "えび" not in alice
    assert "えび" in bob and "そば" not in bob
    assert "そば" not in visitor and "えび" not in visitor
    assert [s["person"] for s in speakers] == ["alice", "bob", None]
    assert [s["voice"] for s in speakers] == ["alice", "bob", None]
    assert speakers[0]["reason"] == "matched" and speakers[0]["score"] > 0.75
    assert speakers[2]["reason"] in ("no_match", "ambiguous")
    [visit] = omoide.omoide.traces.recent("guest")
    assert visit["guest"] is True and "speaker" in visit["stages"]


async def test_an_unknown_voice_is_the_default_person_when_the_household_has_one(
        omoide: LoopbackOmoide, tmp_path: Path) -> None:
    await enrol_alice_and_bob(omoide)
    robot = await voices.household_robot(omoide, simulator, default="bob")
    try:
        visitor = kokoro(ASK, "jf_gongitsune")
        assert (await robot.say(visitor, mode="manual", timeout=120)).complete
    finally:
        await robot.close()
    assert "えび" in voices.last_prompt(omoide)
    [trace] = omoide.omoide.traces.recent("bob")
    assert trace["speaker"]["person"] == "bob" and trace["speaker"]["voice"] is None
    async with httpx.AsyncClient() as client:       # the console's feed says it too
        feed = await client.get(f"{omoide.url}/v1/turns", params={"user": "bob"},
                                headers=admin_headers(tmp_path / "data"))
    [turn] = feed.json()["turns"]
    assert turn["speaker"]["voice"] is None and turn["speaker"]["reason"] == "no_match"


async def test_a_household_with_no_voiceprint_is_its_default_persons_as_before(
        omoide: LoopbackOmoide) -> None:
    robot = await voices.household_robot(omoide, simulator, default="alice")
    try:
        assert (await robot.say(kokoro(ASK, "jm_kumo"), mode="manual", timeout=120)).complete
    finally:
        await robot.close()
    assert "そば" in voices.last_prompt(omoide)
    [trace] = omoide.omoide.traces.recent("alice")
    assert "speaker" not in trace and "speaker" not in trace["stages"]


async def test_voiceprints_are_kept_privately_in_the_data_dir(
        omoide: LoopbackOmoide, tmp_path: Path) -> None:
    await enrol_alice_and_bob(omoide)
    folder = tmp_path / "data" / "voices"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for person in ("alice", "bob"):
        assert stat.S_IMODE((folder / f"{person}.json").stat().st_mode) == 0o600
