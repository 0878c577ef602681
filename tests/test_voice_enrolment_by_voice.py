"""Enrolment by voice, with consent (issue 28, part 3): 「私はアリスだよ。声を覚えて」.

The real omoide server on loopback with the real Resemblyzer speaker stage and the real
``stackchan`` plugin; the robot is its simulator over real sockets, speaking OpenJTalk's
voice (Alice, not yet enrolled) or Kokoro's jm_kumo (Bob, enrolled). The ``fake`` ASR is
told what each utterance says (the words are not under test: the voice is). The robot
says what it keeps and asks for consent, asks for three sentences, enrols from them and
says so; the next turn in Alice's voice is identified as hers. A voice may enrol only as
the turn's own person, who has no voiceprint yet: anyone else needs the admin.
Synthetic voices are a proxy for people.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from omoide.pipeline.voice_enrolment import SENTENCES
from omoide.server.loopback import LoopbackOmoide, settings_from_data
from omoide.testing.voices import (
    ASK,
    ENROL,
    household_robot,
    kokoro,
    openjtalk,
    require_engines,
    speaker_server_config,
    weights_mark,
)
from omoide.types import AudioClip

simulator = pytest.importorskip("omoide_device_stackchan.simulator")
bundled = pytest.importorskip("omoide_speaker_resemblyzer.bundled")
require_engines()
pytestmark = weights_mark(bundled)

ASK_TO_ENROL = "私はアリスだよ。声を覚えて。"
BOB_ASKS = "僕の名前はボブだよ。僕の声も覚えてほしいな。"


@pytest.fixture
async def omoide(tmp_path: Path) -> AsyncIterator[LoopbackOmoide]:
    server = LoopbackOmoide(settings_from_data(speaker_server_config(tmp_path / "data")))
    await server.start(ready_timeout_s=120)
    speaker = server.omoide.assistant.speaker
    assert speaker is not None
    await speaker.enrol("bob", [kokoro(t) for t in ENROL], source="test")
    try:
        yield server
    finally:
        await server.stop()


async def say(server: LoopbackOmoide, robot: Any, clip: AudioClip, words: str) -> str:
    """The robot hears ``clip`` (the recogniser is told it says ``words``); its reply."""
    asr: Any = server.omoide.assistant.asr
    asr.config = asr.config.model_copy(update={"text": words})
    reply = await robot.say(clip, mode="manual", timeout=120)
    assert reply.complete
    return "".join(reply.sentences)


def step(server: LoopbackOmoide) -> str | None:
    trace = server.omoide.traces.recent()[-1]
    return (trace["stages"].get("voice_enrolment") or {}).get("note")


async def test_a_person_enrols_their_own_voice_with_consent_and_is_then_recognised(
        omoide: LoopbackOmoide, tmp_path: Path) -> None:
    robot = await household_robot(omoide, simulator, default="alice")
    speaker = omoide.omoide.assistant.speaker
    assert speaker is not None
    try:
        asked = await say(omoide, robot, openjtalk(ASK_TO_ENROL), ASK_TO_ENROL)
        assert step(omoide) == "asked"
        assert "声紋" in asked and "録音は残さない" in asked and "消せる" in asked
        assert asked.rstrip("。").endswith("いい？")
        assert speaker.store.enrolled(("alice",), speaker.encoder.model_id) == {}

        first = await say(omoide, robot, openjtalk("うん、いいよ"), "うん、いいよ")
        assert step(omoide) == "reading" and SENTENCES[0] in first
        replies = [await say(omoide, robot, openjtalk(s), s) for s in SENTENCES]
        assert [SENTENCES[1] in replies[0], SENTENCES[2] in replies[1]] == [True, True]
        assert step(omoide) == "enrolled" and "覚えたよ" in replies[2]

        enrolled = speaker.store.enrolled(("alice",), speaker.encoder.model_id)
        assert list(enrolled) == ["alice"] and len(enrolled["alice"].vectors) == 3
        # the views identification scores with, as for a voice enrolled from the console
        alice = enrolled["alice"]
        bob = speaker.store.enrolled(("bob",), speaker.encoder.model_id)["bob"]
        assert len(alice.pitches) == 3 and len(bob.pitches) == 3
        assert set(alice.conditions) == set(bob.conditions) != set()
        assert set(alice.spectra) == set(bob.spectra)
        assert not list((tmp_path / "data").rglob("*.wav"))   # no audio is kept
        # none of the enrolment turns is in Alice's conversation
        assert omoide.omoide.assistant.history.recent("alice", _now()) == []

        await say(omoide, robot, openjtalk(ASK), ASK)
        trace = omoide.omoide.traces.recent()[-1]
        assert trace["speaker"]["voice"] == "alice" and step(omoide) is None
    finally:
        await robot.close()


async def test_a_voice_may_not_enrol_as_anyone_else_or_again(
        omoide: LoopbackOmoide) -> None:
    robot = await household_robot(omoide, simulator, default=None)
    speaker = omoide.omoide.assistant.speaker
    assert speaker is not None
    try:
        # an unknown voice on a robot without a default person is a guest: no one
        refused = await say(omoide, robot, openjtalk(ASK_TO_ENROL), ASK_TO_ENROL)
        assert step(omoide) == "refused" and "管理者" in refused
        # Bob is enrolled: his voice cannot enrol (or replace) a voiceprint by voice
        again = await say(omoide, robot, kokoro(BOB_ASKS), BOB_ASKS)
        assert step(omoide) == "refused" and "もう覚えている" in again
    finally:
        await robot.close()
    assert speaker.store.enrolled(("alice",), speaker.encoder.model_id) == {}


async def test_another_voice_mid_enrolment_ends_it(omoide: LoopbackOmoide) -> None:
    robot = await household_robot(omoide, simulator, default="alice")
    speaker = omoide.omoide.assistant.speaker
    assert speaker is not None
    try:
        await say(omoide, robot, openjtalk(ASK_TO_ENROL), ASK_TO_ENROL)
        await say(omoide, robot, openjtalk("うん、いいよ"), "うん、いいよ")
        cut = await say(omoide, robot, kokoro(SENTENCES[0]), SENTENCES[0])   # Bob reads
        assert step(omoide) == "cancelled" and "違う声" in cut
    finally:
        await robot.close()
    assert speaker.store.enrolled(("alice",), speaker.encoder.model_id) == {}


def _now() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)


async def test_sentences_read_by_another_unknown_voice_enrol_no_one(
        omoide: LoopbackOmoide) -> None:
    """Alice (no voiceprint: unknown) asks and consents; a visitor, also unknown, reads
    the sentences. Identification cannot tell two unknown voices apart; the enrolment
    compares the sentences with the voice that asked, and keeps nothing."""
    robot = await household_robot(omoide, simulator, default="alice")
    speaker = omoide.omoide.assistant.speaker
    assert speaker is not None
    try:
        await say(omoide, robot, openjtalk(ASK_TO_ENROL), ASK_TO_ENROL)
        await say(omoide, robot, openjtalk("うん、いいよ"), "うん、いいよ")
        replies = [await say(omoide, robot, kokoro(s, "jf_gongitsune"), s) for s in SENTENCES]
        assert step(omoide) == "cancelled" and "違う声" in replies[-1]
    finally:
        await robot.close()
    assert speaker.store.enrolled(("alice",), speaker.encoder.model_id) == {}
