"""Moments are said once across workers: the ledger on SQLite (one data dir's file) and
on PostgreSQL (``database.url``) keeps the same records, and recording a moment is the
claim — two workers racing for the same due moment say it once."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from omoide.moments.config import MomentsSettings
from omoide.moments.delivery import MomentScheduler
from omoide.moments.ledger import MomentLedger
from omoide.moments.ledgers import open_ledger
from omoide.moments.model import Moment, MomentKind
from omoide.moments.planning import ListedMemories
from omoide.moments.postgres_ledger import PostgresMomentLedger
from omoide.pipeline.turn import TurnRequest
from omoide.types import Memory

ZONE = ZoneInfo("Asia/Tokyo")
AT = datetime(2026, 12, 11, 18, tzinfo=ZONE)
MOMENT = Moment("m1:day_before", "aki", MomentKind.DAY_BEFORE, AT,
                datetime(2026, 12, 12, tzinfo=ZONE), date(2026, 12, 12), "箱根", ("m1",),
                ("あなたは12月12日に箱根へ行く予定だ。",))

LedgerFactory = Callable[[], MomentLedger]


@pytest.fixture
def ledgers(backend: str, tmp_path: Path, request: pytest.FixtureRequest,
            ) -> Iterator[LedgerFactory]:
    """Each call opens the ledger as another worker would: the same SQLite file, or
    the same PostgreSQL database over its own pool."""
    url = request.getfixturevalue("postgres_url") if backend == "postgresql" else None
    opened: list[MomentLedger] = []

    def make() -> MomentLedger:
        ledger = open_ledger(tmp_path / "moments.sqlite3", url)
        opened.append(ledger)
        return ledger

    yield make
    for ledger in opened:
        ledger.close()


def test_the_database_url_picks_the_ledger(tmp_path: Path) -> None:
    assert type(open_ledger(tmp_path / "m.sqlite3", None)) is MomentLedger
    shared = open_ledger(tmp_path / "m.sqlite3", "postgresql://nobody@127.0.0.1:1/x")
    assert isinstance(shared, PostgresMomentLedger)   # nothing connects before use
    assert not (tmp_path / "m.sqlite3").exists()


async def test_a_moment_is_recorded_once_whichever_worker_tries(
        ledgers: LedgerFactory) -> None:
    a, b = ledgers(), ledgers()
    assert await a.record_delivered(MOMENT, AT, "2026-12-11", "pushed", "明日は箱根だね。")
    assert not await b.record_delivered(MOMENT, AT, "2026-12-11", "opener", "again")
    assert await b.delivered("m1:day_before")
    assert await b.delivered_on("aki", "2026-12-11") == 1
    assert await b.settled_keys("aki") == {"m1:day_before"}
    assert await b.last_delivered_at("aki") == AT
    [entry] = await b.entries("aki")
    assert (entry.key, entry.state, entry.how, entry.text, entry.reasons) == \
        ("m1:day_before", "delivered", "pushed", "明日は箱根だね。", ("m1",))


async def test_a_moment_cancelled_on_one_worker_is_never_said_on_another(
        ledgers: LedgerFactory) -> None:
    a, b = ledgers(), ledgers()
    assert await a.cancel(MOMENT, AT, "console")
    assert not await b.cancel(MOMENT, AT, "cli")
    assert not await b.record_delivered(MOMENT, AT, "2026-12-11", "pushed", "x")
    assert [(e.state, e.how) for e in await b.entries()] == [("cancelled", "console")]
    assert await b.delivered_on("aki", "2026-12-11") == 0


async def test_a_push_nobody_heard_is_due_again_everywhere(ledgers: LedgerFactory) -> None:
    a, b = ledgers(), ledgers()
    assert await a.record_delivered(MOMENT, AT, "2026-12-11", "pushed", "x")
    await a.unrecord(MOMENT.key)
    assert not await b.delivered(MOMENT.key)
    assert await b.record_delivered(MOMENT, AT, "2026-12-11", "opener", "y")


async def test_the_off_switch_holds_on_every_worker(ledgers: LedgerFactory) -> None:
    a, b = ledgers(), ledgers()
    await a.set_off("aki", True, AT)
    await a.set_off("aki", True, AT)
    assert await b.is_off("aki")
    await b.set_off("aki", False, AT)
    assert not await a.is_off("aki")


async def test_what_was_said_outlives_the_worker_that_said_it(
        ledgers: LedgerFactory) -> None:
    first = ledgers()
    await first.record_delivered(MOMENT, AT, "2026-12-11", "pushed", "明日は箱根だね。")
    first.close()
    assert [e.key for e in await ledgers().entries()] == ["m1:day_before"]


# -- two delivery services (two workers) racing ------------------------------------------
@dataclass
class Clock:
    at: datetime = AT

    def now(self) -> datetime:
        return self.at


@dataclass
class Robot:
    """One robot both workers can reach (a shared announcer path); counts what it says."""

    heard: list[str] = field(default_factory=list)

    def reaches(self, person: str) -> bool:
        return True

    async def say(self, person: str, text: str) -> bool:
        await asyncio.sleep(0)   # let the other worker run meanwhile
        self.heard.append(text)
        return True


def _worker(ledger: MomentLedger, robot: Robot | None) -> MomentScheduler:
    source = ListedMemories("Asia/Tokyo")
    source.add(Memory("m1", "aki", "あなたは12月12日に箱根へ旅行する予定だ。",
                      datetime(2026, 12, 1, tzinfo=ZONE), (date(2026, 12, 12),), "plan",
                      ("箱根",)))

    async def people() -> list[str]:
        return ["aki"]

    return MomentScheduler(MomentsSettings(), ledger, source, people,
                           timezone="Asia/Tokyo", speaker=robot, clock=Clock())


async def test_two_workers_pushing_the_same_due_moment_say_it_once(
        ledgers: LedgerFactory) -> None:
    robot = Robot()
    workers = [_worker(ledgers(), robot) for _ in range(2)]
    for _ in range(5):   # several rounds of both looking at once
        await asyncio.gather(*(w.tick() for w in workers))
    assert robot.heard == ["明日は箱根だね。気をつけて行ってきてね。"]
    assert "m1:day_before" not in [m.key for m in await workers[1].planned("aki")]


async def test_two_workers_opening_conversations_at_once_open_with_it_once(
        ledgers: LedgerFactory) -> None:
    workers = [_worker(ledgers(), None) for _ in range(4)]
    opened = await asyncio.gather(*(
        w.opener(TurnRequest(user="aki", text="ただいま", device=f"robot-{i}"), AT)
        for i, w in enumerate(workers)))
    said = [words for words in opened if words is not None]
    assert said == ["そういえば、明日は箱根だね。気をつけて行ってきてね。"]
