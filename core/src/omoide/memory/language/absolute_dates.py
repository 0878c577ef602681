"""Absolute dates in fact text, and how omoide writes dates for people.

:func:`absolute_dates` is the deterministic parser the write path uses to give each
memory its ``event_dates``: （2026年10月3日）, 2026年10月3日, 2026-10-03, 2026/10/3,
and 10月3日 (year taken from when the fact was said, the nearest such date).
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

WEEKDAYS_JA = "月火水木金土日"

_YMD = re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*日")
_ISO = re.compile(r"(?<!\d)(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?!\d)")
_MD = re.compile(r"(?<![\d年])(\d{1,2})\s*月\s*(\d{1,2})\s*日")


def weekday_ja(d: date) -> str:
    """'日' for a Sunday."""
    return WEEKDAYS_JA[d.weekday()]


def format_date_ja(d: date) -> str:
    """2026年10月3日(土)"""
    return f"{d.year}年{d.month}月{d.day}日({weekday_ja(d)})"


def format_stamp(dt: datetime) -> str:
    """2026-09-27 20:50 (日) — the timestamp format of extraction transcripts."""
    return f"{dt:%Y-%m-%d %H:%M} ({weekday_ja(dt.date())})"


def _safe(y: int, m: int, d: int) -> date | None:
    try:
        return date(y, m, d)
    except ValueError:
        return None


def nearest_year(month: int, day: int, around: date) -> date | None:
    """The date with this month/day closest to ``around`` (last, this or next year)."""
    options = [x for x in (_safe(around.year + k, month, day) for k in (-1, 0, 1)) if x]
    return min(options, key=lambda x: abs((x - around).days)) if options else None


def absolute_dates(text: str, said_on: date | None = None) -> tuple[date, ...]:
    """Every absolute date written in ``text``, in order, without repeats.

    Month-day dates without a year are placed in the year nearest ``said_on``
    (skipped when ``said_on`` is None).
    """
    found: list[tuple[int, date]] = []
    taken: list[tuple[int, int]] = []
    for rx in (_YMD, _ISO):
        for m in rx.finditer(text):
            d = _safe(int(m.group(1)), int(m.group(2)), int(m.group(3)))
            if d:
                found.append((m.start(), d))
                taken.append(m.span())
    if said_on is not None:
        for m in _MD.finditer(text):
            if any(a <= m.start() < b for a, b in taken):
                continue
            d = nearest_year(int(m.group(1)), int(m.group(2)), said_on)
            if d:
                found.append((m.start(), d))
    ordered = [d for _, d in sorted(found, key=lambda x: x[0])]
    return tuple(dict.fromkeys(ordered))


def week_start(d: date) -> date:
    """Monday of ``d``'s week (Japanese calendars start weeks on Sunday or Monday;
    speech about 来週 follows Monday-start)."""
    return d - timedelta(days=d.weekday())
