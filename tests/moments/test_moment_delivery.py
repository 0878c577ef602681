"""Delivery: pushed to an idle online robot, or opening the next conversation; never in
quiet hours, past the daily limit, over a running turn, to a guest, or when switched
off; a push nobody heard stays due."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from omoide.components.device import GUEST
from omoide.moments.config import MomentsSettings
from omoide.moments.delivery import Delivery, MomentScheduler
from omoide.moments.ledger import MomentLedger
from omoide.moments.planning import ListedMemories
from omoide.pipeline.turn import TurnRequest
from omoide.types import Memory

ZONE = ZoneInfo("Asia/Tokyo")
DAY_BEFORE = datetime(2026, 12, 11, 18, 0, tzinfo=ZONE)


@dataclass
class Clock:
    at: datetime = DAY_BEFORE

    def now(self) -> datetime:
        return self.at


@dataclass
class Robot:
    online: bool = True
    hears: bool = True
    heard: list[tuple[str, str]] = field(default_factory=list)

    def reaches(self, person: str) -> bool:
        return self.online

    async def say(self, person: str, text: str) -> bool:
        if self.hears:
            self.heard.append((person, text))
        return self.hears


def _scheduler(tmp_path: Path, robot: Robot | None, clock: Clock,
               settings: MomentsSettings | None = None,
               fed: list[Delivery] | None = None) -> MomentScheduler:
    source = ListedMemories("Asia/Tokyo")
    source.add(Memory("m1", "aki", "あなたは12月12日に箱根へ旅行する予定だ。",
                      datetime(2026, 12, 1, tzinfo=ZONE), (date(2026, 12, 12),), "plan",
                      ("箱根",)))

    async def people() -> list[str]:
        return ["aki"]

    return MomentScheduler(settings or MomentsSettings(),
                           MomentLedger(tmp_path / "moments.sqlite3"), source, people,
                           timezone="Asia/Tokyo", speaker=robot, clock=clock,
                           on_delivered=fed.append if fed is not None else None)


async def test_an_idle_online_robot_hears_the_moment_once(tmp_path: Path) -> None:
    robot, fed = Robot(), []
    s = _scheduler(tmp_path, robot, Clock(), fed=fed)
    await s.tick()
    await s.tick()
    assert robot.heard == [("aki", "明日は箱根だね。気をつけて行ってきてね。")]
    [delivery] = fed
    feed = delivery.feed_json()
    assert feed["user"] == "aki" and feed["reply"] == robot.heard[0][1]
    assert feed["moment"]["reasons"] == ["m1"] and feed["moment"]["how"] == "pushed"


@pytest.mark.parametrize("hour", [22, 23, 6])
async def test_nothing_is_pushed_in_quiet_hours(tmp_path: Path, hour: int) -> None:
    robot = Robot()
    at = DAY_BEFORE.replace(hour=hour) + (timedelta(days=1) if hour < 12 else timedelta())
    s = _scheduler(tmp_path, robot, Clock(at))
    await s.tick()
    assert robot.heard == []


async def test_quiet_hours_are_per_person(tmp_path: Path) -> None:
    robot = Robot()
    settings = MomentsSettings(people={"aki": {"quiet_hours": "17:00-07:00"}})
    await _scheduler(tmp_path, robot, Clock(), settings).tick()
    assert robot.heard == []


async def test_not_over_a_running_turn_in_a_conversation_nor_after_a_guest_spoke(
        tmp_path: Path) -> None:
    robot, clock = Robot(), Clock()
    s = _scheduler(tmp_path, robot, clock)
    s.presence.turn_started("t1", "aki", "robot-1", clock.at)
    await s.tick()
    assert robot.heard == []
    s.presence.turn_done("t1", clock.at)
    await s.tick()
    assert robot.heard == []   # a conversation may be going on
    clock.at += timedelta(minutes=3)
    s.presence.turn_started("t2", GUEST, "robot-1", clock.at)
    s.presence.turn_done("t2", clock.at)
    await s.tick()
    assert robot.heard == []
    clock.at += timedelta(minutes=11)
    await s.tick()
    assert len(robot.heard) == 1


async def test_the_daily_limit_and_the_off_switch_hold(tmp_path: Path) -> None:
    robot = Robot()
    await _scheduler(tmp_path / "a", robot, Clock(), MomentsSettings(max_per_day=0)).tick()
    off = _scheduler(tmp_path / "b", robot, Clock())
    await off.ledger.set_off("aki", True, DAY_BEFORE)
    await off.tick()
    await _scheduler(tmp_path / "c", robot, Clock(),
                     MomentsSettings(people={"aki": {"off": True}})).tick()
    assert robot.heard == []


async def test_a_push_nobody_heard_opens_the_next_conversation(tmp_path: Path) -> None:
    robot, clock = Robot(hears=False), Clock()
    s = _scheduler(tmp_path, robot, clock)
    await s.tick()
    assert await s.planned("aki") != []
    words = await s.opener(TurnRequest(user="aki", text="ただいま", device="robot-1"), clock.at)
    assert words == "そういえば、明日は箱根だね。気をつけて行ってきてね。"


async def test_only_a_conversations_first_turn_opens_with_a_moment(tmp_path: Path) -> None:
    clock = Clock()
    s = _scheduler(tmp_path, None, clock)
    s.presence.turn_started("t1", "aki", "robot-1", clock.at - timedelta(minutes=3))
    s.presence.turn_done("t1", clock.at - timedelta(minutes=2))
    going_on = TurnRequest(user="aki", text="それでね", device="robot-1")
    assert await s.opener(going_on, clock.at) is None
    back = TurnRequest(user="aki", text="ただいま", device="robot-1")
    assert await s.opener(back, clock.at + timedelta(minutes=30)) is not None


async def test_a_guest_turn_never_opens_with_a_moment(tmp_path: Path) -> None:
    s = _scheduler(tmp_path, None, Clock())
    request = TurnRequest(user=GUEST, text="こんにちは", guest=True)
    assert await s.opener(request, DAY_BEFORE) is None


async def test_a_voice_identified_as_a_guest_mid_turn_keeps_pushes_away(
        tmp_path: Path) -> None:
    """Speaker identification names the speaker after the turn started (the turn began
    as the household's default person): the ``Heard`` event carries who it was."""
    from omoide.components.turn_events import Heard, TurnStarted

    robot, clock = Robot(), Clock()
    s = _scheduler(tmp_path, robot, clock)
    s.presence.turn_started("t0", "aki", "robot-1", clock.at - timedelta(hours=1))
    s.presence.turn_done("t0", clock.at - timedelta(hours=1))
    await s.on_event(TurnStarted(turn_id="t1", user="aki", device="robot-1",
                                 started_at=clock.at))
    await s.on_event(Heard(turn_id="t1", user=GUEST, transcript="こんにちは"))
    s.presence.turn_done("t1", clock.at)
    await s.tick()
    assert robot.heard == []
    assert s.presence.someone_else_present("aki", clock.at)


async def test_typed_and_chat_client_turns_open_with_nothing_unless_asked(
        tmp_path: Path) -> None:
    from omoide.pipeline.turn import ClientConversation

    s = _scheduler(tmp_path, None, Clock())
    typed = TurnRequest(user="aki", text="ただいま", device="http")
    assert await s.opener(typed, DAY_BEFORE) is None
    client = TurnRequest(user="aki", text="ただいま", device="openai",
                         conversation=ClientConversation())
    assert await s.opener(client, DAY_BEFORE) is None
    s.settings = MomentsSettings(text_turns=True)
    assert (await s.opener(typed, DAY_BEFORE) or "").startswith("そういえば、明日は箱根")


async def test_one_persons_failing_memories_stop_no_one_elses_moments(
        tmp_path: Path) -> None:
    robot = Robot()
    s = _scheduler(tmp_path, robot, Clock())
    source = s.memories

    class Failing:
        async def current_memories(self, person: str) -> list[Memory]:
            if person == "abe":
                raise OSError("abe's store is gone")
            return await source.current_memories(person)

    async def people() -> list[str]:
        return ["abe", "aki"]   # abe first: his failure comes before aki

    s.memories, s.people = Failing(), people
    await s.tick()
    assert robot.heard == [("aki", "明日は箱根だね。気をつけて行ってきてね。")]
