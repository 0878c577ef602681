"""A small resolver of Japanese relative dates, for the rule-based extraction stand-in.

Given a sentence and the day it was said, it finds expressions such as 明日, 明後日,
来週の土曜日, 今度の金曜, 週末, 来月 and returns each with the absolute day(s) it points
at, so the stand-in can write 「来週の土曜日（2026年10月3日）に」 as the reference's
extraction does. Weeks start on Monday (来週 said on a Sunday is the week starting the
next day). This is the stand-in's own resolver, deliberately independent of the
memory engine's: the two meet only through the text.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

_WEEKDAY = {"月": 0, "火": 1, "水": 2, "木": 3, "金": 4, "土": 5, "日": 6}
_WD = r"(?P<wd>[月火水木金土日])曜(?:日)?"


@dataclass(frozen=True)
class ResolvedDate:
    """A relative date expression found at ``start:end`` of a sentence.

    ``first``..``last`` is the day range it names (equal for one day);
    ``month_only`` marks a whole month (来月), written as 「2026年11月」.
    """

    start: int
    end: int
    expression: str
    first: date
    last: date
    month_only: bool = False

    def label(self) -> str:
        """The absolute form written in （） after the expression."""
        if self.month_only:
            return f"{self.first.year}年{self.first.month}月"
        if self.first == self.last:
            return _ja(self.first)
        return f"{_ja(self.first)}〜{_ja(self.last)}"


def _ja(d: date) -> str:
    return f"{d.year}年{d.month}月{d.day}日"


def _monday(d: date) -> date:
    return d - timedelta(days=d.weekday())


def _add_months(d: date, months: int) -> date:
    index = d.year * 12 + (d.month - 1) + months
    return date(index // 12, index % 12 + 1, 1)


def _month_end(d: date) -> date:
    return date(d.year, d.month, calendar.monthrange(d.year, d.month)[1])


def _next_weekday(today: date, weekday: int) -> date:
    """The next such weekday strictly after today (今度の金曜 said on a Friday = in 7 days)."""
    return today + timedelta(days=(weekday - today.weekday() - 1) % 7 + 1)


def _last_weekday(today: date, weekday: int) -> date:
    """The most recent such weekday strictly before today."""
    return today - timedelta(days=(today.weekday() - weekday - 1) % 7 + 1)


def _weekend(today: date, past: bool) -> tuple[date, date]:
    """週末: the coming Saturday–Sunday; on a Sunday, a plan means next weekend."""
    saturday = _monday(today) + timedelta(days=5)
    if past:
        if today.weekday() < 5:
            saturday -= timedelta(days=7)
    elif today.weekday() == 6:
        saturday += timedelta(days=7)
    return saturday, saturday + timedelta(days=1)


def _day_of_month(today: date, day: int, past: bool) -> date | None:
    """「16日」alone: this month's if it is still ahead (or behind, for the past tense)."""
    candidates = [_add_months(today, k) for k in ((0, -1) if past else (0, 1))]
    for month_start in candidates:
        if day <= calendar.monthrange(month_start.year, month_start.month)[1]:
            d = month_start.replace(day=day)
            if (d <= today) if past else (d >= today):
                return d
    return None


# Where two patterns match at one place, the longer wins (来週の土曜日 over 来週).
_PATTERNS: list[tuple[str, str]] = [
    ("next_week_wd", r"来週の?" + _WD),
    ("this_week_wd", r"今週の?" + _WD),
    ("last_week_wd", r"先週の?" + _WD),
    ("coming_wd", r"(?:今度|次)の?" + _WD),
    ("next_month_day", r"来月の?(?P<d>\d{1,2})日"),
    ("this_month_day", r"今月の?(?P<d>\d{1,2})日"),
    ("next_weekend", r"来週末"),
    ("this_weekend", r"(?:今週末|今度の週末|週末)"),
    ("last_weekend", r"先週末"),
    ("day_after_tomorrow", r"(?:明後日|あさって)"),
    ("day_before_yesterday", r"(?:一昨日|おととい)"),
    ("tomorrow", r"(?:明日|あした)"),
    ("yesterday", r"(?:昨日|きのう)"),
    ("today", r"(?:今日|今夜|今晩|きょう)"),
    ("days_later", r"(?P<n>\d{1,2})日後"),
    ("next_week", r"来週"),
    ("this_week", r"今週"),
    ("last_week", r"先週"),
    ("month_end", r"(?:今月末|月末)"),
    ("next_month", r"来月"),
    ("this_month", r"今月"),
    ("last_month", r"先月"),
    ("year_end", r"年末"),
    ("bare_wd", r"(?<![今来先次度週の])" + _WD),
    ("bare_day", r"(?<![\d月年])(?P<d>\d{1,2})日(?![後間])"),
]
_COMPILED = [(name, re.compile(pattern)) for name, pattern in _PATTERNS]


def _resolve_one(kind: str, groups: dict[str, str | Any], today: date,
                 past: bool) -> tuple[date, date, bool] | None:
    wd_text = groups.get("wd")
    wd = _WEEKDAY[wd_text] if wd_text else None
    num = groups.get("d") or groups.get("n")
    monday = _monday(today)
    one: date | None = None
    if kind == "next_week_wd" and wd is not None:
        one = monday + timedelta(days=7 + wd)
    elif kind == "this_week_wd" and wd is not None:
        one = monday + timedelta(days=wd)
    elif kind == "last_week_wd" and wd is not None:
        one = monday + timedelta(days=wd - 7)
    elif kind == "coming_wd" and wd is not None:
        one = _next_weekday(today, wd)
    elif kind == "bare_wd" and wd is not None:
        one = _last_weekday(today, wd) if past else _next_weekday(today, wd)
    elif kind == "next_month_day" and num:
        first = _add_months(today, 1)
        if int(num) > calendar.monthrange(first.year, first.month)[1]:
            return None
        one = first.replace(day=int(num))
    elif kind == "this_month_day" and num:
        if int(num) > calendar.monthrange(today.year, today.month)[1]:
            return None
        one = today.replace(day=int(num))
    elif kind == "bare_day" and num:
        one = _day_of_month(today, int(num), past)
    elif kind == "days_later" and num:
        one = today + timedelta(days=int(num))
    elif kind in _DAY_OFFSETS:
        one = today + timedelta(days=_DAY_OFFSETS[kind])
    if one is not None:
        return one, one, False
    if kind == "this_weekend":
        sat, sun = _weekend(today, past)
        return sat, sun, False
    if kind in ("next_weekend", "last_weekend"):
        sat = monday + timedelta(days=5 + (7 if kind == "next_weekend" else -7))
        return sat, sat + timedelta(days=1), False
    if kind in ("next_week", "this_week", "last_week"):
        start = monday + timedelta(days={"next_week": 7, "this_week": 0, "last_week": -7}[kind])
        return start, start + timedelta(days=6), False
    if kind in ("next_month", "this_month", "last_month"):
        first = _add_months(today, {"next_month": 1, "this_month": 0, "last_month": -1}[kind])
        return first, _month_end(first), True
    if kind == "month_end":
        end = _month_end(today)
        return end, end, False
    if kind == "year_end":
        end = date(today.year, 12, 31)
        return end, end, False
    return None


_DAY_OFFSETS = {"today": 0, "tomorrow": 1, "day_after_tomorrow": 2, "yesterday": -1,
                "day_before_yesterday": -2}


def resolve_relative_dates(text: str, today: date, *, past: bool = False) -> list[ResolvedDate]:
    """Every relative date expression in ``text``, resolved against ``today``.

    ``past`` says the sentence is about the past (行った), which decides bare
    weekdays and 週末 (last Saturday rather than the next one).
    """
    candidates: list[tuple[int, int, int, str, re.Match[str]]] = []
    for priority, (kind, regex) in enumerate(_COMPILED):
        for match in regex.finditer(text):
            candidates.append((match.start(), -len(match.group(0)), priority, kind, match))
    found: list[ResolvedDate] = []
    taken_until = 0
    # Leftmost first, then longest (来週の土曜日 over 来週), then the pattern order.
    for start, _, _, kind, match in sorted(candidates, key=lambda c: c[:3]):
        if start < taken_until:
            continue
        resolved = _resolve_one(kind, match.groupdict(), today, past)
        if resolved is None:
            continue
        first, last, month_only = resolved
        found.append(ResolvedDate(start, match.end(), match.group(0), first, last, month_only))
        taken_until = match.end()
    return found


def annotate_relative_dates(text: str, today: date, *,
                            past: bool = False) -> tuple[str, list[ResolvedDate]]:
    """``text`` with 「（YYYY年M月D日）」 written after each relative date it contains.

    An expression already followed by a parenthesis is left alone (already annotated).
    """
    resolved = [r for r in resolve_relative_dates(text, today, past=past)
                if text[r.end:r.end + 1] not in ("（", "(")]
    out: list[str] = []
    cursor = 0
    for r in resolved:
        out.append(text[cursor:r.end])
        out.append(f"（{r.label()}）")
        cursor = r.end
    out.append(text[cursor:])
    return "".join(out), resolved
