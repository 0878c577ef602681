"""A stock robot connects only when woken: the first reply of the person's next
conversation brings the moment after its first sentence (「おかえり。そういえば、明日は
箱根だね。」, the model's greeting first); the journaled exchange carries both (the
follow-up's answer is heard in its context). A reply of one unfinished sentence, or of
none, still says it; a guest's turn and a failing opener leave the reply alone."""

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


async def test_the_moment_follows_the_replys_first_sentence() -> None:
    memory = MemoryServiceDouble([])
    assistant = _assistant(memory)

    async def opener(request: TurnRequest, now: datetime) -> str | None:
        return "そういえば、明日は箱根だね。"

    assistant.openers.append(opener)
    result = await assistant.run_turn(TurnRequest(user="aki", text="ただいま", now=NOW,
                                                  speak=False), NullSink())
    assert result.reply == "おかえり。そういえば、明日は箱根だね。"
    assert result.sentences == ["おかえり。", "そういえば、明日は箱根だね。"]
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


async def _opened(reply: str) -> object:
    assistant = _assistant(MemoryServiceDouble([]))
    assistant.chat = FakeChat(FakeChat.Config(reply=reply))

    async def opener(request: TurnRequest, now: datetime) -> str | None:
        return "そういえば、明日は箱根だね。気をつけてね。"

    assistant.openers.append(opener)
    return await assistant.run_turn(TurnRequest(user="aki", text="ただいま", now=NOW,
                                                speak=False), NullSink())


async def test_a_reply_of_one_unfinished_sentence_still_brings_the_moment_after_it() -> None:
    result = await _opened("[happy] おかえり")
    assert result.sentences == ["おかえり。", "そういえば、明日は箱根だね。", "気をつけてね。"]
    assert result.reply == "おかえり。そういえば、明日は箱根だね。気をつけてね。"


async def test_a_reply_of_nothing_still_says_the_moment() -> None:
    result = await _opened("")
    assert result.sentences == ["そういえば、明日は箱根だね。", "気をつけてね。"]


async def test_a_longer_reply_keeps_its_order_around_the_moment() -> None:
    result = await _opened("[happy] おかえり！今日は寒かったね。ゆっくり休んでね。")
    assert result.sentences == ["おかえり！", "そういえば、明日は箱根だね。", "気をつけてね。",
                                "今日は寒かったね。", "ゆっくり休んでね。"]
    assert result.reply == "".join(result.sentences)
