"""Regional speech read as the standard forms recall knows: the progressive ～とる /
～どる / しよる, and the copula や of 「どこやっけ」; a verb 取る or やる is left alone."""

from __future__ import annotations

from datetime import datetime

import pytest

from omoide.memory.engine import MemoryEngine
from omoide.memory.facts.validity import asked_slot, slot_key
from omoide.memory.language.regional_forms import standard_forms
from omoide.memory.recall.robust.query import prepare


@pytest.mark.parametrize(("said", "standard"), [
    ("今住んどるとこ、どこやっけ", "今住んでいるとこ、どこだっけ"),
    ("今もランニングしよる？", "今もランニングしている？"),
    ("昔何の仕事しとったかね", "昔何の仕事していたかね"),
    ("図書館まで何で行っとる？", "図書館まで何で行っている？"),
    ("私って何型やったっけ", "私って何型だったっけ"),
    ("電話しとります", "電話しています"),
])
def test_regional_forms_are_read_in_their_standard_form(said: str, standard: str) -> None:
    assert standard_forms(said) == standard


@pytest.mark.parametrize("said", ["写真とる", "宿題やった？", "ちょっと待っとって"])
def test_verbs_that_only_look_regional_are_left_alone(said: str) -> None:
    assert standard_forms(said) == said


def test_a_slot_is_heard_through_regional_speech_and_the_recognisers_spaces() -> None:
    now = datetime(2026, 11, 27, 21)
    assert prepare("今住んどるとこ、どこやっけ", now).slot == ((), "residence")
    assert prepare("図書館まで何で行っとる？", now).slot == ((), "commute")
    assert asked_slot("東京まで何で行く？") is None          # a trip's way, not a habit's


def test_starting_a_job_or_deciding_to_move_to_one_fills_the_job() -> None:
    assert slot_key("あなたは今日から香椎の病院の検査科で働き始めた。") == ((), "job")
    assert slot_key("あなたは市役所で働き始め、毎日忙しい。") == ((), "job")
    assert slot_key("あなたは4月から香椎の病院に転職することにした。") == ((), "job")
    assert slot_key("あなたは昔、中学校で社会の先生をしていた。") == ((), "job")   # held once


def test_how_a_thing_of_theirs_stands_now_is_personal_but_the_time_now_is_not() -> None:
    now = datetime(2026, 11, 27, 21)
    assert "still" in prepare("読み聞かせ、今は何曜？", now).intent.markers
    assert not prepare("今は何時？", now).intent.personal


def test_the_end_of_a_month_is_its_last_days() -> None:
    [span] = prepare("3月の終わりって何しとったっけ", datetime(2026, 11, 27, 21)).spans
    assert (span.start.isoformat(), span.days) == ("2026-03-25", 7)


def test_what_one_was_doing_in_a_period_is_asked_in_any_aspect() -> None:
    now = datetime(2026, 11, 27, 21)
    for said in ("GWは何しとった？", "GWは何していた？", "GWは何してた？"):
        assert prepare(said, now).intent.recall, said


async def test_the_home_asked_in_regional_speech_is_the_one_moved_to(engine_told) -> None:  # type: ignore[no-untyped-def]
    told: MemoryEngine = await engine_told({
        "old_home": ("2025-12-03", "あなたは福岡市南区の大橋のアパートに一人で住んでいる。"),
        "moved": ("2026-03-28", "あなたは今日、福岡市東区の香椎のマンションに引っ越した。"),
        "wedding": ("2026-10-18", "あなたは昨日、東京で由紀さんの結婚式に出て、スピーチをした。"),
    }, profile={"enabled": False})
    got = await told.recall("me", "今住んどるとこ、どこやっけ", datetime.fromisoformat(
        "2026-11-27T21:00:00+09:00"))
    assert [r.memory.id for r in got.memories][:1] == ["moved"]


# -- before a change, however far back ----------------------------------------------------
JOBS = {
    "konbini": ("2025-12-03", "あなたは土日に長町のコンビニでアルバイトをしている。"),
    "bakery": ("2026-02-28", "あなたは3月から大学に入るまで、近所のパン屋でアルバイトを始めた。"),
    "izakaya": ("2026-04-20", "あなたは吉祥寺の居酒屋でアルバイトを始めた。週3回働いている。"),
    "tutor": ("2026-09-05", "あなたは9月末で居酒屋のバイトをやめて、10月から個別指導塾で講師の"
                            "バイトをすることにした。"),
    "dorm": ("2026-03-29", "あなたは今日、東京の三鷹にある大学の学生寮「武蔵野寮」に入った。"),
    "flat": ("2026-10-03", "あなたは今日、高円寺のワンルームのアパートに引っ越した。"),
}


def test_part_time_jobs_and_a_dormitory_fill_the_job_and_the_home() -> None:
    assert {k: slot_key(text) for k, (_, text) in JOBS.items()} == {
        "konbini": ((), "job"), "bakery": ((), "job"), "izakaya": ((), "job"),
        "tutor": ((), "job"), "dorm": ((), "residence"), "flat": ((), "residence")}


async def test_asked_about_before_brings_the_whole_chain_the_nearest_first(engine_told) -> None:  # type: ignore[no-untyped-def]
    told: MemoryEngine = await engine_told(JOBS, profile={"enabled": False})
    now = datetime.fromisoformat("2026-11-24T22:00:00+09:00")
    got = [r.memory.id for r in (await told.recall("me", "前はどこでバイトしてたっけ", now)).memories]
    assert got == ["izakaya", "bakery", "konbini"]
    got = [r.memory.id for r in (await told.recall("me", "前住んでた寮の名前なんだっけ", now)).memories]
    assert got[:1] == ["dorm"]
    now_job = [r.memory.id for r in (await told.recall("me", "今どこでバイトしてるっけ", now)).memories]
    assert now_job[:1] == ["tutor"]


# -- still, from now ---------------------------------------------------------------------
def test_a_weekday_asked_of_what_still_goes_on_is_its_habit_not_a_date() -> None:
    q = prepare("スマホ教室、今も木曜け？", datetime(2027, 2, 27, 19))
    assert "still" in q.intent.markers and q.spans == ()
    assert "still" in prepare("パート、今何曜日に入ってるんやったっけ",
                              datetime(2027, 2, 27, 19)).intent.markers


async def test_a_thing_put_back_replaces_how_it_was_kept(engine_told) -> None:  # type: ignore[no-untyped-def]
    told: MemoryEngine = await engine_told({
        "decaf": ("2026-03-24", "あなたは授乳中なので、コーヒーはデカフェにしている。"),
        "back": ("2026-11-02", "あなたは卒乳したので、コーヒーを普通のものに戻した。"),
    }, profile={"enabled": False})
    got = await told.recall("me", "コーヒーってまだデカフェにしてるんやったっけ",
                            datetime.fromisoformat("2027-02-26T21:00:00+09:00"))
    assert [r.memory.id for r in got.memories][:1] == ["back"]
