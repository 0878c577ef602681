"""Relative dates -> absolute date ranges, against "today" in the user's time zone.

:func:`resolve` turns 週末 / 来週の土曜 / 明後日 / 来月 / 連休 / 文化の日 ... into
:class:`DateSpan` ranges. The read path resolves the query against now; the write
path resolves a fact that carries no absolute date against when it was said, so a
memory such as 「年末は家で過ごす」 still has a date range to match.

The input should already have kana readings of temporal words rewritten to their
kanji forms (:mod:`omoide.memory.language.lexicon` does that with Sudachi readings, which
also catches ASR homophones such as 終末 for 週末); common kana spellings are
accepted here too, so the resolver works on plain text.

Weeks start on Monday: 今週 is Monday..Sunday of today's week, 来週 the next one.
週末 is the coming Saturday and Sunday; on a Saturday it is today and tomorrow; on a
Sunday it is today and the next weekend.

A named period (お盆, 正月, GW, 夏休み, a season, 8月...) takes the utterance's
:class:`~omoide.memory.language.tense.Tense`: spoken of in the past it is the last
occurrence that has begun, as a plan the current or next one, else the nearest; a year
written with it (去年の, 今年の, 来年の, 一昨年の) always wins. Periods are also found
written in kana (おぼん, しょうがつ, ごーるでんうぃーく).
"""

from __future__ import annotations

import calendar
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from functools import lru_cache

from omoide.memory.language.absolute_dates import WEEKDAYS_JA, absolute_dates, week_start
from omoide.memory.language.canonical import to_katakana
from omoide.memory.language.holidays import long_weekends, named_holidays
from omoide.memory.language.tense import Tense, tense


@dataclass(frozen=True)
class DateSpan:
    """An inclusive date range a text refers to; ``label`` is the expression."""

    start: date
    end: date
    label: str

    @property
    def days(self) -> int:
        return (self.end - self.start).days + 1

    def overlaps(self, other: DateSpan) -> bool:
        return self.start <= other.end and other.start <= self.end

    def contains(self, d: date) -> bool:
        return self.start <= d <= self.end


_W = r"([月火水木金土日])曜日?"
_WEEK_OFFSETS = {"先々週": -2, "先週": -1, "今週": 0, "来週": 1, "再来週": 2, "翌週": 1}
_WEEK = "|".join(sorted(_WEEK_OFFSETS, key=len, reverse=True))
_MONTH_OFFSETS = {"先月": -1, "今月": 0, "来月": 1, "再来月": 2, "翌月": 1}
_MONTH = "|".join(sorted(_MONTH_OFFSETS, key=len, reverse=True))
_DAY_OFFSETS = {"一昨日": -2, "おととい": -2, "おとつい": -2, "昨日": -1, "きのう": -1,
                "今日": 0, "きょう": 0, "本日": 0, "今夜": 0, "今晩": 0, "今朝": 0,
                "明々後日": 3, "しあさって": 3, "明後日": 2, "あさって": 2,
                "明日": 1, "あした": 1}
_DAY = "|".join(sorted(_DAY_OFFSETS, key=len, reverse=True))
_HOLIDAY_ALIASES = {"体育の日": "スポーツの日", "元旦": "元日", "建国記念日": "建国記念の日"}
_PART = {"上旬": (1, 10), "中旬": (11, 20), "下旬": (21, 31), "末": (25, 31), "初め": (1, 7),
         "頭": (1, 7), "終わり": (25, 31), "おわり": (25, 31), "はじめ": (1, 7)}


def _weekday_index(ch: str) -> int:
    return WEEKDAYS_JA.index(ch)


def _month_add(d: date, months: int) -> tuple[int, int]:
    m = d.month - 1 + months
    return d.year + m // 12, m % 12 + 1


def _month_span(year: int, month: int, first: int = 1, last: int = 31) -> tuple[date, date]:
    days = calendar.monthrange(year, month)[1]
    return date(year, month, min(first, days)), date(year, month, min(last, days))


def _nearest_span(today: date, make: Callable[[int], tuple[date, date] | None],
                  ) -> tuple[date, date] | None:
    """The occurrence people mean: the current one, else one that ended in the last
    60 days (「年末どこ行ったっけ」 in January), else the next one (「年末」 in April)."""
    spans = [s for s in (make(y) for y in (today.year - 1, today.year, today.year + 1)) if s]
    for start, end in spans:
        if start <= today <= end:
            return start, end
    recent = [s for s in spans if s[1] < today and (today - s[1]).days <= 60]
    if recent:
        return max(recent, key=lambda s: s[1])
    upcoming = [s for s in spans if s[0] > today]
    if upcoming:
        return min(upcoming, key=lambda s: s[0])
    return max(spans, key=lambda s: s[1]) if spans else None


_Make = Callable[[int], tuple[date, date] | None]
"""A period's occurrence in a given year (None: not that year)."""


def _occurrences(today: date, make: _Make, tense: Tense | None) -> _Dates:
    """The occurrences of a yearly period an utterance may mean: in the past tense the
    last one that has begun (the current one included), as a plan the current or next
    one, in neither the nearest (:func:`_nearest_span`); ``None``: a question in neither
    tense, which may mean the nearest or the last one."""
    if tense is None:
        both = _occurrences(today, make, Tense.NEUTRAL) + _occurrences(today, make, Tense.PAST)
        return list(dict.fromkeys(both))
    if tense is Tense.NEUTRAL:
        span = _nearest_span(today, make)
        return [span] if span else []
    spans = [s for s in (make(y) for y in range(today.year - 2, today.year + 2)) if s]
    if tense is Tense.PAST:
        begun = [s for s in spans if s[0] <= today]
        return [max(begun, key=lambda s: s[0])] if begun else []
    coming = [s for s in spans if s[1] >= today]
    return [min(coming, key=lambda s: s[0])] if coming else []


def _weekend(today: date) -> list[tuple[date, date]]:
    wd = today.weekday()
    if wd == 5:
        return [(today, today + timedelta(days=1))]
    if wd == 6:
        return [(today, today), (today + timedelta(days=6), today + timedelta(days=7))]
    sat = today + timedelta(days=5 - wd)
    return [(sat, sat + timedelta(days=1))]


_PERIOD_READINGS = {
    "オボン": "お盆", "オショウガツ": "お正月", "ショウガツ": "正月", "ネンマツネンシ": "年末年始",
    "ネンマツ": "年末", "トシアケ": "年明け", "オオミソカ": "大晦日", "ナツヤスミ": "夏休み",
    "フユヤスミ": "冬休み", "ハルヤスミ": "春休み", "ガンジツ": "元日", "ガンタン": "元旦",
    "タナバタ": "七夕", "ヒナマツリ": "ひな祭り", "ハハノヒ": "母の日", "チチノヒ": "父の日"}
"""Named periods written in kana, as their katakana (the periods are looked for in the
katakana copy of a text, so that おぼん and オボン are お盆)."""

_SEASONS: dict[str, _Make] = {
    "春": lambda y: _months(y, 3, 3), "夏": lambda y: _months(y, 6, 3),
    "秋": lambda y: _months(y, 9, 3), "冬": lambda y: _months(y, 12, 3)}
_SEASON = r"(?<![\u3400-\u9fff々])(春|夏|秋|冬)(?=に|の|は|って|も|頃|ごろ|先|、|\s|$)"


def _months(year: int, first: int, count: int) -> tuple[date, date]:
    """``count`` months from month ``first`` of ``year`` (冬 runs into the next year)."""
    last_year, last_month = _month_add(date(year, first, 1), count - 1)
    return date(year, first, 1), _month_span(last_year, last_month)[1]


@lru_cache(maxsize=8)
def _named_periods(year: int) -> dict[str, Callable[[int], tuple[date, date] | None]]:
    """Named periods and holidays around ``year`` (built once per year: resolving runs
    on every turn, and on every memory an index analyses, said on many different days)."""
    def silver(y: int) -> tuple[date, date] | None:
        runs = long_weekends(date(y, 9, 1), date(y, 9, 30))
        return max(runs, key=lambda r: (r[1] - r[0]).days) if runs else None

    def nth_sunday(month: int, n: int) -> Callable[[int], tuple[date, date]]:
        def day(y: int) -> tuple[date, date]:
            first = date(y, month, 1)
            d = first + timedelta(days=(6 - first.weekday()) % 7 + 7 * (n - 1))
            return d, d
        return day

    periods: dict[str, Callable[[int], tuple[date, date] | None]] = {
        "母の日": nth_sunday(5, 2),
        "父の日": nth_sunday(6, 3),
        "ゴールデンウィーク": lambda y: (date(y, 4, 29), date(y, 5, 6)),
        "ゴールデンウイーク": lambda y: (date(y, 4, 29), date(y, 5, 6)),
        "GW": lambda y: (date(y, 4, 29), date(y, 5, 6)),
        "シルバーウィーク": silver,
        "シルバーウイーク": silver,
        "お盆": lambda y: (date(y, 8, 13), date(y, 8, 16)),
        "年末年始": lambda y: (date(y, 12, 28), date(y + 1, 1, 3)),
        "年末": lambda y: (date(y, 12, 25), date(y, 12, 31)),
        "年の暮れ": lambda y: (date(y, 12, 25), date(y, 12, 31)),
        "年の瀬": lambda y: (date(y, 12, 25), date(y, 12, 31)),
        "暮れ": lambda y: (date(y, 12, 25), date(y, 12, 31)),
        "年始": lambda y: (date(y, 1, 1), date(y, 1, 7)),
        "年明け": lambda y: (date(y, 1, 1), date(y, 1, 10)),
        "お正月": lambda y: (date(y, 1, 1), date(y, 1, 7)),
        "正月": lambda y: (date(y, 1, 1), date(y, 1, 7)),
        "大晦日": lambda y: (date(y, 12, 31), date(y, 12, 31)),
        "大みそか": lambda y: (date(y, 12, 31), date(y, 12, 31)),
        "クリスマスイブ": lambda y: (date(y, 12, 24), date(y, 12, 24)),
        "クリスマス": lambda y: (date(y, 12, 24), date(y, 12, 25)),
        "夏休み": lambda y: (date(y, 7, 20), date(y, 8, 31)),
        "バレンタインデー": lambda y: (date(y, 2, 14), date(y, 2, 14)),
        "バレンタイン": lambda y: (date(y, 2, 14), date(y, 2, 14)),
        "ホワイトデー": lambda y: (date(y, 3, 14), date(y, 3, 14)),
        "ひな祭り": lambda y: (date(y, 3, 3), date(y, 3, 3)),
        "ひなまつり": lambda y: (date(y, 3, 3), date(y, 3, 3)),
        "七夕": lambda y: (date(y, 7, 7), date(y, 7, 7)),
        "ハロウィン": lambda y: (date(y, 10, 31), date(y, 10, 31)),
        "ハロウィーン": lambda y: (date(y, 10, 31), date(y, 10, 31)),
        "冬休み": lambda y: (date(y, 12, 25), date(y + 1, 1, 7)),
        "春休み": lambda y: (date(y, 3, 20), date(y, 4, 7)),
    }
    around = {n: None for y in (year - 1, year, year + 1)
              for n in named_holidays(y)}  # a holiday this year lacks may be near
    for name in list(around) + list(_HOLIDAY_ALIASES):
        canonical_name = _HOLIDAY_ALIASES.get(name, name)
        periods[name] = (lambda n: lambda y: _holiday_span(y, n))(canonical_name)
    for reading, name in _PERIOD_READINGS.items():
        periods[reading] = periods[name]
    return periods


def _holiday_span(year: int, name: str) -> tuple[date, date] | None:
    """The day of holiday ``name`` in ``year``; None in a year it did not exist."""
    day = named_holidays(year).get(name)
    return (day, day) if day is not None else None


@lru_cache(maxsize=8)
def _period_table(year: int) -> dict[str, _Make]:
    """:func:`_named_periods` by the katakana copy of their names (おぼん → オボン)."""
    return {to_katakana(n): make for n, make in _named_periods(year).items()}


def _period_alternation(year: int) -> str:
    names = sorted((re.escape(n) for n in _period_table(year)), key=len, reverse=True)
    # (暮れ is the year's end, not 夕暮れ, 日暮れ or 途方に暮れる)
    return "|".join(_NOT_DUSK + n if n == to_katakana("暮れ") else n for n in names)


_NOT_DUSK = r"(?<![夕日にニ])"


@lru_cache(maxsize=8)
def _period_pattern(year: int) -> re.Pattern[str]:
    return re.compile(_period_alternation(year))


_YEAR_OFFSETS = {"一昨年": -2, "おととし": -2, "去年": -1, "昨年": -1, "きょねん": -1,
                 "今年": 0, "ことし": 0, "来年": 1, "らいねん": 1, "再来年": 2}
_YEARS = "|".join(sorted((to_katakana(y) for y in _YEAR_OFFSETS), key=len, reverse=True))


@lru_cache(maxsize=8)
def _year_period_pattern(year: int) -> re.Pattern[str]:
    """A year with a period, season or month: 去年のお盆, 今年の夏, 来年の3月末."""
    return re.compile(rf"({_YEARS})ノ?(?:({_period_alternation(year)})|(春|夏|秋|冬)|"
                      r"(\d{1,2})月ノ?(末|上旬|中旬|下旬|初メ|頭)?)")


class _Scanner:
    """Finds expressions left to right by priority; each character is used once."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.used = [False] * len(text)
        self.found: list[tuple[int, DateSpan]] = []

    def scan(self, pattern: str | re.Pattern[str],
             handle: Callable[[re.Match[str]], list[tuple[date, date]]],
             kana: bool = False) -> None:
        """Record what ``pattern`` finds; ``kana``: look in the katakana copy of the text
        (one character for one, so the places are the same)."""
        for m in re.finditer(pattern, to_katakana(self.text) if kana else self.text):
            if any(self.used[m.start():m.end()]):
                continue
            spans = handle(m)
            if not spans:
                continue
            for i in range(m.start(), m.end()):
                self.used[i] = True
            for start, end in spans:
                self.found.append((m.start(), DateSpan(start, end,
                                                       self.text[m.start():m.end()])))


_Dates = list[tuple[date, date]]
_Handler = Callable[[re.Match[str], date], _Dates]
"""Turns one match into the date ranges it means, relative to today (none: no match)."""


def _absolute(m: re.Match[str], today: date) -> _Dates:
    return [(d, d) for d in absolute_dates(m.group(0), today)]


def _month_day(m: re.Match[str], today: date) -> _Dates:
    y, mo = _month_add(today, _MONTH_OFFSETS[m.group(1)])
    try:
        d = date(y, mo, int(m.group(2)))
    except ValueError:
        return []
    return [(d, d)]


def _week_day(m: re.Match[str], today: date) -> _Dates:
    monday = week_start(today) + timedelta(weeks=_WEEK_OFFSETS[m.group(1)])
    d = monday + timedelta(days=_weekday_index(m.group(2)))
    return [(d, d)]


def _next_day(m: re.Match[str], today: date) -> _Dates:
    target = _weekday_index(m.group(2))
    ahead = (target - today.weekday()) % 7 or 7
    d = today + timedelta(days=ahead)
    return [(d, d)]


def _last_day(m: re.Match[str], today: date) -> _Dates:
    target = _weekday_index(m.group(2))
    back = (today.weekday() - target) % 7 or 7
    d = today - timedelta(days=back)
    return [(d, d)]


def _week_end(m: re.Match[str], today: date) -> _Dates:
    word = m.group(1)
    if word in ("", "今週", "この"):
        return _weekend(today)
    sat = week_start(today) + timedelta(weeks=_WEEK_OFFSETS[word], days=5)
    return [(sat, sat + timedelta(days=1))]


def _holiday_run(m: re.Match[str], today: date) -> _Dates:
    """The current or next run of days off (連休), looking a few days back."""
    runs = long_weekends(today - timedelta(days=3), today + timedelta(days=60))
    return [r for r in runs if r[1] >= today][:1]


def _last_holiday_run(today: date) -> _Dates:
    """The last run of days off that has begun by ``today`` (the current one included)."""
    begun = [r for r in long_weekends(today - timedelta(days=400), today) if r[0] <= today]
    return [max(begun, key=lambda r: r[0])] if begun else []


_SAID_PAST = re.compile(r"(この前|この間|こないだ|前回|先日)の?$")


def _holiday_runs(tense: Tense | None) -> _Handler:
    """A run of days off (連休, 三連休) placed by ``tense`` as a named period is: told
    of the past, or said to be past (「この前の連休」), the last one begun; as a plan or
    in neither tense, the current or next one; ``None``: either."""
    def handle(m: re.Match[str], today: date) -> _Dates:
        if tense is Tense.PAST or _SAID_PAST.search(m.string[max(0, m.start() - 6):m.start()]):
            return _last_holiday_run(today)
        if tense is None:
            return list(dict.fromkeys(_last_holiday_run(today) + _holiday_run(m, today)))
        return _holiday_run(m, today)
    return handle


def _named_period(tense: Tense | None) -> _Handler:
    """A named period (found in the katakana copy), placed by ``tense``."""
    def handle(m: re.Match[str], today: date) -> _Dates:
        return _occurrences(today, _period_table(today.year)[m.group(0)], tense)
    return handle


def _season(tense: Tense | None) -> _Handler:
    """A season (春 夏 秋 冬) placed by ``tense``."""
    def handle(m: re.Match[str], today: date) -> _Dates:
        return _occurrences(today, _SEASONS[m.group(1)], tense)
    return handle


def _year_period(m: re.Match[str], today: date) -> _Dates:
    """A period, season or month of the year written with it (去年のお盆)."""
    year = today.year + _YEAR_OFFSETS[next(
        y for y in _YEAR_OFFSETS if to_katakana(y) == m.group(1))]
    period, season, month = m.group(2), m.group(3), m.group(4)
    if period:
        span = _period_table(today.year)[period](year)
    elif season:
        span = _SEASONS[season](year)
    else:
        if not 1 <= int(month) <= 12:
            return []
        first, last = {to_katakana(k): v for k, v in _PART.items()}.get(m.group(5) or "",
                                                                         (1, 31))
        span = _month_span(year, int(month), first, last)
    return [span] if span else []


def _month_part(m: re.Match[str], today: date) -> _Dates:
    word, part = m.group(1), m.group(2)
    y, mo = _month_add(today, _MONTH_OFFSETS.get(word, 0))
    first, last = _PART.get(part or "", (1, 31))
    return [_month_span(y, mo, first, last)]


def _numbered_month(tense: Tense | None) -> _Handler:
    """A month by its number (8月, 3月末), placed by ``tense``."""
    def handle(m: re.Match[str], today: date) -> _Dates:
        mo = int(m.group(1))
        if not 1 <= mo <= 12:
            return []
        first, last = _PART.get(m.group(2) or "", (1, 31))
        return _occurrences(today, lambda y: _month_span(y, mo, first, last), tense)
    return handle


_DAY_OF_MONTH = r"(?<![\d月年何/.])([2-9]|[12]\d|3[01])日(?![間目後前中分曜おごずぶ以]|\d)"
"""A day of the month said alone (「19日の朝って雪降るかな」), not a count of days
(3日間, 5日目, 2日おき) and not 1日 (a day: 「1日に2回」)."""


def _day_of_month(tense: Tense | None) -> _Handler:
    """A day of the month said alone, in a month near ``today``, placed by ``tense``."""
    def handle(m: re.Match[str], today: date) -> _Dates:
        day = int(m.group(1))

        def in_month(y: int, mo: int) -> tuple[date, date] | None:
            try:
                d = date(y, mo, day)
            except ValueError:
                return None     # 31日 of a short month
            return (d, d)

        months = [(today.year + (today.month - 1 + k) // 12, (today.month - 1 + k) % 12 + 1)
                  for k in (-2, -1, 0, 1, 2)]
        days = [s for s in (in_month(y, mo) for y, mo in months) if s]
        return _placed(days, today, tense)
    return handle


def _placed(spans: list[tuple[date, date]], today: date, tense: Tense | None) -> _Dates:
    """Of some occurrences of a day: in the past tense the last begun, else the next (a
    day said alone in neither tense is one to come: 「19日って雪降るかな」); ``None``: the
    next and the last."""
    begun = [s for s in spans if s[0] <= today]
    coming = [s for s in spans if s[1] >= today]
    last = [max(begun)] if begun else []
    if tense is Tense.PAST:
        return last
    nxt = [min(coming)] if coming else []
    return list(dict.fromkeys(nxt + last)) if tense is None else nxt


def _days_from_now(m: re.Match[str], today: date) -> _Dates:
    n = int(m.group(1)) * (1 if m.group(2) == "後" else -1)
    d = today + timedelta(days=n)
    return [(d, d)]


def _start_of_next_week(m: re.Match[str], today: date) -> _Dates:
    monday = week_start(today) + timedelta(weeks=1)
    return [(monday, monday + timedelta(days=1))]


def _day_offset(m: re.Match[str], today: date) -> _Dates:
    d = today + timedelta(days=_DAY_OFFSETS[m.group(0)])
    return [(d, d)]


def _whole_week(m: re.Match[str], today: date) -> _Dates:
    monday = week_start(today) + timedelta(weeks=_WEEK_OFFSETS[m.group(0)])
    return [(monday, monday + timedelta(days=6))]


def _year(m: re.Match[str], today: date) -> _Dates:
    y = today.year + {"去年": -1, "昨年": -1, "今年": 0, "来年": 1}[m.group(0)]
    return [(date(y, 1, 1), date(y, 12, 31))]


def _bare_weekday(m: re.Match[str], today: date) -> _Dates:
    ahead = (_weekday_index(m.group(1)) - today.weekday()) % 7
    d = today + timedelta(days=ahead)
    return [(d, d)]


_BEFORE_NAMED_PERIODS: tuple[tuple[str, _Handler], ...] = (
    (r"\d{4}\s*年\s*\d{1,2}\s*月\s*\d{1,2}\s*日|(?<![\d年])\d{1,2}\s*月\s*\d{1,2}\s*日",
     _absolute),
    (rf"({_MONTH})の?(\d{{1,2}})日", _month_day),
    (rf"({_WEEK})の?{_W}", _week_day),
    (rf"(今度|次|こんど|つぎ|今週)の?{_W}", _next_day),
    (rf"(この前|この間|こないだ|前)の?{_W}", _last_day),
    (rf"({_WEEK})末", _week_end),
    (r"(この|)週末", _week_end),
    (r"()土日", _week_end),
    (r"(三|3|４|4|大型)?連休", _holiday_run),
)
"""Expressions by priority (each character is used by the first that matches it), up
to the named periods and holidays, whose pattern depends on the year."""

_MONTH_PARTS = "末|上旬|中旬|下旬|初め|頭|終わり|おわり|はじめ"
_NUMBERED_MONTH = rf"(?<![\d何])(\d{{1,2}})月の?({_MONTH_PARTS})?(?![\d曜日])"
_AFTER_NAMED_PERIODS: tuple[tuple[str, _Handler], ...] = (
    (rf"({_MONTH})の?({_MONTH_PARTS})", _month_part),
    (r"()月(末)", _month_part),
    (rf"({_MONTH})()", _month_part),
    (r"(?<![\d月])(\d{1,3})日(後|前)", _days_from_now),
    (r"来?週明け", _start_of_next_week),
    (_DAY, _day_offset),
    (_WEEK, _whole_week),
)

_NOT_FOR_MEMORY: tuple[tuple[str, _Handler], ...] = (
    (r"去年|昨年|今年|来年", _year),
    (rf"(?<!毎週)(?<!毎週の)(?<![何毎]){_W}", _bare_weekday),
)
"""Year-wide ranges and bare weekdays: last, and only for queries (see :func:`resolve`)."""


def resolve(text: str, today: date, *, for_memory: bool = False,
            tense: Tense | None = Tense.NEUTRAL) -> list[DateSpan]:
    """Date ranges ``text`` refers to, relative to ``today``, in order of appearance.

    ``for_memory`` leaves out what describes habits rather than dates (a bare
    weekday: 「毎週金曜」), year-wide ranges (今年) and seasons, which say little
    about an event. ``tense`` places named periods, seasons, numbered months
    (:func:`_occurrences`) and runs of days off (:func:`_holiday_runs`); ``None``: either
    the nearest or the last occurrence (a question about the past in neither tense,
    「冬のグループ展どこだっけ」, gets both); a year written with them wins.
    """
    placing = tense
    s = _Scanner(text)
    if not for_memory:
        s.scan(_year_period_pattern(today.year),
               functools.partial(_on_day, _year_period, today), kana=True)
    for pattern, handle in _BEFORE_NAMED_PERIODS:
        placed = _holiday_runs(placing) if handle is _holiday_run else handle
        s.scan(pattern, functools.partial(_on_day, placed, today))
    s.scan(_period_pattern(today.year),
           functools.partial(_on_day, _named_period(placing), today), kana=True)
    later: list[tuple[str, _Handler]] = [
        (_AFTER_NAMED_PERIODS[0]), (_NUMBERED_MONTH, _numbered_month(placing)),
        *_AFTER_NAMED_PERIODS[1:], *(() if for_memory else _NOT_FOR_MEMORY)]
    if not for_memory:
        later.insert(2, (_SEASON, _season(placing)))
        later.append((_DAY_OF_MONTH, _day_of_month(placing)))
    for pattern, handle in later:
        s.scan(pattern, functools.partial(_on_day, handle, today))
    return [span for _, span in _runs_of_days_named(text, sorted(s.found, key=lambda x: x[0]))]


_RUN_OF_DAYS = re.compile(r"(?:三|3|４|4|大型)?連休")


def _runs_of_days_named(text: str, found: list[tuple[int, DateSpan]],
                        ) -> list[tuple[int, DateSpan]]:
    """「海の日の連休」「去年の11月の連休」: a run of days off said of a day or a month is
    the run that day falls in, or those in that month — not the next run wherever it is."""
    out = list(found)
    for at in sorted({a for a, sp in found if _RUN_OF_DAYS.fullmatch(sp.label)}):
        before = [(a, sp) for a, sp in found if a < at and sp.label and
                  text[a + len(sp.label):at] in ("", "の")]
        if not before:
            continue
        runs = sorted({r for _, sp in before for r in long_weekends(sp.start, sp.end)})
        if not runs:
            continue
        dropped = {id(sp) for a, sp in found if a == at} | {id(sp) for _, sp in before}
        first = min(a for a, _ in before)
        label = text[first:at] + next(sp.label for a, sp in found if a == at)
        out = [(a, sp) for a, sp in out if id(sp) not in dropped]
        out.extend((first, DateSpan(start, end, label)) for start, end in runs)
    return sorted(out, key=lambda x: x[0])


def _on_day(handle: _Handler, today: date, m: re.Match[str]) -> _Dates:
    return handle(m, today)


_HABIT = re.compile(r"毎週|毎朝|毎晩|毎日|曜[日]?(?:と|、|・|や)")
_WEEKDAY_MENTION = re.compile(r"([月火水木金土日])曜")


def habit_weekdays(text: str) -> frozenset[int]:
    """Weekdays (0 = Monday) a habit happens on: 「毎週火曜と金曜の夜に」 -> {1, 4}."""
    if not _HABIT.search(text):
        return frozenset()
    return frozenset(_weekday_index(m.group(1)) for m in _WEEKDAY_MENTION.finditer(text))


_STAY = re.compile(r"から(\d{1,2})\s*(泊|日間)")
_YEAR_MONTH = re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月(?!\s*\d)")


def memory_spans(text: str, said_on: date) -> list[DateSpan]:
    """Date ranges a fact is about: its absolute dates (a stay 「から2泊」 extends the
    range), else its relative expressions resolved against when it was said (a named
    period by the fact's tense: 「元日に雑煮を食べた」 is the last 元日), else, for an
    event told in the past tense (「水族館に行った」), the day it was told (label
    ``"told"``): people tell what they did on the day or soon after."""
    dates = absolute_dates(text, said_on)
    if dates:
        stay = _STAY.search(text)
        spans = [DateSpan(d, d, "date") for d in dates]
        if stay and len(dates) == 1:
            n = int(stay.group(1)) - (1 if stay.group(2) == "日間" else 0)
            spans = [DateSpan(dates[0], dates[0] + timedelta(days=max(0, n)), "stay")]
        return spans
    months = [(int(m.group(1)), int(m.group(2))) for m in _YEAR_MONTH.finditer(text)
              if 1 <= int(m.group(2)) <= 12]
    if months:
        # 「来月（2026年7月）から」: the written month wins over the relative word
        return [DateSpan(*_month_span(y, mo), "month") for y, mo in months]
    said = tense(text)
    spans = resolve(text, said_on, for_memory=True, tense=said)
    if not spans and said is Tense.PAST and not habit_weekdays(text):
        return [DateSpan(said_on, said_on, "told")]
    return spans
