"""A guest's turn (``TurnRequest.guest``) uses no one's memory: nothing recalled, no
memory words in recognition, nothing journaled or extracted, no plugin tool, and the
trace says guest. A household's default person is a household of one's only person."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from omoide.api import GUEST, Household, InvalidInput
from omoide.config import AssistantSettings
from omoide.pipeline import sections
from omoide.pipeline.assistant import Assistant, ExtractionScheduler
from omoide.pipeline.turn import NullSink, TurnRequest
from omoide.plugins import PluginRegistry
from omoide.testing.doubles import FakeASR, FakeChat, FakeTTS, MemoryServiceDouble
from omoide.types import AudioClip, Memory, RetrievedMemory

SUNDAY = datetime(2026, 9, 27, 12, 0, tzinfo=UTC)


def _alice_memory() -> RetrievedMemory:
    return RetrievedMemory(Memory("m1", "alice", "あなたはそばアレルギーだ。", SUNDAY), 0.9)


def _assistant(registry: PluginRegistry, memory: MemoryServiceDouble) -> Assistant:
    if not registry.pm.is_registered(sections):
        registry.pm.register(sections)
    registry.pm.register(ExtractionScheduler(memory))
    return Assistant(settings=AssistantSettings(), asr=FakeASR(FakeASR.Config(text="こんにちは")),
                     chat=FakeChat(FakeChat.Config(reply="[happy] やあ。")),
                     tts=FakeTTS(FakeTTS.Config()), memory=memory, hooks=registry.pm)


async def test_a_guest_turn_recalls_and_stores_nothing(registry: PluginRegistry) -> None:
    memory = MemoryServiceDouble([_alice_memory()], vocabulary=["蕎麦"])
    assistant = _assistant(registry, memory)
    clip = AudioClip(np.full(16000, 0.1, dtype=np.float32), 16000)
    result = await assistant.run_turn(
        TurnRequest(user=GUEST, audio=clip, device="robot-1", guest=True, now=SUNDAY),
        NullSink())
    assert result.reply == "やあ。" and result.memories == [] and result.profile == []
    system = assistant.chat.requests[0][0].content  # type: ignore[attr-defined]
    assert "そば" not in system and "<retrieved_memory>" not in system
    assert memory.journal == [] and memory.noted == []
    assert memory.vocabulary_requests == []
    assert result.trace["guest"] is True and result.trace["user"] == GUEST
    assert result.trace["stages"]["retrieve"]["note"] == \
        "guest: no one's memory is read or written"


async def test_a_persons_turn_still_recalls_and_journals(registry: PluginRegistry) -> None:
    memory = MemoryServiceDouble([_alice_memory()])
    assistant = _assistant(registry, memory)
    result = await assistant.run_turn(TurnRequest(user="alice", text="何が食べられない?",
                                                  now=SUNDAY), NullSink())
    assert [m.memory.text for m in result.memories] == ["あなたはそばアレルギーだ。"]
    assert [e.user_text for e in memory.journal] == ["何が食べられない?"]
    assert "guest" not in result.trace


async def test_a_guest_continues_its_own_conversation_not_a_persons(
        registry: PluginRegistry) -> None:
    assistant = _assistant(registry, MemoryServiceDouble())
    await assistant.run_turn(TurnRequest(user="alice", text="アリスの話", device="robot-1",
                                         now=SUNDAY), NullSink())
    await assistant.run_turn(TurnRequest(user=GUEST, text="お客さんの話", device="robot-1",
                                         guest=True, now=SUNDAY), NullSink())
    await assistant.run_turn(TurnRequest(user=GUEST, text="二回目", device="robot-1",
                                         guest=True, now=SUNDAY), NullSink())
    history = [m.content for m in assistant.chat.requests[2][1:]]  # type: ignore[attr-defined]
    assert history == ["お客さんの話", "やあ。", "二回目"]


def test_a_household_of_one_answers_with_its_person() -> None:
    household = Household.of_one("alice")
    assert household.members == ("alice",) and household.default_person == "alice"
    assert household.person_for(None) == "alice"
    assert household.person_for("mallory") == "alice"


def test_a_guest_household_names_a_member_only_when_identified() -> None:
    household = Household(("alice", "bob"), None)
    assert household.guest_by_default
    assert household.person_for(None) is None
    assert household.person_for("bob") == "bob"
    assert household.person_for("carol") is None


@pytest.mark.parametrize(("members", "default"), [
    ((), None), (("alice", "alice"), "alice"), (("alice",), "bob"), (("../x",), None)])
def test_a_household_that_makes_no_sense_is_refused(members: tuple[str, ...],
                                                    default: str | None) -> None:
    with pytest.raises(InvalidInput):
        Household(members, default)
