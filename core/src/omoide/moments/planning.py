"""Planning: the moments a person's current memories call for.

Only memories that hold now are read: a plan that was moved or called off is replaced by
the newer memory (:meth:`omoide.memory.index.person_index.UserIndex.validity`, which reads
both the links extraction wrote and the changes the newer memory says), so its old date
plans nothing. A memory that itself says a plan was called off plans nothing either.

- a dated plan (``kind`` plan or event, a date to come): the day before (from noon of
  the day before until midnight), the morning of (07:00-12:00), and a follow-up the first
  time the person talks in the week after its last day;
- a birthday in memory (「あなたの息子の颯太の誕生日は11月14日」): the day before, every year;
- a reminder the person asked for (「毎朝8時に薬を飲むので声をかけてほしい」): each day at
  that time, for an hour.

Windows are in the household's zone; quiet hours and the daily limit are the
delivery's business, not the plan's.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from datetime import date, datetime, time, timedelta
from typing import Protocol
from zoneinfo import ZoneInfo

from omoide.memory.facts.profile import is_past, last_clause
from omoide.memory.facts.validity import changes_in
from omoide.memory.index.person_index import UserIndex
from omoide.moments.model import Moment, MomentKind
from omoide.types import Memory

PLAN_KINDS = frozenset({"plan", "event", "episodic"})
FOLLOW_UP_DAYS = 7
DAY_BEFORE_FROM = time(12, 0)
MORNING = (time(7, 0), time(12, 0))
REMINDER_MINUTES = 60

_SELF = frozenset({"あなた", "あなた自身", "自分"})
_BIRTHDAY = re.compile(r"(?:あなたの)?([^、。はが]{1,16}?)の誕生日(?:は|が)")
_REMIND_ASKED = re.compile(r"声をかけ|知らせ|教えて|リマインド|言って|思い出させ|促し")
_CLOCK = re.compile(r"(午前|午後|朝|夜|晩)?(\d{1,2})時(半|(\d{1,2})分)?")
_TOPIC = re.compile(r"([^\s、。はがをにへでと（）()]{1,12}?)(?:[へに]?旅行|への|に行|へ行|[にへ]帰|"
                    r"で(?:の)?[^、。]{0,6}予定|に出かけ|に遊びに)")
_DATE_NOTE = re.compile(r"（[^）]*）|\([^)]*\)")


class MemorySource(Protocol):
    """Where the planner reads a person's memories and which of them were replaced."""

    async def current_memories(self, person: str) -> list[Memory]:
        """``person``'s memories that hold now (none replaced by a newer one)."""
        ...


class IndexedEngine(Protocol):
    async def index(self, user: str) -> UserIndex: ...


class EngineMemories:
    """The running memory engine's per-person indexes (``MemoryEngine.index``)."""

    def __init__(self, engine: IndexedEngine) -> None:
        self._engine = engine

    async def current_memories(self, person: str) -> list[Memory]:
        index = await self._engine.index(person)
        return current_of(index.memories(), index.validity())


class ListedMemories:
    """Memories handed over as a list (a simulation, an import): indexed here to read
    which were replaced."""

    def __init__(self, timezone: str) -> None:
        self.timezone = timezone
        self.memories: dict[str, list[Memory]] = {}
        self._current: dict[str, tuple[int, list[Memory]]] = {}

    def add(self, memory: Memory) -> None:
        self.memories.setdefault(memory.user, []).append(memory)

    async def current_memories(self, person: str) -> list[Memory]:
        mine = self.memories.get(person, [])
        cached = self._current.get(person)
        if cached is None or cached[0] != len(mine):
            index = UserIndex(person, self.timezone)
            for memory in mine:
                index.add(memory)
            cached = (len(mine), current_of(index.memories(), index.validity()))
            self._current[person] = cached
        return list(cached[1])


def current_of(memories: Sequence[Memory], replaced: Collection[str]) -> list[Memory]:
    return [m for m in memories if m.superseded_by is None and m.id not in replaced]


def plan_moments(person: str, memories: Sequence[Memory], now: datetime,
                 zone: ZoneInfo) -> list[Moment]:
    """Every moment ``memories`` call for whose window has not closed by ``now``,
    ordered by when each window opens."""
    today = now.astimezone(zone).date()
    out: list[Moment] = []
    for memory in memories:
        if memory.kind in PLAN_KINDS and memory.event_dates:
            out += _plan_moments(person, memory, today, zone)
        if _BIRTHDAY.search(memory.text) and memory.event_dates:
            out += _birthday_moments(person, memory, today, zone)
        if _REMIND_ASKED.search(memory.text) and _CLOCK.search(memory.text):
            out += _reminder_moments(person, memory, today, zone)
    return sorted((m for m in out if m.ends > now), key=lambda m: (m.starts, m.key))


def _at(day: date, clock: time, zone: ZoneInfo) -> datetime:
    return datetime.combine(day, clock, tzinfo=zone)


def _still_to_come(memory: Memory, first: date, said: datetime) -> bool:
    """Whether the memory was a plan when it was told: its day was still to come
    (「来月の14日に予約した」), or it was that day and not told as done (「今日箱根に
    行く」, not 「今日歯医者に行った」). What someone told after it happened asks for no
    follow-up: they already said how it went."""
    if first > said.date():
        return True
    return first == said.date() and not is_past(last_clause(memory.text))


def _plan_moments(person: str, memory: Memory, today: date, zone: ZoneInfo) -> list[Moment]:
    if any(c.kind == "cancelled" for c in changes_in(memory.text)):
        return []
    first, last = min(memory.event_dates), max(memory.event_dates)
    said = memory.created_at.astimezone(zone)
    if last < today - timedelta(days=FOLLOW_UP_DAYS) or not _still_to_come(memory, first,
                                                                             said):
        return []
    topic = topic_of(memory)
    windows = (
        (MomentKind.DAY_BEFORE, _at(first - timedelta(days=1), DAY_BEFORE_FROM, zone),
         _at(first, time(0), zone), first),
        (MomentKind.MORNING_OF, _at(first, MORNING[0], zone), _at(first, MORNING[1], zone),
         first),
        (MomentKind.FOLLOW_UP, _at(last + timedelta(days=1), time(0), zone),
         _at(last + timedelta(days=1 + FOLLOW_UP_DAYS), time(0), zone), last),
    )
    return [Moment(f"{memory.id}:{kind.value}", person, kind, max(starts, said), ends,
                   about, topic, (memory.id,), (memory.text,))
            for kind, starts, ends, about in windows if ends > said]


def _birthday_moments(person: str, memory: Memory, today: date,
                      zone: ZoneInfo) -> list[Moment]:
    match = _BIRTHDAY.search(memory.text)
    assert match is not None
    if match.group(1) in _SELF:
        return []   # their own birthday: not something to remind them of
    born = min(memory.event_dates)
    out = []
    for year in (today.year, today.year + 1):
        try:
            day = born.replace(year=year)
        except ValueError:  # 29 February in a common year: the 28th
            day = date(year, 2, 28)
        out.append(Moment(f"{memory.id}:{MomentKind.BIRTHDAY.value}:{year}", person,
                          MomentKind.BIRTHDAY, _at(day - timedelta(days=1), MORNING[0], zone),
                          _at(day, time(0), zone), day, match.group(1), (memory.id,),
                          (memory.text,)))
    return out


def reminder_clock(text: str) -> time | None:
    """The time of day a reminder names (「毎朝8時」 08:00, 「夜9時半」 21:30)."""
    m = _CLOCK.search(text)
    if m is None:
        return None
    hour = int(m.group(2))
    minute = 30 if m.group(3) == "半" else int(m.group(4) or 0)
    if m.group(1) in ("午後", "夜", "晩") and hour < 12:
        hour += 12
    if hour > 23 or minute > 59:
        return None
    return time(hour, minute)


def _reminder_moments(person: str, memory: Memory, today: date,
                      zone: ZoneInfo) -> list[Moment]:
    clock = reminder_clock(memory.text)
    if clock is None:
        return []
    said = memory.created_at.astimezone(zone)
    out = []
    for day in (today - timedelta(days=1), today, today + timedelta(days=1)):
        starts = _at(day, clock, zone)   # yesterday's 23:30 is still due at 00:10
        if starts < said:
            continue
        out.append(Moment(f"{memory.id}:{MomentKind.REMINDER.value}:{day.isoformat()}",
                          person, MomentKind.REMINDER, starts,
                          starts + timedelta(minutes=REMINDER_MINUTES), day,
                          _habit_of(memory.text), (memory.id,), (memory.text,)))
    return out


def topic_of(memory: Memory) -> str:
    """The few words a plan's line is about: its first named entity (箱根), else the
    place or thing its text names before 旅行 / に行く, else the text itself."""
    if memory.entities:
        return memory.entities[0]
    text = _DATE_NOTE.sub("", memory.text)
    m = _TOPIC.search(text)
    if m:
        return m.group(1)
    text = re.sub(r"^あなた(?:は|が)、?", "", text)
    for chunk in text.split("、"):
        found = _OBJECT.match(chunk)
        if found:
            return _WHEN_FIRST.sub("", found.group(1))
    return text.rstrip("。")[:24]


_OBJECT = re.compile(r"^(.{2,30}?)(?:を|が|は)")
"""The first thing a clause is about: 「颯太の保育園の運動会が…」 -> 颯太の保育園の運動会."""
_WHEN_FIRST = re.compile(r"^.*?(?:日|週|月|年|曜|時|朝|夜)(?:まで)?(?:に|から|は)")
"""A time said before it (「来週の金曜日までに工作で使う牛乳パック」)."""


def _habit_of(text: str) -> str:
    """「毎朝8時に薬を飲む…」 -> 「薬を飲む」 (what the reminder is for)."""
    m = re.search(r"時(?:半|\d{1,2}分)?に([^、。]{1,16}?)(?:ので|から|のを|こと|。|、|$)", text)
    return m.group(1) if m else "いつものこと"
