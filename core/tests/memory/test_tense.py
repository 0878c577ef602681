"""Tense and anchors of an utterance, and named periods placed by them."""

from __future__ import annotations

from datetime import date

import pytest

from omoide.memory.language.temporal import memory_spans, resolve
from omoide.memory.language.tense import Anchor, Tense, anchor, tense

LATE_SEPT = date(2027, 9, 28)
NEW_YEAR = date(2027, 1, 5)
LATE_DEC = date(2026, 12, 29)


@pytest.mark.parametrize(("text", "expected"), [
    ("お正月は何してたんだったかな", Tense.PAST),
    ("しょうがつ何してたんだっけ?", Tense.PAST),
    ("シルバーウィークって何やってたか覚えてる?", Tense.PAST),
    ("夏休みって結局どこ行ったんだっけ", Tense.PAST),
    ("先々週の木曜日って何があったっけ", Tense.PAST),
    ("クリスマスどうだった？", Tense.PAST),
    ("年末は何していたっけ", Tense.PAST),
    ("GWどこ行くんだっけ", Tense.FUTURE),
    ("年末どうするつもり", Tense.FUTURE),
    ("お正月の予定なんだっけ", Tense.FUTURE),
    ("お盆に帰るの何日だったっけ", Tense.FUTURE),
    ("冬休みにスキー行こうかな", Tense.FUTURE),
    ("GWって何日から？", Tense.NEUTRAL),
])
def test_tense_is_read_on_the_last_action_then_plans_then_the_copula(
        text: str, expected: Tense) -> None:
    assert tense(text) is expected


@pytest.mark.parametrize(("text", "expected"), [
    ("この前ラルゴで会ったの誰だっけ", Anchor.LATEST),
    ("こないだ行ったとき何食べた?", Anchor.LATEST),
    ("前回の面会で何渡したっけ", Anchor.LATEST),
    ("初めて行ったカフェどこだっけ", Anchor.FIRST),
    ("週末の予定覚えてる?", None),
])
def test_relative_anchors_pick_the_latest_or_the_first(text: str,
                                                       expected: Anchor | None) -> None:
    assert anchor(text) is expected


def _spans(text: str, today: date, said: Tense | None) -> list[tuple[str, str]]:
    return [(s.start.isoformat(), s.end.isoformat())
            for s in resolve(text, today, tense=said)]


@pytest.mark.parametrize(("text", "today", "past", "future"), [
    # in late September, Golden Week, お盆, summer holidays and 正月 already happened
    ("ゴールデンウィーク", LATE_SEPT, ("2027-04-29", "2027-05-06"), ("2028-04-29", "2028-05-06")),
    ("GW", LATE_SEPT, ("2027-04-29", "2027-05-06"), ("2028-04-29", "2028-05-06")),
    ("お盆", LATE_SEPT, ("2027-08-13", "2027-08-16"), ("2028-08-13", "2028-08-16")),
    ("正月", LATE_SEPT, ("2027-01-01", "2027-01-07"), ("2028-01-01", "2028-01-07")),
    ("夏休み", LATE_SEPT, ("2027-07-20", "2027-08-31"), ("2028-07-20", "2028-08-31")),
    ("クリスマス", LATE_SEPT, ("2026-12-24", "2026-12-25"), ("2027-12-24", "2027-12-25")),
    ("夏", LATE_SEPT, ("2027-06-01", "2027-08-31"), ("2028-06-01", "2028-08-31")),
    ("8月", LATE_SEPT, ("2027-08-01", "2027-08-31"), ("2028-08-01", "2028-08-31")),
    # across the year boundary: 年末 asked in early January
    ("年末", NEW_YEAR, ("2026-12-25", "2026-12-31"), ("2027-12-25", "2027-12-31")),
    ("クリスマス", NEW_YEAR, ("2026-12-24", "2026-12-25"), ("2027-12-24", "2027-12-25")),
    ("冬", NEW_YEAR, ("2026-12-01", "2027-02-28"), ("2026-12-01", "2027-02-28")),
    # 年末年始 while it lasts is the current one either way
    ("年末年始", LATE_DEC, ("2026-12-28", "2027-01-03"), ("2026-12-28", "2027-01-03")),
    ("正月", LATE_DEC, ("2026-01-01", "2026-01-07"), ("2027-01-01", "2027-01-07")),
    ("敬老の日", LATE_SEPT, ("2027-09-20", "2027-09-20"), ("2028-09-18", "2028-09-18")),
])
def test_a_named_period_is_the_last_one_in_the_past_tense_and_the_next_as_a_plan(
        text: str, today: date, past: tuple[str, str], future: tuple[str, str]) -> None:
    assert _spans(text, today, Tense.PAST) == [past]
    assert _spans(text, today, Tense.FUTURE) == [future]


@pytest.mark.parametrize(("text", "expected"), [
    ("おぼん", ("2027-08-13", "2027-08-16")),
    ("しょうがつ", ("2027-01-01", "2027-01-07")),
    ("ごーるでんうぃーく", ("2027-04-29", "2027-05-06")),
    ("なつやすみ", ("2027-07-20", "2027-08-31")),
])
def test_named_periods_are_found_written_in_kana(text: str, expected: tuple[str, str]) -> None:
    assert _spans(text + "何してたっけ", LATE_SEPT, Tense.PAST) == [expected]


@pytest.mark.parametrize(("text", "expected"), [
    ("去年のクリスマス", ("2026-12-24", "2026-12-25")),
    ("今年のお盆", ("2027-08-13", "2027-08-16")),
    ("来年のGW", ("2028-04-29", "2028-05-06")),
    ("一昨年の夏休み", ("2025-07-20", "2025-08-31")),
    ("きょねんのおぼん", ("2026-08-13", "2026-08-16")),
    ("去年の秋", ("2026-09-01", "2026-11-30")),
    ("来年の3月末", ("2028-03-25", "2028-03-31")),
])
def test_a_written_year_wins_over_the_tense(text: str, expected: tuple[str, str]) -> None:
    for said in (Tense.PAST, Tense.FUTURE, Tense.NEUTRAL):
        assert _spans(text, LATE_SEPT, said) == [expected]


def test_a_question_in_neither_tense_may_mean_the_nearest_or_the_last() -> None:
    assert _spans("冬", LATE_SEPT, None) == [("2027-12-01", "2028-02-29"),
                                            ("2026-12-01", "2027-02-28")]


def test_a_season_is_not_read_inside_a_name_or_a_compound() -> None:
    assert resolve("千夏と何したんだっけ", LATE_SEPT, tense=Tense.PAST) == []
    assert resolve("夏限定のパフェ", LATE_SEPT, tense=Tense.PAST) == []


def test_a_past_event_without_a_date_is_dated_the_day_it_was_told() -> None:
    spans = memory_spans("あなたは家族で鴨川の水族館に行き、颯太はシャチのショーに大喜びした。",
                         date(2027, 8, 29))
    assert [(s.start, s.end, s.label) for s in spans] == \
        [(date(2027, 8, 29), date(2027, 8, 29), "told")]
    assert memory_spans("あなたはコーヒーが好きだ。", date(2027, 8, 29)) == []
    assert memory_spans("あなたは毎週火曜にジムに通っていた。", date(2027, 8, 29)) == []


def test_a_memory_places_its_named_period_by_its_own_tense() -> None:
    said_on = date(2027, 1, 3)
    eaten = memory_spans("あなたは元日にお雑煮を食べた。", said_on)
    assert [(s.start, s.end) for s in eaten] == [(date(2027, 1, 1), date(2027, 1, 1))]
    planned = memory_spans("あなたは年末に実家へ帰る予定だ。", date(2027, 9, 1))
    assert [(s.start, s.end) for s in planned] == [(date(2027, 12, 25), date(2027, 12, 31))]
