"""``omoide migrate`` takes the moments ledger along: what a single server said,
cancelled or was told to stop saying is in the shared ledger afterwards, once."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from omoide.moments.ledger import MomentLedger
from omoide.moments.model import Moment, MomentKind
from omoide.moments.postgres_ledger import PostgresMomentLedger

ZONE = ZoneInfo("Asia/Tokyo")
AT = datetime(2026, 12, 11, 18, tzinfo=ZONE)


def _moment(memory: str) -> Moment:
    return Moment(f"{memory}:day_before", "aki", MomentKind.DAY_BEFORE, AT,
                  AT + timedelta(hours=6), date(2026, 12, 12), "箱根", (memory,),
                  ("あなたは12月12日に箱根へ行く予定だ。",))


async def test_the_ledger_file_is_copied_once_and_answers_the_same(
        tmp_path: Path, postgres_url: str) -> None:
    path = tmp_path / "moments.sqlite3"
    single = MomentLedger(path)
    await single.record_delivered(_moment("m1"), AT, "2026-12-11", "pushed", "明日は箱根だね。")
    await single.cancel(_moment("m2"), AT, "console")
    await single.set_off("aki", True, AT)
    await single.set_quiet_hours("aki", "21:00-06:30", AT)
    before = [e.to_json() for e in await single.entries()]
    single.close()
    shared = PostgresMomentLedger(postgres_url)
    try:
        assert shared.import_file(path) == (2, 1, 1)
        assert shared.import_file(path) == (0, 0, 0)
        assert [e.to_json() for e in await shared.entries()] == before
        assert await shared.is_off("aki")
        assert await shared.quiet_hours_of("aki") == "21:00-06:30"
        assert not await shared.record_delivered(_moment("m2"), AT, "2026-12-11", "pushed",
                                                 "x")
        assert shared.import_file(tmp_path / "none.sqlite3") == (0, 0, 0)
    finally:
        shared.close()
