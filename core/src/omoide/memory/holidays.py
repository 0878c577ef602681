"""Japanese national holidays (the rules of the 祝日法), for 連休 and named days.

Computed, not tabulated, so any year works: fixed days, Happy-Monday days, the
equinoxes (the usual astronomical approximation valid 1980-2099), substitute
holidays (振替休日) and a weekday sandwiched between two holidays (国民の休日).
"""

from __future__ import annotations

from datetime import date, timedelta
from functools import lru_cache


def _nth_monday(year: int, month: int, n: int) -> date:
    first = date(year, month, 1)
    offset = (0 - first.weekday()) % 7
    return first + timedelta(days=offset + 7 * (n - 1))


def _vernal_equinox(year: int) -> int:
    return int(20.8431 + 0.242194 * (year - 1980) - (year - 1980) // 4)


def _autumnal_equinox(year: int) -> int:
    return int(23.2488 + 0.242194 * (year - 1980) - (year - 1980) // 4)


def named_holidays(year: int) -> dict[str, date]:
    """Name -> date of each national holiday of ``year`` (without substitutes)."""
    return {
        "元日": date(year, 1, 1),
        "成人の日": _nth_monday(year, 1, 2),
        "建国記念の日": date(year, 2, 11),
        "天皇誕生日": date(year, 2, 23),
        "春分の日": date(year, 3, _vernal_equinox(year)),
        "昭和の日": date(year, 4, 29),
        "憲法記念日": date(year, 5, 3),
        "みどりの日": date(year, 5, 4),
        "こどもの日": date(year, 5, 5),
        "海の日": _nth_monday(year, 7, 3),
        "山の日": date(year, 8, 11),
        "敬老の日": _nth_monday(year, 9, 3),
        "秋分の日": date(year, 9, _autumnal_equinox(year)),
        "スポーツの日": _nth_monday(year, 10, 2),
        "文化の日": date(year, 11, 3),
        "勤労感謝の日": date(year, 11, 23),
    }


@lru_cache(maxsize=64)
def holidays(year: int) -> frozenset[date]:
    """Every day off by law in ``year``: holidays, substitutes and sandwiched days."""
    days = set(named_holidays(year).values())
    for d in sorted(days):
        if d.weekday() == 6:  # a Sunday holiday moves to the next non-holiday
            sub = d + timedelta(days=1)
            while sub in days:
                sub += timedelta(days=1)
            days.add(sub)
    for d in sorted(days):
        mid, after = d + timedelta(days=1), d + timedelta(days=2)
        if after in days and mid not in days and mid.weekday() != 6:
            days.add(mid)
    return frozenset(d for d in days if d.year == year)


def is_day_off(d: date) -> bool:
    """Weekend or national holiday."""
    return d.weekday() >= 5 or d in holidays(d.year)


def long_weekends(start: date, end: date, min_days: int = 3) -> list[tuple[date, date]]:
    """Runs of at least ``min_days`` consecutive days off between ``start`` and ``end``."""
    runs: list[tuple[date, date]] = []
    d = start - timedelta(days=6)
    run_start: date | None = None
    while d <= end + timedelta(days=6):
        if is_day_off(d):
            run_start = run_start or d
        else:
            if run_start and (d - run_start).days >= min_days:
                runs.append((run_start, d - timedelta(days=1)))
            run_start = None
        d += timedelta(days=1)
    return [r for r in runs if r[1] >= start and r[0] <= end]
