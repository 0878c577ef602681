"""``omoide bench moments``: a simulated fortnight of moments on a fake clock, scored
per person (issue 29's figures; ``--restart`` also runs it with a restart halfway).

Four people from Monday 7 December 2026 (Asia/Tokyo), looked at every 15 minutes:

- **aki**: a robot always online. 箱根 on Saturday the 12th; a 軽井沢 trip on the 10th
  that was called off; mother's birthday on the 16th; a guest talks to aki's robot on
  the 11th from 11:00 to 13:00 (nothing may be pushed to them).
- **ben**: a stock robot that connects only when woken: he talks at 08:00 and 19:00,
  except on the 9th and 10th (away: the robot is off for two days). 釣り on the 8th;
  運動会 on the 12th moved to the 19th (the old date must never be spoken of).
- **chie**: a robot always online, quiet hours 23:00-06:00; asked to be reminded at
  21:30 to take her medicine; a 健康診断 on the 14th; father's birthday on the 20th;
  she talks to it at 18:00 (aki at 20:00).
- **dan**: aki's son, a member of the household that shares aki's robot; his own quiet
  hours 20:00-08:00 (set as from the console, in the ledger); he talks to the robot at
  19:30. 遠足 on the 9th. While he is taken to be near the robot (he spoke to it last,
  less than 12 hours ago) nothing is pushed to it in his quiet hours, aki's moments
  included: aki's 07:00 moments wait until 07:30, 12 hours after dan spoke.

The ledger is a real SQLite file; moments are written by the chat model (the offline
stand-in) when one is given; each pushed moment is journaled (a list standing in for
the exchange journal, kept across the restart as the journal's file would be). With
``restart_at`` the scheduler, its ledger and its presence are thrown away at that step
and built again from the same files, as a restarted server would be. The lines are
written by the chat model registered as ``--chat`` (default ``standin``, the offline
stand-in's rule per kind).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from omoide.components.device import GUEST
from omoide.moments.config import MomentsSettings
from omoide.moments.delivery import Delivery, MomentScheduler
from omoide.moments.journaling import MomentJournal, moment_exchange
from omoide.moments.ledger import MomentLedger
from omoide.moments.model import Moment
from omoide.moments.planning import ListedMemories
from omoide.moments.presence import NEAR_FOR
from omoide.moments.quiet_hours import QuietHours
from omoide.pipeline.turn import TurnRequest
from omoide.types import Exchange, Memory

TZ = "Asia/Tokyo"
ZONE = ZoneInfo(TZ)
START = datetime(2026, 12, 7, 0, 0, tzinfo=ZONE)
DAYS = 14
STEP = timedelta(minutes=15)
PEOPLE = ("aki", "ben", "chie", "dan")
OWN_QUIET = {"dan": "20:00-08:00"}
"""Quiet hours people set for themselves (the console's; kept in the ledger)."""
ROBOT = {"aki": "robot-aki", "ben": "robot-ben", "chie": "robot-chie", "dan": "robot-aki"}
"""The robot each person talks to (aki and dan share one)."""
STALE = {"ben": {"b-sports-old"}, "aki": {"a-karuizawa"}}
"""Memories a moment must never come from: a plan moved or called off."""
GUEST_VISIT = (datetime(2026, 12, 11, 11, 0, tzinfo=ZONE),
               datetime(2026, 12, 11, 13, 0, tzinfo=ZONE))
"""A guest talks to aki's robot every 15 minutes of this span (the day before 箱根 opens at
noon inside it): nothing may be pushed to aki's robot then."""
END = START + timedelta(days=DAYS)


def _at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 12, day, hour, minute, tzinfo=ZONE)


def memories() -> list[Memory]:
    """What the people told omoide before and during the fortnight."""
    d = date
    return [
        Memory("a-hakone", "aki", "あなたは12月12日（土）に家族で箱根へ旅行する予定だ。",
               _at(1, 20), (d(2026, 12, 12),), "plan", ("箱根",)),
        Memory("a-karuizawa", "aki", "あなたは12月10日（木）に軽井沢旅行へ行く予定だ。",
               _at(2, 20), (d(2026, 12, 10),), "plan", ("軽井沢",)),
        Memory("a-karuizawa-off", "aki", "あなたは仕事の都合で、軽井沢旅行をキャンセルした。",
               _at(5, 21), (), "plan", ("軽井沢",)),
        Memory("a-mother", "aki", "あなたの母の誕生日は12月16日だ。", _at(1, 21),
               (d(2026, 12, 16),), "profile_family"),
        Memory("b-fishing", "ben", "あなたは12月8日（火）に友達と釣りに行く予定だ。",
               _at(3, 19), (d(2026, 12, 8),), "plan", ("釣り",)),
        Memory("b-sports-old", "ben",
               "あなたは12月12日（土）に娘の運動会を見に行く予定だ。",
               _at(1, 19), (d(2026, 12, 12),), "plan", ("運動会",)),
        Memory("b-sports-new", "ben",
               "あなたは、娘の運動会が雨のため12月19日（土）に延期になったと知らされた。",
               _at(6, 19), (d(2026, 12, 19),), "plan", ("運動会",)),
        Memory("c-medicine", "chie",
               "あなたは毎晩21時半に薬を飲むので、その時間に声をかけてほしいと頼んだ。",
               _at(6, 21), (), "habit"),
        Memory("c-checkup", "chie", "あなたは12月14日（月）に病院で健康診断を受ける予定だ。",
               _at(4, 12), (d(2026, 12, 14),), "plan", ("健康診断",)),
        Memory("c-father", "chie", "あなたの父の誕生日は12月20日だ。", _at(2, 12),
               (d(2026, 12, 20),), "profile_family"),
        Memory("d-excursion", "dan", "あなたは12月9日（水）に遠足に行く予定だ。",
               _at(5, 19), (d(2026, 12, 9),), "plan", ("遠足",)),
    ]


def settings() -> MomentsSettings:
    return MomentsSettings(max_per_day=3, people={"chie": {"quiet_hours": "23:00-06:00"}})


@dataclass
class FakeClock:
    at: datetime = START

    def now(self) -> datetime:
        return self.at


@dataclass
class Robots:
    """Which robots are online, and what each person heard on them."""

    clock: FakeClock
    heard: list[tuple[str, str, datetime]] = field(default_factory=list)

    def online(self, person: str, at: datetime) -> bool:
        return person in ("aki", "chie", "dan")   # ben's is a stock robot: only when woken

    def reaches(self, person: str) -> bool:
        return self.online(person, self.clock.now())

    async def say(self, person: str, text: str) -> bool:
        self.heard.append((person, text, self.clock.now()))
        return True


def conversations(at: datetime, *, away: bool = True) -> list[tuple[str, str]]:
    """(speaker, device) of the conversations starting at ``at`` (``away`` False: as if
    ben had not been away on the 9th and 10th)."""
    local = at.astimezone(ZONE)
    out = []
    if local.hour in (8, 19) and local.minute == 0 and not (away and local.day in (9, 10)):
        out.append(("ben", "robot-ben"))
    if local.hour == 20 and local.minute == 0:
        out.append(("aki", "robot-aki"))
    if local.hour == 18 and local.minute == 0:
        out.append(("chie", "robot-chie"))
    if local.hour == 19 and local.minute == 30:
        out.append(("dan", "robot-aki"))
    if GUEST_VISIT[0] <= local < GUEST_VISIT[1]:
        out.append((GUEST, "robot-aki"))
    return out


@dataclass
class Run:
    deliveries: list[Delivery] = field(default_factory=list)
    planned: dict[str, Moment] = field(default_factory=dict)
    openings: list[tuple[str, datetime]] = field(default_factory=list)
    guest_turns: list[tuple[str, datetime]] = field(default_factory=list)
    journal: list[Exchange] = field(default_factory=list)


@dataclass
class JournalList:
    """The exchange journal's part moments use: what was recorded, in order."""

    exchanges: list[Exchange]

    async def record_exchange(self, exchange: Exchange) -> None:
        self.exchanges.append(exchange)

    def note_turn_completed(self, exchange: Exchange) -> None:
        """Extraction is not simulated."""


def _scheduler(folder: Path, clock: FakeClock, robots: Robots, chat: Any,
               run: Run) -> MomentScheduler:
    source = ListedMemories(TZ)
    for m in memories():
        source.add(m)

    async def people() -> list[str]:
        return list(PEOPLE)

    return MomentScheduler(settings(), MomentLedger(folder / "moments.sqlite3"), source,
                           people, timezone=TZ, chat=chat, speaker=robots, clock=clock,
                           on_delivered=run.deliveries.append,
                           journal=MomentJournal(JournalList(run.journal), None))


async def _converse(s: MomentScheduler, run: Run, speaker: str, device: str,
                    now: datetime, n: int) -> None:
    guest = speaker == GUEST
    s.presence.turn_started(f"t{n}", speaker, device, now)
    if guest:
        run.guest_turns.append((device, now))
    else:
        run.openings.append((speaker, now))
    await s.opener(TurnRequest(user=speaker, text="ただいま", guest=guest, device=device),
                   now)
    s.presence.turn_done(f"t{n}", now + timedelta(minutes=1))


async def simulate(folder: Path, chat: Any = None, restart_at: int | None = None) -> Run:
    """Run the fortnight; ``restart_at`` (a step number) restarts the scheduler there."""
    clock, run = FakeClock(), Run()
    robots = Robots(clock)
    s = _scheduler(folder, clock, robots, chat, run)
    for person, span in OWN_QUIET.items():
        await s.set_quiet_hours(person, span)
    steps = int(timedelta(days=DAYS) / STEP)
    for step in range(steps):
        clock.at = START + step * STEP
        if step == restart_at:
            s.ledger.close()
            s = _scheduler(folder, clock, robots, chat, run)
        for person in PEOPLE:
            for m in await s.planned(person, clock.at):
                run.planned.setdefault(m.key, m)
        for n, (speaker, device) in enumerate(conversations(clock.at)):
            await _converse(s, run, speaker, device, clock.at, step * 10 + n)
        await s.tick()
    s.ledger.close()
    for d in run.deliveries:   # said moments leave the plan: keep what they were
        run.planned.setdefault(d.moment.key, d.moment)
    return run


def _guest_near(person: str, at: datetime) -> bool:
    """The guest is at aki's robot, which dan shares (they talk every 15 minutes, then
    leave)."""
    return ROBOT[person] == "robot-aki" and GUEST_VISIT[0] <= at < GUEST_VISIT[1]


def quiet_of(person: str) -> QuietHours:
    """``person``'s quiet hours: their own, else the config's."""
    own = OWN_QUIET.get(person)
    return QuietHours.parse(own) if own else settings().for_person(person)[0]


def _talked_within(person: str, at: datetime, span: timedelta, away: bool) -> bool:
    t = at
    while t > at - span and t >= START:
        if any(who == person for who, _ in conversations(t, away=away)):
            return True
        t -= STEP
    return False


def near_quiet(person: str, at: datetime, *, away: bool = True) -> bool:
    """Someone else taken to be near ``person``'s robot at ``at`` (they last spoke to it
    less than 12 hours before) is in their quiet hours: nothing may be pushed to it."""
    local = at.astimezone(ZONE)
    return any(other != person and ROBOT[other] == ROBOT[person]
               and quiet_of(other).contains(local)
               and _talked_within(other, at, NEAR_FOR, away) for other in PEOPLE)


def _someone_else_talks(person: str, at: datetime, away: bool) -> bool:
    return any(who != person and device == ROBOT[person]
               for who, device in conversations(at, away=away))


def _chances(m: Moment, run: Run, quiet: Any, *, away: bool = True) -> list[datetime]:
    """When ``m`` could be said: each step inside its window and the fortnight, outside
    quiet hours and a guest's visit, when they started talking, or when the person's
    robot was online (pushable kinds) and no one else near it was in their quiet hours
    or talking to it (``away`` False: as if ben's robot had never been off)."""
    out = []
    t = START + max(timedelta(0), -((START - m.starts) // STEP) * STEP)
    while t < min(m.ends, END):
        talks = any(who == m.person for who, _ in conversations(t, away=away))
        pushed = (m.pushable and m.person != "ben" and not near_quiet(m.person, t, away=away)
                  and not _someone_else_talks(m.person, t, away))
        if ((talks or pushed) and not quiet.contains(t.astimezone(ZONE))
                and not _guest_near(m.person, t)):
            out.append(t)
        t += STEP
    return out


NAMES = ("due", "on time", "late", "missed", "duplicated", "quiet hours", "near quiet",
         "stale", "to a guest", "not journaled")


def score(run: Run) -> dict[str, dict[str, int]]:
    """Per person, the issue's figures: moments due (a chance to say them came inside
    the fortnight), delivered on time (at the first chance an always-on robot would have
    had), late (at the next wake, inside the window), missed, duplicated, said in quiet
    hours, pushed while someone near the robot was in theirs, said about a cancelled or
    moved plan's old date, said to a guest, and pushed but not journaled once."""
    said = Counter(d.moment.key for d in run.deliveries)
    first: dict[str, Delivery] = {}
    for d in run.deliveries:
        first.setdefault(d.moment.key, d)
    report: dict[str, Counter[str]] = {p: Counter() for p in PEOPLE}
    for key, m in run.planned.items():
        quiet = quiet_of(m.person)
        r = report[m.person]
        if not _chances(m, run, quiet) and key not in said:
            continue   # its window lies beyond the fortnight
        r["due"] += 1
        if key not in said:
            r["missed"] += 1
            continue
        ideal = _chances(m, run, quiet, away=False)
        r["on time" if ideal and first[key].at <= ideal[0] else "late"] += 1
        r["duplicated"] += said[key] - 1
    for d in run.deliveries:
        r = report[d.moment.person]
        r["quiet hours"] += quiet_of(d.moment.person).contains(d.at.astimezone(ZONE))
        r["stale"] += bool(set(d.moment.reasons) & STALE.get(d.moment.person, set()))
        pushed = d.how == "pushed"
        r["near quiet"] += pushed and near_quiet(d.moment.person, d.at)
        r["to a guest"] += _guest_near(d.moment.person, d.at) and pushed
        r["not journaled"] += pushed and run.journal.count(moment_exchange(d)) != 1
    return {p: {n: report[p][n] for n in NAMES} for p in PEOPLE}


# -- the command ---------------------------------------------------------------------
def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("moments", help="a simulated fortnight of moments: due, on time, "
                       "late, missed, duplicated, in quiet hours (the person's, or of "
                       "someone near a shared robot), stale, to a guest, not journaled")
    p.add_argument("--chat", default="standin",
                   help="the chat model (registered name) that writes the lines; "
                        "'none' says the plain line per kind")
    p.add_argument("--restart", action="store_true",
                   help="also run it with a restart halfway and compare")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))


async def _run(args: argparse.Namespace) -> int:
    from omoide_bench.benches._components import build_component

    chat = None
    if args.chat != "none":
        chat = build_component("chat", args.chat, {}, needs=f"no chat model {args.chat!r}:"
                               " install its plugin, or pass --chat none")
        await chat.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            runs = {"straight": score(await simulate(Path(tmp) / "a", chat))}
            if args.restart:
                halfway = int(timedelta(days=DAYS) / STEP) // 2
                runs["restarted halfway"] = score(await simulate(Path(tmp) / "b", chat,
                                                                 restart_at=halfway))
    finally:
        if chat is not None:
            await chat.stop()
    if args.json:
        print(json.dumps(runs, ensure_ascii=False, indent=1))
        return 0
    for title, report in runs.items():
        print(f"{title}:")
        names = list(next(iter(report.values())))
        print("  person " + " ".join(f"{n:>10}" for n in names))
        for person, figures in report.items():
            print(f"  {person:<6} " + " ".join(f"{figures[n]:>10}" for n in names))
    if args.restart:
        print("a restart changes nothing" if len({json.dumps(r) for r in runs.values()}) == 1
              else "THE RESTART CHANGED THE FIGURES")
    return 0
