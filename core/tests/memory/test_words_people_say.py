"""Words as people say them, met with the words the memories were written in: a compound
said short (健診 for 健康診断), a sided body part said bare (膝 for 右膝); a question
about one's own people (弟の…, 亜紀ちゃんの…) or whether something still goes on (まだ…)
is about the speaker's life, not the world; 何も and なんか ask nothing; 最後に and
初めて are times, not things; a short period named in the past (去年のクリスマス) brings
what happened then before what merely shares a word; a day of the month said alone is a
day, and the weather asked of a day brings the plan of that day.

Runs over the test doubles (hash embedder, in-memory store): the dense channel says
little here, so each case rests on the words and dates the engine reads.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from omoide.memory.engine import MemoryEngine
from omoide.memory.language.lexicon import analyzer
from omoide.memory.language.temporal import resolve
from omoide.memory.language.tense import Tense
from omoide.memory.recall.intent import detect

from .conftest import recalled

JST = ZoneInfo("Asia/Tokyo")
NOW = datetime(2027, 9, 29, 21, 0, tzinfo=JST)
MEMORIES = {
    "thesis": ("2027-01-15", "あなたは今日、卒業論文「大正期の雑誌広告と読者」を提出した。"),
    "checkup": ("2026-10-29", "あなたは今日、健康診断を受け、医者にお酒を控えるように言われた。"),
    "knee": ("2027-06-02", "あなたは今日、右膝が痛むので整形外科で注射を受けた。"),
    "brother_birthday": ("2026-11-02", "あなたの弟の誕生日は11月20日だ。"),
    "aki_wedding": ("2027-08-01", "あなたはいとこの亜紀ちゃんの結婚式に10月9日に出る予定だ。"),
    "bookshop_job": ("2026-10-07", "あなたは古本屋「青窓堂」で週3回アルバイトをしている。"),
    "bookshop_quit": ("2027-02-14", "あなたは今日で青窓堂のアルバイトを辞めた。"),
    "koro_vet": ("2027-09-01", "あなたは今日、コロを動物病院に連れて行き、腎臓の薬をもらった。"),
    "cafe_1": ("2026-10-17", "あなたは今日、友達と喫茶店「ミルテ」に行き、ナポリタンを食べた。"),
    "cafe_thesis": ("2027-01-13", "あなたは今日、ミルテで卒論の最後の仕上げをした。"),
    "cafe_last": ("2027-08-28", "あなたは今日、美咲を案内して、ミルテでナポリタンを食べた。"),
    "xmas_gifts": ("2026-12-25", "あなたはクリスマスに、陽菜に自転車を、蓮にレゴをプレゼントした。"),
    "cooking_1": ("2026-10-30", "あなたはちらし寿司を子どもたちと作った。"),
    "cooking_2": ("2027-04-11", "あなたは昨日、シチューを子どもたちと作った。"),
    "cooking_3": ("2027-09-10", "あなたは昨日、餃子を子どもたちと作った。"),
    "drawing": ("2026-11-26", "あなたは昨日、子どもたちとお絵かきをした。"),
}


ENGINE_CONFIG = {"profile": {"enabled": False}}
"""The configuration of the ``engine`` fixture (conftest), told ``MEMORIES``."""


def keys_of(text: str) -> set[str]:
    return {k for t in analyzer().analyse(text, query=False).terms for k in t.keys}


# -- words said short or bare ---------------------------------------------------------------
def test_a_compound_of_two_words_is_also_the_word_it_is_clipped_to() -> None:
    assert "卒論" in keys_of("卒業論文を提出した。")
    assert "健診" in keys_of("健康診断を受けた。")
    assert "就活" in keys_of("就職活動を始めた。")
    assert "定演" in keys_of("12月20日の定期演奏会に出る。")   # two words and a suffix


def test_a_sided_body_part_is_also_the_part() -> None:
    assert {"膝", "ヒザ"} <= keys_of("右膝が痛む。")
    assert {"肩", "カタ"} <= keys_of("左肩を痛めた。")
    assert "折" not in keys_of("交差点で右折した。")   # read ウセツ: not right + something


async def test_a_clipped_word_recalls_the_memory_written_in_full(engine: MemoryEngine) -> None:
    assert "checkup" in await recalled(engine, "健診の日って何言われたんだっけ", NOW)


async def test_a_remark_about_the_knee_brings_the_right_knee(engine: MemoryEngine) -> None:
    assert "knee" in await recalled(engine, "膝がまた痛くなってきたなあ", NOW)


# -- whose life a question is about -------------------------------------------------------
@pytest.mark.parametrize("text", ["コロが朝から何も食べんのよ", "コロがなんか元気ないんだわ",
                                  "誰か来た？"])
def test_nothing_someone_and_somehow_ask_nothing(text: str) -> None:
    intent = detect(text)
    assert not intent.wh and not intent.general


@pytest.mark.parametrize("text", ["弟の誕生日何日？", "母さんの手術いつ？", "亜紀ちゃんの式、何日？"])
def test_a_question_about_ones_own_people_is_personal(text: str) -> None:
    intent = detect(text)
    assert intent.personal and not intent.general


@pytest.mark.parametrize("text", ["母の日っていつだっけ", "父の日何日？", "孫悟空って誰"])
def test_a_holiday_or_a_hero_named_after_kin_stays_about_the_world(text: str) -> None:
    assert not detect(text).personal


async def test_a_question_about_a_cousin_by_name_recalls_her_plan(engine: MemoryEngine) -> None:
    assert "aki_wedding" in await recalled(engine, "亜紀ちゃんの式、何日？", NOW)


async def test_whether_it_still_goes_on_brings_the_memory_that_ended_it(
        engine: MemoryEngine) -> None:
    assert detect("青窓堂ってまだ行ってるっけ").personal
    assert not detect("青窓堂ってまだ行ってるっけ").thing_named
    assert "bookshop_quit" in await recalled(engine, "青窓堂ってまだ行ってるっけ", NOW)


# -- times in the question ---------------------------------------------------------------
async def test_the_last_visit_is_the_latest_not_one_saying_last(engine: MemoryEngine) -> None:
    got = await recalled(engine, "ミルテに最後に行ったのいつだっけ", NOW)
    assert got and got[0] == "cafe_last"


async def test_a_short_period_named_brings_what_happened_then_first(
        engine: MemoryEngine) -> None:
    got = await recalled(engine, "去年のクリスマス、子どもたちに何あげたっけ", NOW)
    assert got and got[0] == "xmas_gifts"


# -- a day of the month, and the weather of a day with a plan -----------------------------
def test_a_day_of_the_month_said_alone_is_the_next_unless_told_in_the_past() -> None:
    today = NOW.date()   # 2027-09-29
    assert [s.start.isoformat() for s in resolve("5日って寒くなるかな", today)] == ["2027-10-05"]
    assert [s.start.isoformat() for s in resolve("19日に何したっけ", today, tense=Tense.PAST)] \
        == ["2027-09-19"]
    assert resolve("3日間休んだ", today) == [] and resolve("1日に2回飲む", today) == []
    assert resolve("2日おきに水をやる", today) == []


async def test_the_weather_of_a_day_brings_the_plan_of_that_day(engine_told) -> None:  # type: ignore[no-untyped-def]
    told: MemoryEngine = await engine_told({
        "outing": ("2027-09-20", "あなたは10月2日に秋月へ紅葉を見に行く予定だ。"),
        "old_outing": ("2027-05-02", "あなたは今日、秋月の城下町を歩いた。"),
    }, profile={"enabled": False})
    assert await recalled(told, "土曜の天気どうだろうね", NOW) == ["outing"]
    assert await recalled(told, "2日の朝って雨降るかな", NOW) == ["outing"]
    assert await recalled(told, "土曜の天気は？", NOW) == []       # the forecast asked for
    assert await recalled(told, "週末って雨降るかな", NOW) == []    # the world's weekend
    assert await recalled(told, "明日の天気どう？", NOW) == []      # nothing planned tomorrow


# -- the past of what one was told ----------------------------------------------------------
@pytest.mark.parametrize("text", ["忘年会って何日だった？", "忘年会の会場どこやった？",
                                  "秋月っていつ行くんやった？", "会場どこやったかいな"])
def test_a_question_in_the_past_of_the_copula_asks_to_recall(text: str) -> None:
    assert detect(text).recall


async def test_the_past_of_the_copula_finds_a_plan_still_to_come(engine_told) -> None:  # type: ignore[no-untyped-def]
    told: MemoryEngine = await engine_told({
        "party": ("2027-09-20", "あなたは10月8日の部署の忘年会の幹事で、会場は中洲の居酒屋だ。"),
        "lunch": ("2027-06-02", "あなたは今日、同僚と中洲でラーメンを食べた。"),
    }, profile={"enabled": False})
    assert (await recalled(told, "忘年会って何日だった？", NOW))[:1] == ["party"]


async def test_the_weather_of_a_day_does_not_bring_memories_that_mention_weather(
        engine_told) -> None:  # type: ignore[no-untyped-def]
    told: MemoryEngine = await engine_told({
        "rainy_walk": ("2027-08-02", "あなたは今日、天気が悪くて散歩をやめた。"),
        "forecast": ("2027-09-10", "あなたは天気予報を毎朝見るのが習慣だ。"),
    }, profile={"enabled": False})
    assert await recalled(told, "明日の天気どんな感じ？", NOW) == []


# -- a thing named is what the memory must name --------------------------------------------
async def test_a_question_about_a_thing_needs_a_memory_naming_the_thing_not_its_place(
        engine_told) -> None:  # type: ignore[no-untyped-def]
    told: MemoryEngine = await engine_told({
        "home": ("2026-10-01", "あなたは名古屋市千種区に一人で住んでいる。"),
        "sendai_trip": ("2027-08-07", "あなたは今日、仙台七夕まつりを友達と見に行った。"),
        "gyutan": ("2027-08-08", "あなたは昨日、仙台で牛タン定食を食べた。"),
    }, profile={"enabled": False})
    assert await recalled(told, "名古屋城の金のしゃちほこって何でできてるんだっけ", NOW) == []
    assert "gyutan" in await recalled(told, "牛タンってどこで食べたんだっけ", NOW)


async def test_the_unit_a_question_asks_for_must_be_told(engine_told) -> None:  # type: ignore[no-untyped-def]
    told: MemoryEngine = await engine_told({
        "onsen": ("2026-11-03", "あなたは今日、友達と霧島の温泉に行った。"),
        "blood": ("2026-03-13", "あなたの血液型はA型だ。"),
    }, profile={"enabled": False})
    assert await recalled(told, "霧島って何県だったっけ", NOW) == []     # no memory tells the 県
    assert "onsen" in await recalled(told, "霧島って何回行ったっけ", NOW)  # a count of visits


def test_asking_the_robot_to_sing_is_a_command() -> None:
    assert detect("何か歌でも歌って").command
    assert not detect("カラオケで歌った曲なんだっけ").command


async def test_the_first_time_is_the_first_event_not_an_older_liking(engine_told) -> None:  # type: ignore[no-untyped-def]
    told: MemoryEngine = await engine_told({
        "colleague": ("2026-03-04", "渡辺さんは会社の先輩ドライバーで、釣りが趣味だ。来年の3月で"
                                    "定年になるそうだ。"),
        "first_fishing": ("2026-05-16", "あなたは今日、初めて寺泊の堤防で海釣りをした。渡辺さんに"
                                        "誘われて行き、アジを10匹釣った。"),
        "again": ("2026-08-20", "あなたは今日、寺泊でまた釣りをした。"),
    }, profile={"enabled": False})
    got = await recalled(told, "はじめての釣り、誰に誘われたんだっけ", NOW)
    assert got and got[0] == "first_fishing"
