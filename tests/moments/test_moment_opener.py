"""A stock robot connects only when woken: the first reply of the person's next
conversation begins with the moment (「そういえば、明日は箱根だね。…」), then the model's
reply; the journaled exchange carries both (the follow-up's answer is heard in its
context). A guest's turn and a failing opener leave the reply alone."""

from __future__ import annotations

from datetime import UTC, datetime

from omoide.config import AssistantSettings
from omoide.pipeline import sections
from omoide.pipeline.assistant import Assistant
from omoide.pipeline.turn import NullSink, TurnRequest
from omoide.plugins import build_registry
from omoide.testing.doubles import FakeChat, MemoryServiceDouble

NOW = datetime(2026, 12, 11, 9, 0, tzinfo=UTC)


def _assistant(memory: MemoryServiceDouble) -> Assistant:
    registry = build_registry([("asr", "fake"), ("memory_engine", "robust")])
    registry.pm.register(sections)
    return Assistant(settings=AssistantSettings(), asr=None,
                     chat=FakeChat(FakeChat.Config(reply="[happy] おかえり。")), tts=None,
                     memory=memory, hooks=registry.pm)


async def test_the_first_reply_opens_with_the_moment() -> None:
    memory = MemoryServiceDouble([])
    assistant = _assistant(memory)

    async def opener(request: TurnRequest, now: datetime) -> str | None:
        return "そういえば、明日は箱根だね。"

    assistant.openers.append(opener)
    result = await assistant.run_turn(TurnRequest(user="aki", text="ただいま", now=NOW,
                                                  speak=False), NullSink())
    assert result.reply == "そういえば、明日は箱根だね。おかえり。"
    assert result.emotion.value == "happy"
    assert [e.assistant_text for e in memory.journal] == [result.reply]


async def test_a_failing_opener_leaves_the_reply_alone() -> None:
    assistant = _assistant(MemoryServiceDouble([]))

    async def broken(request: TurnRequest, now: datetime) -> str | None:
        raise RuntimeError("ledger unavailable")

    assistant.openers.append(broken)
    result = await assistant.run_turn(TurnRequest(user="aki", text="ただいま", now=NOW,
                                                  speak=False), NullSink())
    assert result.reply == "おかえり。"
