"""A voice identified while it is spoken (issue 28: identification within the turn's budget).

Real parts: the Resemblyzer speaker stage (its bundled weights), voiceprints in a data dir,
OpenJTalk's voice (Alice) and Kokoro's jm_kumo (Bob). The utterance is fed as a device
feeds it, in 60 ms frames; its embedding starts after two seconds, and at the end of
speech the rest is embedded and combined. The combined voiceprint tells the same voices
apart as the whole utterance's does.
Synthetic voices are a proxy for people.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest
import yaml

from omoide.components.device import Household
from omoide.components.speaker import SpeakerReason
from omoide.testing.voices import ASK, ENROL, RATE, kokoro, openjtalk, require_engines, weights_mark
from omoide.types import AudioClip
from omoide.voices import SpeakerIdentifier, VoiceprintStore
from omoide.voices.early import VoiceWhileSpoken

bundled = pytest.importorskip("omoide_speaker_resemblyzer.bundled")
encoder_module = pytest.importorskip("omoide_speaker_resemblyzer.encoder")
require_engines()
pytestmark = weights_mark(bundled)

HOUSEHOLD = Household(("alice", "bob"), None)


@pytest.fixture
async def identifier(tmp_path: Path) -> AsyncIterator[SpeakerIdentifier]:
    encoder = encoder_module.Resemblyzer(encoder_module.ResemblyzerConfig(timeout_s=60))
    await encoder.start()
    found = SpeakerIdentifier(encoder, VoiceprintStore(tmp_path / "data"))
    await found.enrol("alice", [openjtalk(t) for t in ENROL], source="test")
    await found.enrol("bob", [kokoro(t) for t in ENROL], source="test")
    yield found
    await encoder.stop()


async def spoken(identifier: SpeakerIdentifier, clip: AudioClip) -> VoiceWhileSpoken:
    """Feed ``clip`` as a robot streams it, a 60 ms frame every 60 ms."""
    voice = VoiceWhileSpoken(identifier, HOUSEHOLD, RATE)
    frame = RATE * 60 // 1000
    for at in range(0, len(clip.samples), frame):
        voice.feed(clip.samples[at:at + frame])
        await asyncio.sleep(0.06)
    return voice


def padded(clip: AudioClip, before_s: float = 0.0, after_s: float = 0.0) -> AudioClip:
    quiet = np.zeros(round(before_s * RATE), np.float32), np.zeros(round(after_s * RATE),
                                                                    np.float32)
    return AudioClip(np.concatenate([quiet[0], clip.samples, quiet[1]]), RATE)


async def test_each_voice_is_named_while_spoken_as_from_its_whole_utterance(
        identifier: SpeakerIdentifier) -> None:
    for person, clip in (("alice", openjtalk(ASK)), ("bob", kokoro(ASK))):
        assert clip.duration_s > 3.5   # there is a rest to embed after the first 2 s
        voice = await spoken(identifier, clip)
        assert voice.started   # the embedding began before the end of speech
        early = await voice.identify(clip)
        whole = await identifier.identify(clip, HOUSEHOLD)
        assert voice.used is not None and not voice.used.whole
        assert (early.voice, early.person) == (whole.voice, whole.person) == (person, person)
        assert early.identification is not None and whole.identification is not None
        assert early.identification.score == pytest.approx(whole.identification.score,
                                                           abs=0.03)


async def test_the_silence_that_ends_a_turn_is_not_embedded_after_it(
        identifier: SpeakerIdentifier) -> None:
    """A VAD ends a turn after a silence: nothing in it is worth an embedding at the end
    of speech, so the turn's voice is what was embedded while the person spoke."""
    clip = padded(openjtalk(ASK), after_s=1.5)
    voice = await spoken(identifier, clip)
    found = await voice.identify(clip)
    assert voice.used is not None and (voice.used.rest_s, voice.used.whole) == (0.0, False)
    assert found.voice == "alice"


async def test_a_part_without_voice_adds_nothing(identifier: SpeakerIdentifier) -> None:
    """The first two seconds hold no voice: the parts after them name the voice."""
    clip = padded(kokoro(ASK), before_s=2.5)
    voice = await spoken(identifier, clip)
    found = await voice.identify(clip)
    assert voice.used is not None and not voice.used.whole
    assert found.voice == "bob"


async def test_two_voices_one_after_the_other_are_nobody(
        identifier: SpeakerIdentifier) -> None:
    """Alice's voice for the first part and Bob's for the rest is never one of them."""
    first = openjtalk(ENROL[1])
    second = kokoro(ENROL[2])
    both = AudioClip(np.concatenate([first.samples[:round(2.0 * RATE)], second.samples]),
                     RATE)
    voice = await spoken(identifier, both)
    found = await voice.identify(both)
    assert found.voice is None
    assert found.identification is not None
    assert found.identification.reason in (SpeakerReason.MIXED_VOICES, SpeakerReason.NO_MATCH,
                                           SpeakerReason.AMBIGUOUS)


async def test_a_given_up_utterance_stops_its_embedding(identifier: SpeakerIdentifier) -> None:
    voice = await spoken(identifier, openjtalk(ASK))
    assert voice.started
    await voice.aclose()
    assert voice.used is None


async def test_a_robot_of_a_household_has_its_voice_identified_while_it_is_spoken(
        tmp_path: Path) -> None:
    """The real server and the stackchan plugin, the robot's simulator over sockets
    speaking in real time: the turn is Alice's, and the speaker stage says her voice was
    embedded while she spoke (not only at the end)."""
    from omoide.server.loopback import LoopbackOmoide, settings_from_data

    simulator = pytest.importorskip("omoide_device_stackchan.simulator")
    server = LoopbackOmoide(settings_from_data(yaml.safe_load(f"""
server: {{data_dir: {tmp_path / "data"}}}
memory: {{extraction: {{on_disconnect: false}}}}
vad: {{use: fake, min_silence_ms: 800}}
speaker: {{use: resemblyzer, timeout_s: 60}}
asr: {{use: fake, text: 何が食べられないんだっけ？}}
embed: {{use: fake}}
store: {{use: fake}}
chat: {{use: fake, reply: "[neutral] ええと、なんだったかな。"}}
tts: {{use: fake, ms_per_char: 10}}
devices: [{{use: stackchan, hello_timeout_s: 3}}]
""")))
    await server.start(ready_timeout_s=120)
    try:
        speaker = server.omoide.assistant.speaker
        assert speaker is not None
        await speaker.enrol("alice", [openjtalk(t) for t in ENROL], source="test")
        await speaker.enrol("bob", [kokoro(t) for t in ENROL], source="test")
        robot = simulator.SimulatedStackChan(server.url, speed=1.0)
        pairings = server.device("stackchan").service.pairings
        pairings.pair(robot.device_id, "alice")
        pairings.update_household(robot.device_id, add=("bob",), default=None)
        await robot.provision()
        await robot.connect()
        try:
            assert (await robot.say(openjtalk(ASK), mode="auto", timeout=120)).complete
        finally:
            await robot.close()
        trace = server.omoide.traces.recent()[-1]
    finally:
        await server.stop()
    assert trace["speaker"]["person"] == trace["speaker"]["voice"] == "alice"
    assert "embedded while spoken" in trace["stages"]["speaker"]["note"]
