"""The date block of the system prompt: today and tomorrow, with weekdays.

The reference's chat model said 明日は日曜日 on a Sunday until tomorrow's date and
weekday were written into the prompt; so both are, in the user's time zone.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

WEEKDAYS_JA = ("月曜日", "火曜日", "水曜日", "木曜日", "金曜日", "土曜日", "日曜日")


def format_date_ja(d: date) -> str:
    """``2026年9月27日（日曜日）``."""
    return f"{d.year}年{d.month}月{d.day}日（{WEEKDAYS_JA[d.weekday()]}）"


def date_block(now: datetime, timezone: str) -> str:
    """The lines telling the model what day it is today and tomorrow, where the user is."""
    local = now.astimezone(ZoneInfo(timezone))
    today = local.date()
    tomorrow = today + timedelta(days=1)
    return (f"現在の日時: {format_date_ja(today)} {local:%H:%M}（{timezone}）\n"
            f"今日は{format_date_ja(today)}です。明日は{format_date_ja(tomorrow)}です。")
