"""The ledger says each moment once, across restarts and processes, in a private file."""

from __future__ import annotations

import stat
from datetime import date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from omoide.moments.ledger import MomentLedger
from omoide.moments.model import Moment, MomentKind

ZONE = ZoneInfo("Asia/Tokyo")
AT = datetime(2026, 12, 11, 12, tzinfo=ZONE)
MOMENT = Moment("m1:day_before", "aki", MomentKind.DAY_BEFORE, AT,
                datetime(2026, 12, 12, tzinfo=ZONE), date(2026, 12, 12), "箱根", ("m1",),
                ("あなたは12月12日に箱根へ行く予定だ。",))


async def test_a_moment_is_recorded_once(tmp_path: Path) -> None:
    ledger = MomentLedger(tmp_path / "moments.sqlite3")
    assert await ledger.record_delivered(MOMENT, AT, "2026-12-11", "pushed", "明日は箱根だね。")
    assert not await ledger.record_delivered(MOMENT, AT, "2026-12-11", "opener", "again")
    assert await ledger.delivered("m1:day_before")
    assert await ledger.delivered_on("aki", "2026-12-11") == 1


async def test_what_was_said_survives_a_restart_and_is_shared_by_workers(
        tmp_path: Path) -> None:
    path = tmp_path / "moments.sqlite3"
    first, second = MomentLedger(path), MomentLedger(path)
    assert await first.record_delivered(MOMENT, AT, "2026-12-11", "pushed", "明日は箱根だね。")
    first.close()
    assert not await second.record_delivered(MOMENT, AT, "2026-12-11", "pushed", "x")
    [entry] = await MomentLedger(path).entries("aki")
    assert (entry.key, entry.state, entry.text, entry.reasons) == \
        ("m1:day_before", "delivered", "明日は箱根だね。", ("m1",))


async def test_the_ledger_file_is_private(tmp_path: Path) -> None:
    path = tmp_path / "moments.sqlite3"
    await MomentLedger(path).delivered("x")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


async def test_a_cancelled_moment_is_never_said(tmp_path: Path) -> None:
    ledger = MomentLedger(tmp_path / "moments.sqlite3")
    assert await ledger.cancel(MOMENT, AT, "console")
    assert not await ledger.record_delivered(MOMENT, AT, "2026-12-11", "pushed", "x")
    assert [e.state for e in await ledger.entries()] == ["cancelled"]


async def test_the_off_switch_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "moments.sqlite3"
    await MomentLedger(path).set_off("aki", True, AT)
    assert await MomentLedger(path).is_off("aki")
    await MomentLedger(path).set_off("aki", False, AT)
    assert not await MomentLedger(path).is_off("aki")
