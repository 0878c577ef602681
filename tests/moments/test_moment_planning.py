"""Planning reads a person's current memories: the day before and the morning of a plan,
a follow-up after it, a birthday the day before every year, a reminder asked for."""

from __future__ import annotations

from datetime import date, datetime, time
from zoneinfo import ZoneInfo

import pytest

from omoide.moments.model import MomentKind
from omoide.moments.planning import ListedMemories, plan_moments, reminder_clock, topic_of
from omoide.types import Memory

ZONE = ZoneInfo("Asia/Tokyo")
NOW = datetime(2026, 12, 7, 9, 0, tzinfo=ZONE)


def _plan(mid: str, text: str, day: date, told: datetime = datetime(2026, 12, 1, tzinfo=ZONE),
          entities: tuple[str, ...] = ()) -> Memory:
    return Memory(mid, "aki", text, told, (day,), "plan", entities)


def test_a_plan_gives_the_day_before_the_morning_of_and_a_follow_up() -> None:
    plan = _plan("m1", "あなたは12月12日に箱根へ旅行する予定だ。", date(2026, 12, 12))
    moments = plan_moments("aki", [plan], NOW, ZONE)
    assert [(m.kind, m.starts, m.ends) for m in moments] == [
        (MomentKind.DAY_BEFORE, datetime(2026, 12, 11, 12, tzinfo=ZONE),
         datetime(2026, 12, 12, tzinfo=ZONE)),
        (MomentKind.MORNING_OF, datetime(2026, 12, 12, 7, tzinfo=ZONE),
         datetime(2026, 12, 12, 12, tzinfo=ZONE)),
        (MomentKind.FOLLOW_UP, datetime(2026, 12, 13, tzinfo=ZONE),
         datetime(2026, 12, 20, tzinfo=ZONE))]
    assert {m.topic for m in moments} == {"箱根"} and moments[0].reasons == ("m1",)
    assert not moments[-1].pushable   # a follow-up waits for the person to talk


async def test_a_moved_plan_keeps_only_its_new_date() -> None:
    source = ListedMemories("Asia/Tokyo")
    source.add(_plan("old", "あなたは12月12日（土）に娘の運動会を見に行く予定だ。",
                     date(2026, 12, 12), entities=("運動会",)))
    source.add(_plan("new", "あなたは、娘の運動会が雨のため12月19日（土）に延期になったと"
                     "知らされた。", date(2026, 12, 19), datetime(2026, 12, 6, tzinfo=ZONE),
                     ("運動会",)))
    moments = plan_moments("aki", await source.current_memories("aki"), NOW, ZONE)
    assert {(m.reasons, m.about) for m in moments} == {(("new",), date(2026, 12, 19))}


async def test_a_cancelled_plan_plans_nothing() -> None:
    source = ListedMemories("Asia/Tokyo")
    source.add(_plan("trip", "あなたは12月10日に軽井沢旅行へ行く予定だ。", date(2026, 12, 10),
                     entities=("軽井沢",)))
    source.add(Memory("off", "aki", "あなたは仕事の都合で、軽井沢旅行をキャンセルした。",
                      datetime(2026, 12, 5, tzinfo=ZONE), (), "plan", ("軽井沢",)))
    assert plan_moments("aki", await source.current_memories("aki"), NOW, ZONE) == []


def test_a_plan_told_late_opens_its_window_when_it_was_told() -> None:
    told = datetime(2026, 12, 11, 20, tzinfo=ZONE)
    plan = _plan("m1", "あなたは明日（2026年12月12日）箱根へ行く予定だ。", date(2026, 12, 12),
                 told)
    day_before = plan_moments("aki", [plan], told, ZONE)[0]
    assert day_before.kind is MomentKind.DAY_BEFORE and day_before.starts == told


def test_a_birthday_is_said_the_day_before_every_year() -> None:
    birthday = Memory("b1", "aki", "あなたの息子の颯太の誕生日は11月14日で、今年で2歳になる。",
                      datetime(2026, 3, 1, tzinfo=ZONE), (date(2026, 11, 14),),
                      "profile_family")
    [moment] = plan_moments("aki", [birthday], NOW, ZONE)
    assert moment.kind is MomentKind.BIRTHDAY and moment.topic == "息子の颯太"
    assert moment.starts == datetime(2027, 11, 13, 7, tzinfo=ZONE)
    assert moment.key == "b1:birthday:2027"


def test_a_reminder_asked_for_comes_each_day_at_its_time() -> None:
    habit = Memory("r1", "aki",
                   "あなたは毎晩21時半に薬を飲むので、その時間に声をかけてほしいと頼んだ。",
                   datetime(2026, 12, 1, tzinfo=ZONE), (), "habit")
    moments = plan_moments("aki", [habit], NOW, ZONE)
    assert [(m.key, m.starts.time(), m.topic) for m in moments] == [
        ("r1:reminder:2026-12-07", time(21, 30), "薬を飲む"),
        ("r1:reminder:2026-12-08", time(21, 30), "薬を飲む")]


def test_a_habit_nobody_asked_to_be_reminded_of_plans_nothing() -> None:
    habit = Memory("r1", "aki", "あなたは毎朝7時に散歩する。", datetime(2026, 12, 1, tzinfo=ZONE),
                   (), "habit")
    assert plan_moments("aki", [habit], NOW, ZONE) == []


def test_reminder_clocks_read_the_time_of_day() -> None:
    assert reminder_clock("毎朝8時に") == time(8, 0)
    assert reminder_clock("夜9時半に") == time(21, 30)
    assert reminder_clock("午後3時15分に") == time(15, 15)
    assert reminder_clock("いつでも") is None


@pytest.mark.parametrize(("text", "topic"), [
    ("あなたは、颯太の保育園の運動会が園庭の工事のため来週の土曜日（2027年10月9日）に延期に"
     "なったと知らされた。", "颯太の保育園の運動会"),
    ("あなたは来月の14日（2027年10月14日）に、颯太のインフルエンザの予防接種を小児科で予約した。",
     "颯太のインフルエンザの予防接種"),
    ("あなたは小島先生から、来週の金曜日（2027年10月1日）までに工作で使う牛乳パックを3本持って"
     "くるよう言われた。", "工作で使う牛乳パック"),
    ("あなたは来月の2日（2027年1月2日）から2泊で、家族で横手の実家に帰る予定だ。", "横手の実家"),
])
def test_a_plan_without_named_entities_is_about_what_its_text_names(text: str,
                                                                    topic: str) -> None:
    assert topic_of(Memory("m", "aki", text, NOW)) == topic


def test_a_late_evening_reminder_is_still_due_just_after_midnight() -> None:
    habit = Memory("r1", "aki", "あなたは毎晩23時半に薬を飲むので、声をかけてほしいと頼んだ。",
                   datetime(2026, 12, 1, tzinfo=ZONE), (), "habit")
    after_midnight = datetime(2026, 12, 8, 0, 10, tzinfo=ZONE)
    [due] = [m for m in plan_moments("aki", [habit], after_midnight, ZONE)
             if m.open_at(after_midnight)]
    assert due.key == "r1:reminder:2026-12-07"


@pytest.mark.parametrize(("text", "day", "told", "plans"), [
    ("あなたは昨日（12月6日）歯医者に行った。", date(2026, 12, 6), datetime(2026, 12, 7, 9,
                                                                    tzinfo=ZONE), False),
    ("あなたは今日（12月7日）歯医者に行った。", date(2026, 12, 7), datetime(2026, 12, 7, 18,
                                                                    tzinfo=ZONE), False),
    ("あなたは今日（12月7日）夕方に歯医者に行く。", date(2026, 12, 7), datetime(2026, 12, 7, 8,
                                                                       tzinfo=ZONE), True),
    ("あなたは12月14日に歯医者の予約を入れた。", date(2026, 12, 14), datetime(2026, 12, 7, 8,
                                                                     tzinfo=ZONE), True),
])
def test_only_what_was_still_to_come_when_told_is_followed_up(
        text: str, day: date, told: datetime, plans: bool) -> None:
    memory = Memory("m", "aki", text, told, (day,), "event", ("歯医者",))
    assert bool(plan_moments("aki", [memory], told, ZONE)) is plans


def test_their_own_birthday_is_no_reminder() -> None:
    own = Memory("b", "aki", "あなたの誕生日は12月20日だ。", NOW, (date(2026, 12, 20),),
                 "profile_basics")
    assert plan_moments("aki", [own], NOW, ZONE) == []
