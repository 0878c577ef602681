"""Quiet hours are each person's: their own (set from the console or the CLI) win over
the config's for them, which win over the household's; a robot a household shares keeps
the quiet hours of everyone taken to be near it (the member who last spoke to it, in the
last 12 hours), and a household of one behaves as it always did. A conversation never
opens with a moment in front of a guest."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from omoide.components.device import GUEST
from omoide.moments.config import MomentsSettings
from omoide.moments.delivery import MomentScheduler
from omoide.moments.ledger import MomentLedger
from omoide.moments.planning import ListedMemories
from omoide.pipeline.turn import TurnRequest
from omoide.types import Memory

ZONE = ZoneInfo("Asia/Tokyo")
EVENING = datetime(2026, 12, 11, 21, 0, tzinfo=ZONE)
"""The day before aki's trip to 箱根, inside everyone's default waking hours."""


@dataclass
class Clock:
    at: datetime = EVENING

    def now(self) -> datetime:
        return self.at


@dataclass
class SharedRobot:
    """One robot every member of the household reaches."""

    heard: list[tuple[str, str]] = field(default_factory=list)

    def reaches(self, person: str) -> bool:
        return True

    async def say(self, person: str, text: str) -> bool:
        self.heard.append((person, text))
        return True


def _scheduler(ledger: Path, robot: SharedRobot | None, clock: Clock,
               settings: MomentsSettings | None = None) -> MomentScheduler:
    source = ListedMemories("Asia/Tokyo")
    source.add(Memory("m1", "aki", "あなたは12月12日に箱根へ旅行する予定だ。",
                      datetime(2026, 12, 1, tzinfo=ZONE), (date(2026, 12, 12),), "plan",
                      ("箱根",)))

    async def people() -> list[str]:
        return ["aki", "ben"]

    return MomentScheduler(settings or MomentsSettings(), MomentLedger(ledger), source,
                           people, timezone="Asia/Tokyo", speaker=robot, clock=clock)


def _talked(s: MomentScheduler, turn: str, person: str, robot: str, at: datetime) -> None:
    s.presence.turn_started(turn, person, robot, at)
    s.presence.turn_done(turn, at + timedelta(minutes=1))


async def test_a_persons_own_quiet_hours_win_and_can_be_given_back(tmp_path: Path) -> None:
    robot = SharedRobot()
    s = _scheduler(tmp_path / "m.sqlite3", robot, Clock(),
                   MomentsSettings(people={"aki": {"quiet_hours": "23:30-06:00"}}))
    assert (await s.listing("aki"))["quiet_hours_from"] == "config"
    assert await s.set_quiet_hours("aki", "20:30-6:00") == "20:30-06:00"
    await s.tick()
    assert robot.heard == []
    listing = await s.listing("aki")
    assert (listing["quiet_hours"], listing["quiet_hours_from"]) == ("20:30-06:00", "own")
    assert await s.set_quiet_hours("aki", None) == "23:30-06:00"
    await s.tick()
    assert [p for p, _ in robot.heard] == ["aki"]


async def test_own_quiet_hours_are_kept_in_the_ledger_across_a_restart(
        tmp_path: Path) -> None:
    first = _scheduler(tmp_path / "m.sqlite3", None, Clock())
    await first.set_quiet_hours("ben", "19:00-07:00")
    first.ledger.close()
    again = _scheduler(tmp_path / "m.sqlite3", None, Clock())
    assert str((await again.quiet_hours("ben"))[0]) == "19:00-07:00"
    assert str((await again.quiet_hours("aki"))[0]) == "22:00-07:00"


async def test_a_span_that_is_not_hours_is_refused(tmp_path: Path) -> None:
    s = _scheduler(tmp_path / "m.sqlite3", None, Clock())
    with pytest.raises(ValueError, match="22:00-07:00"):
        await s.set_quiet_hours("aki", "after dinner")
    assert (await s.quiet_hours("aki"))[1] == "household"


async def test_a_shared_robot_waits_for_a_member_near_it_in_their_quiet_hours(
        tmp_path: Path) -> None:
    """ben (quiet from 20:00) said good night to the robot he shares with aki: aki's
    「明日は箱根だね」 waits; once ben talks to the robot in his own room, it is said."""
    robot, clock = SharedRobot(), Clock()
    s = _scheduler(tmp_path / "m.sqlite3", robot, clock)
    await s.set_quiet_hours("ben", "20:00-07:00")
    _talked(s, "t1", "aki", "living-room", EVENING - timedelta(hours=3))
    _talked(s, "t2", "ben", "living-room", EVENING - timedelta(minutes=50))
    await s.tick()
    assert robot.heard == []
    _talked(s, "t3", "ben", "bens-room", EVENING - timedelta(minutes=30))
    await s.tick()
    assert [p for p, _ in robot.heard] == ["aki"]


async def test_a_member_not_heard_for_half_a_day_is_not_taken_to_be_near(
        tmp_path: Path) -> None:
    robot = SharedRobot()
    s = _scheduler(tmp_path / "m.sqlite3", robot, Clock())
    await s.set_quiet_hours("ben", "20:00-07:00")
    _talked(s, "t1", "ben", "living-room", EVENING - timedelta(hours=13))
    _talked(s, "t2", "aki", "living-room", EVENING - timedelta(hours=3))
    await s.tick()
    assert [p for p, _ in robot.heard] == ["aki"]


async def test_a_household_of_one_keeps_only_its_persons_quiet_hours(
        tmp_path: Path) -> None:
    """ben is in his quiet hours at his own robot; aki's robot is aki's alone."""
    robot = SharedRobot()
    s = _scheduler(tmp_path / "m.sqlite3", robot, Clock())
    await s.set_quiet_hours("ben", "20:00-07:00")
    _talked(s, "t1", "ben", "bens-robot", EVENING - timedelta(minutes=30))
    _talked(s, "t2", "aki", "akis-robot", EVENING - timedelta(hours=1))
    await s.tick()
    assert [p for p, _ in robot.heard] == ["aki"]


async def test_the_person_a_moment_is_for_keeps_theirs_wherever_they_are(
        tmp_path: Path) -> None:
    robot = SharedRobot()
    s = _scheduler(tmp_path / "m.sqlite3", robot, Clock())
    await s.set_quiet_hours("aki", "20:00-07:00")
    await s.tick()
    back = TurnRequest(user="aki", text="ただいま", device="living-room")
    assert await s.opener(back, EVENING) is None
    assert robot.heard == []


async def test_a_conversation_does_not_open_with_a_moment_in_front_of_a_guest(
        tmp_path: Path) -> None:
    s = _scheduler(tmp_path / "m.sqlite3", None, Clock())
    _talked(s, "t1", GUEST, "living-room", EVENING - timedelta(minutes=3))
    s.presence.turn_started("t2", "aki", "living-room", EVENING)
    back = TurnRequest(user="aki", text="ただいま", device="living-room")
    assert await s.opener(back, EVENING) is None
    s.presence.turn_done("t2", EVENING)
    later = EVENING + timedelta(minutes=20)
    s.presence.turn_started("t3", "aki", "living-room", later)
    assert (await s.opener(back, later) or "").startswith("そういえば、明日は箱根だね")


async def test_a_turn_identified_as_another_member_leaves_no_trace_of_the_first(
        tmp_path: Path) -> None:
    """The shared robot's turn starts as its default person (aki) and identification
    says ben was speaking: aki was not heard there, and is not taken to be near it."""
    from omoide.components.turn_events import Heard, TurnStarted

    s = _scheduler(tmp_path / "m.sqlite3", None, Clock())
    earlier = EVENING - timedelta(hours=2)
    _talked(s, "t0", "aki", "akis-room", earlier)
    await s.on_event(TurnStarted(turn_id="t1", user="aki", device="living-room",
                                 started_at=EVENING))
    await s.on_event(Heard(turn_id="t1", user="ben", transcript="おやすみ"))
    assert not s.presence.someone_else_present("ben", EVENING, "living-room")
    assert s.presence.someone_else_present("aki", EVENING, "living-room")
    assert s.presence.near("ben", EVENING) == {"ben"}   # aki is still in her room


async def test_someone_typing_in_the_console_is_at_no_robot(tmp_path: Path) -> None:
    """ben's typed turn (the console's, device ``http``) is not someone at aki's robot:
    nothing of hers waits for him, and her own typed conversation may open with one."""
    robot = SharedRobot()
    s = _scheduler(tmp_path / "m.sqlite3", robot, Clock(),
                   MomentsSettings(text_turns=True))
    _talked(s, "t1", "aki", "http", EVENING - timedelta(hours=1))
    _talked(s, "t2", "ben", "http", EVENING - timedelta(minutes=3))
    assert not s.presence.someone_else_present("aki", EVENING)
    typed = TurnRequest(user="aki", text="ただいま", device="http")
    assert (await s.opener(typed, EVENING) or "").startswith("そういえば、明日は箱根だね")
