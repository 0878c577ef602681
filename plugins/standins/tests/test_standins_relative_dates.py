"""The stand-in's own relative-date resolver, said on Sunday 2026-09-27 unless noted."""

from __future__ import annotations

from datetime import date

import pytest

from omoide_standins.relative_dates import annotate_relative_dates, resolve_relative_dates

SUNDAY = date(2026, 9, 27)


@pytest.mark.parametrize(("said", "expected"), [
    ("明日", "明日（2026年9月28日）"),
    ("明後日", "明後日（2026年9月29日）"),
    ("来週の土曜日に", "来週の土曜日（2026年10月3日）に"),
    ("今度の金曜に", "今度の金曜（2026年10月2日）に"),
    ("週末は", "週末（2026年10月3日〜2026年10月4日）は"),
    ("来月の16日に", "来月の16日（2026年10月16日）に"),
    ("来月は", "来月（2026年10月）は"),
    ("3日後に", "3日後（2026年9月30日）に"),
])
def test_future_expressions_get_their_absolute_date(said: str, expected: str) -> None:
    assert annotate_relative_dates(said, SUNDAY)[0] == expected


def test_the_longest_expression_wins() -> None:
    [found] = resolve_relative_dates("来週の土曜日に行く", SUNDAY)
    assert found.expression == "来週の土曜日"


def test_weeks_start_on_monday_so_next_week_said_on_sunday_starts_tomorrow() -> None:
    [found] = resolve_relative_dates("来週", SUNDAY)
    assert (found.first, found.last) == (date(2026, 9, 28), date(2026, 10, 4))


def test_a_bare_weekday_in_the_past_tense_is_the_last_one() -> None:
    text, _ = annotate_relative_dates("土曜日に行った", SUNDAY, past=True)
    assert text == "土曜日（2026年9月26日）に行った"


def test_coming_friday_said_on_a_friday_is_a_week_later() -> None:
    friday = date(2026, 10, 2)
    [found] = resolve_relative_dates("今度の金曜", friday)
    assert found.first == date(2026, 10, 9)


def test_month_and_year_ends_roll_over() -> None:
    [found] = resolve_relative_dates("明日", date(2026, 12, 31))
    assert found.first == date(2027, 1, 1)
    [month] = resolve_relative_dates("来月", date(2026, 12, 15))
    assert (month.first, month.last) == (date(2027, 1, 1), date(2027, 1, 31))


def test_an_expression_already_annotated_is_left_alone() -> None:
    text = "来週の土曜日（2026年10月3日）に"
    assert annotate_relative_dates(text, SUNDAY)[0] == text


def test_text_without_dates_is_unchanged() -> None:
    assert annotate_relative_dates("ギターを練習している", SUNDAY) == ("ギターを練習している", [])
