"""English dates as date ranges: what an English question asks about ("in June 2023", "on
1 May, 2022", "the first weekend of August", "last week") and when an English memory's
event happened ("I dyed my hair last week", told on 15 April 2022).

The Japanese counterpart is :mod:`omoide.memory.language.temporal`; people talk to omoide
in English too (and LoCoMo's conversations are English). Only text with no Japanese in it is
read here: :func:`is_english` decides.

- :func:`question_spans` resolves a question's dates against ``today``: a month or a
  day named without a year is its last occurrence (the next one when the question speaks
  of a plan: "will", "going to", "next").
- :func:`memory_spans_en` dates a memory against the day it was told: its relative words
  ("yesterday", "two weeks ago", "last Friday") and absolute dates, else the day it was
  told when it tells something done (past tense, as the Japanese reader does).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from datetime import date, timedelta

from omoide.memory.language.temporal import DateSpan

SAID_LABEL = "said"
"""The label of an English memory dated by the day it was told alone: that places it for
a question naming a date, but does not make it a memory that says when its event was
(:func:`omoide.memory.language.english_time.tells_when` does)."""

_JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
_LETTERS = re.compile(r"[A-Za-z]{2,}")

_MONTHS = {name: n for n, name in enumerate(
    ("january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december"), start=1)}
_MONTHS.update({"jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8,
                "sep": 9, "sept": 9, "oct": 10, "nov": 11, "dec": 12})
_M = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\b\.?"
_Y = r"(?:,?\s*(?P<year>(?:19|20)\d\d))?"
_D = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WD = r"(?P<weekday>" + "|".join(_WEEKDAYS) + r")"
_ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4,
             "4th": 4, "last": -1, "final": -1}
_ORD = r"(?P<ordinal>" + "|".join(_ORDINALS) + r")"
_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
           "seven": 7, "eight": 8, "nine": 9, "ten": 10, "couple of": 2, "a couple of": 2,
           "few": 3, "a few": 3, "several": 4}
_COUNT = r"(?P<count>\d+|" + "|".join(sorted(_COUNTS, key=len, reverse=True)) + r")"
_SEASONS = {"spring": (3, 5), "summer": (6, 8), "fall": (9, 11), "autumn": (9, 11),
            "winter": (12, 2)}
_SEASON = r"(?P<season>" + "|".join(_SEASONS) + r")"
_PART = {"beginning": (1, 10), "start": (1, 10), "early": (1, 10), "middle": (11, 20),
         "mid": (11, 20), "end": (21, 31), "late": (21, 31)}
_PARTS = r"(?P<part>" + "|".join(_PART) + r")"

_PLAN = re.compile(r"\b(?:will|going to|gonna|plan(?:s|ning)? to|next|upcoming|tomorrow)\b",
                   re.IGNORECASE)
_AS_OF = re.compile(r"\bas of\b", re.IGNORECASE)
_PAST_VERB = re.compile(
    r"\b(?:was|were|went|had|did|got|took|made|saw|came|won|bought|met|found|felt|gave|left|"
    r"told|heard|wrote|ran|began|started|finished|tried|visited|joined|spent|watched|"
    r"\w{3,}ed)\b", re.IGNORECASE)


def is_english(text: str) -> bool:
    """Whether ``text`` is read as English: letters and no Japanese at all."""
    return not _JAPANESE.search(text) and bool(_LETTERS.search(text))


def _safe(y: int, m: int, d: int) -> date | None:
    try:
        return date(y, m, d)
    except ValueError:
        return None


def _month_end(y: int, m: int) -> date:
    return date(y, m, calendar.monthrange(y, m)[1])


def _month_of(year: int | None, month: int, today: date, ahead: bool) -> tuple[int, int]:
    """The year of ``month`` when none is written: its last occurrence up to ``today``'s
    month, or the next one from it for a plan."""
    if year is not None:
        return year, month
    if ahead:
        return (today.year if month >= today.month else today.year + 1), month
    return (today.year if month <= today.month else today.year - 1), month


def _year_of(m: re.Match[str]) -> int | None:
    y = m.groupdict().get("year")
    return int(y) if y else None


def _week_of(d: date) -> tuple[date, date]:
    monday = d - timedelta(days=d.weekday())
    return monday, monday + timedelta(days=6)


_Resolver = Callable[[re.Match[str], date, bool], "DateSpan | None"]


def _day(m: re.Match[str], today: date, ahead: bool) -> DateSpan | None:
    y, mo = _month_of(_year_of(m), _MONTHS[m["month"].lower()], today, ahead)
    d = _safe(y, mo, int(m["day"]))
    return DateSpan(d, d, "date") if d else None


def _between(m: re.Match[str], today: date, ahead: bool) -> DateSpan | None:
    y, mo = _month_of(_year_of(m), _MONTHS[m["month"].lower()], today, ahead)
    mo2 = _MONTHS[(m["month2"] or m["month"]).lower()]
    a, b = _safe(y, mo, int(m["day"])), _safe(y, mo2, int(m["day2"]))
    return DateSpan(a, b, "range") if a and b and a <= b <= a + timedelta(days=62) else None


def _week_before(m: re.Match[str], today: date, ahead: bool) -> DateSpan | None:
    day = _day(m, today, ahead)
    if day is None:
        return None
    if m["which"].lower() == "before":
        return DateSpan(day.start - timedelta(days=7), day.start - timedelta(days=1), "week")
    return DateSpan(day.start + timedelta(days=1), day.start + timedelta(days=7), "week")


def _nth_week(m: re.Match[str], today: date, ahead: bool) -> DateSpan | None:
    y, mo = _month_of(_year_of(m), _MONTHS[m["month"].lower()], today, ahead)
    nth, end = _ORDINALS[m["ordinal"].lower()], _month_end(y, mo)
    raw = (m.groupdict().get("weeks") or "1").lower()
    weeks = int(raw) if raw.isdigit() else _WEEKS[raw]
    if m["unit"].lower().startswith("weekend"):
        saturdays = [d for d in (date(y, mo, 1) + timedelta(days=i) for i in range(end.day))
                     if d.weekday() == 5]
        sat = saturdays[nth - 1 if nth > 0 else -1] if len(saturdays) >= abs(nth) else None
        return DateSpan(sat, sat + timedelta(days=1), "weekend") if sat else None
    if nth > 0:
        first = date(y, mo, 1) + timedelta(days=7 * (nth - 1))
        return DateSpan(first, min(end, first + timedelta(days=7 * weeks - 1)), "week")
    return DateSpan(end - timedelta(days=7 * weeks - 1), end, "week")


def _month_part(m: re.Match[str], today: date, ahead: bool) -> DateSpan | None:
    y, mo = _month_of(_year_of(m), _MONTHS[m["month"].lower()], today, ahead)
    first, last = _PART[m["part"].lower()]
    end = _month_end(y, mo)
    return DateSpan(date(y, mo, first), min(end, date(y, mo, min(last, end.day))), "month part")


def _month(m: re.Match[str], today: date, ahead: bool) -> DateSpan | None:
    y, mo = _month_of(_year_of(m), _MONTHS[m["month"].lower()], today, ahead)
    return DateSpan(date(y, mo, 1), _month_end(y, mo), "month")


def _season_span(m: re.Match[str], today: date, ahead: bool) -> DateSpan | None:
    first, last = _SEASONS[m["season"].lower()]
    year = _year_of(m)
    if year is None:
        year = today.year if (first <= today.month or ahead) else today.year - 1
    end_year = year + 1 if last < first else year
    start, end = date(year, first, 1), _month_end(end_year, last)
    part = m.groupdict().get("part")
    if part and _PART[part.lower()][0] > 20:
        start = date(end_year, last, 1)
    elif part and _PART[part.lower()][1] <= 10:
        end = _month_end(year, first)
    return DateSpan(start, end, "season")


def _year(m: re.Match[str], today: date, ahead: bool) -> DateSpan | None:
    y = int(m["year"])
    return DateSpan(date(y, 1, 1), date(y, 12, 31), "year")


def _days_ago(m: re.Match[str], today: date, ahead: bool) -> DateSpan | None:
    raw = m["count"].lower()
    n = int(raw) if raw.isdigit() else _COUNTS[raw]
    unit = m["unit"].lower()
    if unit.startswith("day"):
        d = today - timedelta(days=n)
        return DateSpan(d, d, "days ago")
    if unit.startswith("week"):
        return DateSpan(*_week_of(today - timedelta(days=7 * n)), "weeks ago")
    if unit.startswith("month"):
        y, mo = today.year, today.month - n
        while mo < 1:
            y, mo = y - 1, mo + 12
        return DateSpan(date(y, mo, 1), _month_end(y, mo), "months ago")
    y = today.year - n
    return DateSpan(date(y, 1, 1), date(y, 12, 31), "years ago")


def _relative(m: re.Match[str], today: date, ahead: bool) -> DateSpan | None:
    word = " ".join(m[0].lower().split())
    if word in ("yesterday", "last night"):
        d = today - timedelta(days=1)
        return DateSpan(d, d, word)
    if word in ("today", "tonight", "this morning", "this afternoon", "this evening"):
        return DateSpan(today, today, word)
    if word == "tomorrow":
        d = today + timedelta(days=1)
        return DateSpan(d, d, word)
    if word == "the other day":
        return DateSpan(today - timedelta(days=7), today - timedelta(days=1), word)
    step = {"last": -1, "this past": -1, "past": -1, "this": 0, "next": 1}[word.rsplit(" ", 1)[0]]
    unit = word.rsplit(" ", 1)[1]
    if unit == "week":
        start, end = _week_of(today + timedelta(days=7 * step))
        return DateSpan(start, end, word)
    if unit == "weekend":
        return DateSpan(*_weekend(today, step, ahead), word)
    if unit == "month":
        y, mo = today.year, today.month + step
        y, mo = (y - 1, 12) if mo < 1 else (y + 1, 1) if mo > 12 else (y, mo)
        return DateSpan(date(y, mo, 1), _month_end(y, mo), word)
    y = today.year + step
    return DateSpan(date(y, 1, 1), date(y, 12, 31), word)


def _weekend(today: date, step: int, ahead: bool) -> tuple[date, date]:
    """"last weekend": the last Saturday and Sunday before this week's; "this weekend"
    told of the past: the latest one begun; of a plan, or "next weekend": the coming one."""
    latest = today - timedelta(days=(today.weekday() - 5) % 7)   # Saturday, on or before
    if step < 0:
        sat = latest - timedelta(days=7) if today.weekday() >= 5 else latest
    elif step == 0 and not ahead:
        sat = latest
    else:
        sat = latest + timedelta(days=7)
    return sat, sat + timedelta(days=1)


def _weekday(m: re.Match[str], today: date, ahead: bool) -> DateSpan | None:
    target = _WEEKDAYS.index(m["weekday"].lower())
    which = (m["which"] or "").lower()
    if which == "next" or (which != "last" and ahead):
        d = today + timedelta(days=(target - today.weekday() - 1) % 7 + 1)
        if which == "next" and d - today < timedelta(days=2):
            d += timedelta(days=7)
    else:
        d = today - timedelta(days=(today.weekday() - target - 1) % 7 + 1)
    return DateSpan(d, d, "weekday")


_UNIT = r"(?P<unit>days?|weeks?|months?|years?)"
_WEEKS = {"two": 2, "three": 3}
# most specific first: a text position taken by one is not read again by a later one
_PATTERNS: tuple[tuple[re.Pattern[str], _Resolver], ...] = tuple(
    (re.compile(p, re.IGNORECASE), f) for p, f in (
        (rf"\bbetween {_M}\s+{_D}\s+and\s+(?:(?P<month2>"
         + "|".join(_MONTHS) + rf")\s+)?(?P<day2>[0-3]?\d)(?:st|nd|rd|th)?{_Y}", _between),
        (rf"\bthe week (?P<which>before|after)\s+{_D}\s+(?:of\s+)?{_M}{_Y}", _week_before),
        (rf"\bthe week (?P<which>before|after)\s+{_M}\s+{_D}\b{_Y}", _week_before),
        (rf"\b(?:the\s+)?{_ORD}\s+(?:(?P<weeks>\d|two|three)\s+)?(?P<unit>weekend|weeks?)\s+"
         rf"(?:of|in)\s+{_M}{_Y}", _nth_week),
        (rf"\b(?:the\s+)?{_PARTS}\s+(?:of\s+)?{_SEASON}{_Y}", _season_span),
        (rf"\b(?:the\s+)?{_PARTS}\s+(?:of\s+)?{_M}{_Y}", _month_part),
        (rf"\b{_M}\s+{_D}\b{_Y}", _day),
        (rf"\b{_D}\s+(?:of\s+)?{_M}{_Y}", _day),
        (rf"\b{_SEASON}\s+(?:of\s+)?(?P<year>(?:19|20)\d\d)\b", _season_span),
        (rf"\b{_M}{_Y}", _month),
        (r"\b(?:in|during|of)\s+(?P<year>(?:19|20)\d\d)\b", _year),
        (rf"\b{_COUNT}\s+{_UNIT}\s+ago\b", _days_ago),
        (r"\b(?:yesterday|last night|today|tonight|tomorrow|the other day|"
         r"this (?:morning|afternoon|evening)|"
         r"(?:last|this past|past|this|next)\s+(?:week|weekend|month|year))\b", _relative),
        (rf"\b(?:(?P<which>last|next|this|on)\s+)?{_WD}\b", _weekday),
    ))


def _spans(text: str, today: date, ahead: bool) -> list[DateSpan]:
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, DateSpan]] = []
    for pattern, resolve_one in _PATTERNS:
        for m in pattern.finditer(text):
            if any(m.start() < b and a < m.end() for a, b in taken):
                continue
            if resolve_one is _month and m["month"].lower() == "may" and not m["year"] \
                    and not re.search(r"\b(?:in|during|of|since|early|late)\s+$",
                                      text[:m.start()], re.IGNORECASE):
                continue   # "may" the verb
            span = resolve_one(m, today, ahead)
            if span is not None:
                taken.append((m.start(), m.end()))
                found.append((m.start(), span))
    return [s for _, s in sorted(found, key=lambda x: x[0])]


def question_spans(text: str, today: date) -> list[DateSpan]:
    """The date ranges an English question asks about, resolved against ``today``
    ("as of December" asks about a state, not a time: no range); a weekend asked about
    begins on its Friday (what was done on Friday evening is the weekend's). Empty for
    text that is not English."""
    if not is_english(text) or _AS_OF.search(text):
        return []
    return [DateSpan(s.start - timedelta(days=1), s.end, s.label)
            if "weekend" in s.label else s
            for s in _spans(text, today, ahead=bool(_PLAN.search(text)))]


def memory_spans_en(text: str, said_on: date) -> list[DateSpan]:
    """When an English memory's event happened, from the day it was told: its own date
    words, else that day (label ``"told"``) when it tells something done. Empty for text
    that is not English, or that tells no event."""
    if not is_english(text):
        return []
    spans = _spans(text, said_on, ahead=bool(_PLAN.search(text)))
    if spans:
        return spans
    if _PAST_VERB.search(text):
        return [DateSpan(said_on, said_on, SAID_LABEL)]
    return []
