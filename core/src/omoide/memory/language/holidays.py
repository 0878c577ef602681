"""Japanese national holidays, for 連休 and named days (「海の日」「GW」).

The calendar is the `holidays` library's (``holidays.country_holidays("JP")``): the
holidays by law with their Japanese names, substitute holidays (振替休日), days
sandwiched between two holidays (国民の休日) and the years a holiday moved (the 2020
and 2021 Olympics) or did not exist yet.
"""

from __future__ import annotations

from datetime import date, timedelta
from functools import lru_cache

_NOT_NAMED = frozenset({"振替休日", "国民の休日"})
"""Days off that are not a holiday of their own (nobody plans for 「振替休日」 by name)."""


@lru_cache(maxsize=64)
def _calendar(year: int) -> dict[date, str]:
    import holidays as calendar

    return dict(calendar.country_holidays("JP", years=year, language="ja").items())


def named_holidays(year: int) -> dict[str, date]:
    """Name -> date of each national holiday of ``year`` (without substitutes and
    sandwiched days); a holiday that did not exist that year is absent."""
    return {name: d for d, name in sorted(_calendar(year).items()) if name not in _NOT_NAMED}


def holidays(year: int) -> frozenset[date]:
    """Every day off by law in ``year``: holidays, substitutes and sandwiched days."""
    return frozenset(_calendar(year))


def is_day_off(d: date) -> bool:
    """Weekend or national holiday."""
    return d.weekday() >= 5 or d in _calendar(d.year)


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
