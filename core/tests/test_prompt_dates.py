"""The date block: today and tomorrow with weekdays, in the user's time zone."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from omoide.pipeline.dates import date_block, format_date_ja

TOKYO = "Asia/Tokyo"


@pytest.mark.parametrize(("utc", "today", "tomorrow"), [
    # Sunday 2026-09-27 21:00 JST: the reference's model said 明日は日曜日 here.
    ("2026-09-27T12:00:00", "2026年9月27日（日曜日）", "2026年9月28日（月曜日）"),
    # month end
    ("2026-09-30T03:00:00", "2026年9月30日（水曜日）", "2026年10月1日（木曜日）"),
    # year end
    ("2026-12-31T10:00:00", "2026年12月31日（木曜日）", "2027年1月1日（金曜日）"),
    # leap day
    ("2028-02-28T10:00:00", "2028年2月28日（月曜日）", "2028年2月29日（火曜日）"),
])
def test_today_and_tomorrow_with_weekdays(utc: str, today: str, tomorrow: str) -> None:
    now = datetime.fromisoformat(utc).replace(tzinfo=UTC)
    block = date_block(now, TOKYO)
    assert f"今日は{today}" in block
    assert f"明日は{tomorrow}" in block


def test_the_users_time_zone_decides_the_day() -> None:
    # 2026-09-26 16:00 UTC is already Sunday in Tokyo but still Saturday in New York.
    now = datetime(2026, 9, 26, 16, 0, tzinfo=UTC)
    assert "今日は2026年9月27日（日曜日）" in date_block(now, TOKYO)
    assert "今日は2026年9月26日（土曜日）" in date_block(now, "America/New_York")


def test_format_date_ja() -> None:
    assert format_date_ja(datetime(2026, 10, 3).date()) == "2026年10月3日（土曜日）"
