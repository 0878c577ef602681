"""A moment the robot said first is journaled as an exchange with nothing heard; the
people list's "last turn" stays the last time the person spoke (either journal)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from omoide.memory.journal.activity import people_activity
from omoide.types import Exchange

from .conftest import JournalFactory

SPOKE = datetime(2026, 12, 11, 9, 0, tzinfo=UTC)


async def test_a_pushed_moment_is_not_the_persons_last_turn(
        make_journal: JournalFactory) -> None:
    journal = make_journal()
    await journal.append(Exchange("e1", "aki", "ただいま", "おかえり。", SPOKE))
    await journal.append(Exchange("moment-m1:day_before", "aki", "",
                                  "明日は箱根だね。", SPOKE + timedelta(hours=3)))
    [aki] = await people_activity(journal, "aki")
    assert aki.last_turn == SPOKE and aki.exchanges == 2
    [row] = await journal.activity_rows("aki", None, None)
    assert datetime.fromisoformat(str(row[2])) == SPOKE
