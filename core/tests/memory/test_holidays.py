"""Japan's days off, as 連休 and named holidays need them: substitutes, sandwiched days and
the years a holiday moved or did not exist."""

from __future__ import annotations

from datetime import date

from omoide.memory.language.holidays import holidays, is_day_off, long_weekends, named_holidays
from omoide.memory.language.temporal import resolve


def test_a_sunday_holiday_gives_a_substitute_day_off() -> None:
    assert date(2026, 5, 6) in holidays(2026)          # こどもの日 5/5 follows a Sunday 5/3
    assert "振替休日" not in named_holidays(2026)


def test_a_weekday_between_two_holidays_is_a_day_off() -> None:
    assert is_day_off(date(2026, 9, 22))                # 敬老の日 9/21, 秋分の日 9/23


def test_the_silver_week_of_2026_is_one_five_day_run() -> None:
    assert (date(2026, 9, 19), date(2026, 9, 23)) in long_weekends(date(2026, 9, 1),
                                                                   date(2026, 9, 30))


def test_a_holiday_moved_for_the_olympics_is_on_its_moved_day() -> None:
    assert named_holidays(2020)["海の日"] == date(2020, 7, 23)


def test_a_holiday_is_absent_in_a_year_it_did_not_exist() -> None:
    assert "天皇誕生日" not in named_holidays(2019)
    assert resolve("天皇誕生日", date(2019, 6, 1))       # the nearest year that has one
