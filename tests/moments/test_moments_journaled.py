"""A pushed moment is journaled like a turn: an exchange of the person's with nothing
heard and the robot's line as the reply, its id naming the moment (why it was said).
The short-term history carries it, so the person's answer right after is understood
as one to the robot's line (and opens with no second moment); extraction reads it as
the assistant's line before the answer."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from omoide.config import AssistantSettings
from omoide.memory.extract.prompt import conversation_block
from omoide.moments.config import MomentsSettings
from omoide.moments.delivery import MomentScheduler
from omoide.moments.journaling import MomentJournal
from omoide.moments.ledger import MomentLedger
from omoide.moments.planning import ListedMemories
from omoide.pipeline import sections
from omoide.pipeline.assistant import Assistant
from omoide.pipeline.turn import NullSink, TurnRequest
from omoide.plugins import build_registry
from omoide.testing.doubles import FakeChat, MemoryServiceDouble
from omoide.types import Exchange, Memory

ZONE = ZoneInfo("Asia/Tokyo")
EVENING = datetime(2026, 12, 11, 18, 0, tzinfo=ZONE)
LINE = "明日は箱根だね。気をつけて行ってきてね。"


@dataclass
class Clock:
    at: datetime = EVENING

    def now(self) -> datetime:
        return self.at


@dataclass
class Robot:
    heard: list[str] = field(default_factory=list)

    def reaches(self, person: str) -> bool:
        return True

    async def say(self, person: str, text: str) -> bool:
        self.heard.append(text)
        return True


def _memories() -> ListedMemories:
    source = ListedMemories("Asia/Tokyo")
    source.add(Memory("m1", "aki", "あなたは12月12日に箱根へ旅行する予定だ。",
                      datetime(2026, 12, 1, tzinfo=ZONE), (date(2026, 12, 12),), "plan",
                      ("箱根",)))
    source.add(Memory("m2", "aki", "あなたの母の誕生日は12月12日だ。",
                      datetime(2026, 11, 1, tzinfo=ZONE), (date(1960, 12, 12),), "person"))
    return source


def _assistant(memory: MemoryServiceDouble, chat: FakeChat) -> Assistant:
    registry = build_registry([("asr", "fake"), ("memory_engine", "robust")])
    registry.pm.register(sections)
    return Assistant(settings=AssistantSettings(), asr=None, chat=chat, tts=None,
                     memory=memory, hooks=registry.pm)


def _wired(tmp_path: Path, memory: MemoryServiceDouble, assistant: Assistant,
           robot: Robot, clock: Clock) -> MomentScheduler:
    async def people() -> list[str]:
        return ["aki"]

    s = MomentScheduler(MomentsSettings(), MomentLedger(tmp_path / "m.sqlite3"), _memories(),
                        people, timezone="Asia/Tokyo", speaker=robot, clock=clock,
                        journal=MomentJournal(memory, assistant.history))
    assistant.observers.append(s.on_event)
    assistant.openers.append(s.opener)
    return s


async def test_a_pushed_moment_is_journaled_as_the_robots_line_with_its_reason(
        tmp_path: Path) -> None:
    memory = MemoryServiceDouble([])
    robot = Robot()
    s = _wired(tmp_path, memory, _assistant(memory, FakeChat(FakeChat.Config())), robot,
               Clock())
    [delivery] = await s.tick()
    [exchange] = memory.journal
    assert (exchange.user, exchange.user_text, exchange.assistant_text) == ("aki", "", LINE)
    assert exchange.id == f"moment-{delivery.moment.key}" == "moment-m1:day_before"
    assert exchange.at == EVENING
    assert memory.noted == [exchange]          # extraction is scheduled as after a turn
    assert delivery.feed_json()["turn_id"] == exchange.id


async def test_the_answer_right_after_is_heard_with_the_robots_line_before_it(
        tmp_path: Path) -> None:
    memory, clock = MemoryServiceDouble([]), Clock()
    chat = FakeChat(FakeChat.Config(reply="[happy] 楽しんできてね。"))
    assistant = _assistant(memory, chat)
    s = _wired(tmp_path, memory, assistant, Robot(), clock)
    await s.tick()
    answer_at = (EVENING + timedelta(minutes=1)).astimezone(UTC)
    result = await assistant.run_turn(TurnRequest(user="aki", text="うん、雨みたいだけど",
                                                  device="robot-1", now=answer_at,
                                                  speak=False), NullSink())
    [messages] = chat.requests
    talk = [(m.role, m.content) for m in messages if m.role != "system"]
    assert talk == [("assistant", LINE), ("user", "うん、雨みたいだけど")]
    # the robot's line began this conversation: the answer opens with no other moment
    assert result.reply == "楽しんできてね。"
    assert [e.user_text for e in memory.journal] == ["", "うん、雨みたいだけど"]


async def test_a_push_nobody_heard_is_not_journaled(tmp_path: Path) -> None:
    memory = MemoryServiceDouble([])

    class Away(Robot):
        async def say(self, person: str, text: str) -> bool:
            return False

    s = _wired(tmp_path, memory, _assistant(memory, FakeChat(FakeChat.Config())), Away(),
               Clock())
    assert await s.tick() == []
    assert memory.journal == []


def test_extraction_reads_the_robots_line_then_the_answer() -> None:
    said = datetime(2026, 12, 11, 9, 0, tzinfo=UTC)
    block = conversation_block([
        Exchange("moment-m1:day_before", "aki", "", LINE, said),
        Exchange("e2", "aki", "うん、雨みたいだけど", "楽しんできてね。",
                 said + timedelta(minutes=1))],
        "Asia/Tokyo")
    assert block.splitlines()[1:-1] == [
        f"[2026-12-11 18:00 (金)] assistant: {LINE}",
        "[2026-12-11 18:01 (金)] user: うん、雨みたいだけど",
        "[2026-12-11 18:01 (金)] assistant: 楽しんできてね。"]
