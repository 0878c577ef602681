"""The relative-date resolver, table-driven: expression x today -> date ranges."""

from __future__ import annotations

from datetime import date

import pytest

from omoide.memory.language.temporal import habit_weekdays, memory_spans, resolve
from omoide.memory.language.tense import tense

SUN = date(2026, 9, 27)   # Sunday
WED = date(2026, 4, 22)   # Wednesday
SAT = date(2026, 7, 18)   # Saturday, first day of a three-day weekend (海の日 7/20)

CASES = [
    # text, today, expected [(start, end), ...]
    ("今日", WED, [("2026-04-22", "2026-04-22")]),
    ("明日", WED, [("2026-04-23", "2026-04-23")]),
    ("あした", WED, [("2026-04-23", "2026-04-23")]),
    ("明後日", WED, [("2026-04-24", "2026-04-24")]),
    ("あさって", WED, [("2026-04-24", "2026-04-24")]),
    ("昨日", WED, [("2026-04-21", "2026-04-21")]),
    ("一昨日", WED, [("2026-04-20", "2026-04-20")]),
    ("週末", WED, [("2026-04-25", "2026-04-26")]),
    ("今週末", WED, [("2026-04-25", "2026-04-26")]),
    ("週末", SAT, [("2026-07-18", "2026-07-19")]),
    ("週末", SUN, [("2026-09-27", "2026-09-27"), ("2026-10-03", "2026-10-04")]),
    ("来週末", WED, [("2026-05-02", "2026-05-03")]),
    ("土日", WED, [("2026-04-25", "2026-04-26")]),
    ("今週", WED, [("2026-04-20", "2026-04-26")]),
    ("来週", WED, [("2026-04-27", "2026-05-03")]),
    ("先週", WED, [("2026-04-13", "2026-04-19")]),
    ("再来週", WED, [("2026-05-04", "2026-05-10")]),
    ("来週の土曜", SUN, [("2026-10-03", "2026-10-03")]),
    ("来週の土曜日", WED, [("2026-05-02", "2026-05-02")]),
    ("来週木曜", WED, [("2026-04-30", "2026-04-30")]),
    ("先週の日曜日", WED, [("2026-04-19", "2026-04-19")]),
    ("今度の金曜", WED, [("2026-04-24", "2026-04-24")]),
    ("今度の水曜", WED, [("2026-04-29", "2026-04-29")]),
    ("次の月曜日", SUN, [("2026-09-28", "2026-09-28")]),
    ("この前の土曜", WED, [("2026-04-18", "2026-04-18")]),
    ("月末", WED, [("2026-04-25", "2026-04-30")]),
    ("来月", WED, [("2026-05-01", "2026-05-31")]),
    ("先月", WED, [("2026-03-01", "2026-03-31")]),
    ("来月の16日", WED, [("2026-05-16", "2026-05-16")]),
    ("来月末", WED, [("2026-05-25", "2026-05-31")]),
    ("年末", WED, [("2026-12-25", "2026-12-31")]),
    ("大晦日", WED, [("2026-12-31", "2026-12-31")]),
    ("ゴールデンウィーク", WED, [("2026-04-29", "2026-05-06")]),
    ("GW", WED, [("2026-04-29", "2026-05-06")]),
    ("お盆", SAT, [("2026-08-13", "2026-08-16")]),
    ("連休", SAT, [("2026-07-18", "2026-07-20")]),
    ("三連休", date(2026, 10, 8), [("2026-10-10", "2026-10-12")]),
    ("文化の日", SUN, [("2026-11-03", "2026-11-03")]),
    ("勤労感謝の日", SUN, [("2026-11-23", "2026-11-23")]),
    ("成人の日", date(2027, 1, 5), [("2027-01-11", "2027-01-11")]),
    ("3月末", date(2027, 3, 12), [("2027-03-25", "2027-03-31")]),
    ("2026年10月3日", SUN, [("2026-10-03", "2026-10-03")]),
    ("10月3日", SUN, [("2026-10-03", "2026-10-03")]),
    ("金曜", WED, [("2026-04-24", "2026-04-24")]),
    ("3日後", WED, [("2026-04-25", "2026-04-25")]),
    ("2日前", WED, [("2026-04-20", "2026-04-20")]),
    ("週明け", WED, [("2026-04-27", "2026-04-28")]),
    ("今月末", WED, [("2026-04-25", "2026-04-30")]),
    ("お盆休み", SAT, [("2026-08-13", "2026-08-16")]),
]


@pytest.mark.parametrize(("text", "today", "expected"), CASES,
                         ids=[f"{c[0]}@{c[1]}" for c in CASES])
def test_resolves_relative_dates_against_today(text: str, today: date,
                                               expected: list[tuple[str, str]]) -> None:
    got = [(s.start.isoformat(), s.end.isoformat()) for s in resolve(text, today)]
    assert got == expected


LATE_SEPTEMBER = date(2027, 9, 28)   # the last run of days off 9/18-20, the next 10/9-11


@pytest.mark.parametrize(("text", "expected"), [
    ("この前の連休何してたっけ", ("2027-09-18", "2027-09-20")),      # said to be past
    ("こないだの三連休ってどうしたんだっけ", ("2027-09-18", "2027-09-20")),
    ("三連休に温泉行った", ("2027-09-18", "2027-09-20")),             # told of the past
    ("連休どこ行く？", ("2027-10-09", "2027-10-11")),                 # a plan
])
def test_a_run_of_days_off_is_placed_by_the_tense_like_a_named_period(
        text: str, expected: tuple[str, str]) -> None:
    spans = resolve(text, LATE_SEPTEMBER, tense=tense(text))
    assert [(s.start.isoformat(), s.end.isoformat()) for s in spans] == [expected]


def test_a_run_of_days_off_asked_in_neither_tense_may_be_the_last_or_the_next() -> None:
    spans = resolve("連休", LATE_SEPTEMBER, tense=None)
    assert [(s.start.isoformat(), s.end.isoformat()) for s in spans] == \
        [("2027-09-18", "2027-09-20"), ("2027-10-09", "2027-10-11")]


@pytest.mark.parametrize("text", ["おすすめの映画ある", "日本で一番高い山は", "毎週金曜", "今何時"])
def test_texts_without_dates_resolve_to_nothing(text: str) -> None:
    assert resolve(text, WED) == []


def test_a_sentence_with_weekend_and_plans_finds_the_weekend() -> None:
    spans = resolve("週末の予定覚えてる", SUN)
    assert [s.label for s in spans] == ["週末", "週末"]


def test_memory_dates_come_from_the_absolute_date_not_the_relative_words() -> None:
    spans = memory_spans("あなたは来週の土曜日（2026年10月3日）に友達と箱根に行く予定だ。",
                         date(2026, 9, 27))
    assert [(s.start, s.end) for s in spans] == [(date(2026, 10, 3), date(2026, 10, 3))]


def test_a_stay_extends_the_memory_range() -> None:
    spans = memory_spans("あなたは再来週の土曜日（2026年5月2日）から2泊する予定だ。", WED)
    assert (spans[0].start, spans[0].end) == (date(2026, 5, 2), date(2026, 5, 4))


def test_a_memory_without_absolute_dates_resolves_named_periods_from_when_it_was_said() -> None:
    spans = memory_spans("あなたは年末は家で過ごす。", date(2026, 12, 1))
    assert [(s.start, s.end) for s in spans] == [(date(2026, 12, 25), date(2026, 12, 31))]


def test_weekday_habits_are_recognised() -> None:
    assert habit_weekdays("あなたは毎週火曜と金曜の夜に、ホットヨガに通っている。") == {1, 4}
    assert habit_weekdays("あなたは来週の火曜日に歯医者に行く。") == frozenset()
