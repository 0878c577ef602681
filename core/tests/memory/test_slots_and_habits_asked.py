"""Questions about what holds now: the job, the home, a habit — answered by the fact that
fills it today even when it shares only a verb with the question; and the sound channel
hearing only words, not pieces of the words the person said.

Runs over the test doubles (hash embedder, in-memory store): the dense channel says
little here, so each case rests on the words, slots and validity the engine reads.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from omoide.memory.engine import MemoryEngine
from omoide.memory.facts.validity import asked_slot, changes_in, lasts
from omoide.memory.language.temporal import resolve
from omoide.memory.language.tense import Tense
from omoide.memory.recall.intent import detect
from omoide.memory.recall.robust.query import prepare

from .conftest import recalled

JST = ZoneInfo("Asia/Tokyo")
NOW = datetime(2027, 9, 29, 21, 0, tzinfo=JST)
MEMORIES = {
    "old_job": ("2026-10-03", "あなたは市役所で窓口の仕事をしていて、住民票の発行を担当している。"),
    "new_job": ("2027-04-05", "あなたは4月から隣町の図書館で司書として働いていて、"
                              "児童書のコーナーを担当している。"),
    "sneakers": ("2027-05-10", "あなたは今日、新しいスニーカーを履きおろした。"),
    "brother": ("2026-11-20", "あなたの弟の健太は大阪の天満に住んでいる。"),
    "home": ("2026-10-01", "あなたは川越の実家に住んでいる。"),
    "coffee": ("2026-10-05", "あなたは毎朝、出勤前にブラックコーヒーを2杯飲むのが習慣だ。"),
    "white_water": ("2027-03-15", "あなたは胃の調子が悪いので、コーヒーをやめて朝は白湯を"
                                  "飲むようにした。"),
    "beer_party": ("2027-06-20", "あなたは昨日、同僚と居酒屋でビールを飲んだ。"),
    "talk": ("2027-05-01", "あなたは今日、母と電話で一時間話をした。"),
    "closed_early": ("2027-01-24", "あなたは今日、雪で客が少なかったので、店を早めに閉めた。"),
    "napolitan": ("2027-08-14", "あなたは昨日、駅前の喫茶店でナポリタンを食べた。"),
    "hokkaido": ("2027-07-02", "あなたは北海道の東川町で畑をやっている。"),
    "timer": ("2027-06-02", "あなたは今日、パスタを5分茹でた。"),
    "by_car": ("2026-10-02", "あなたは毎日、車で家から会社まで通勤している。"),
    "by_bike": ("2027-03-15", "あなたは3月から、自転車で通勤している。片道20分だ。"),
    "post": ("2027-05-10", "あなたは今日、研修を終えて営業企画部に配属された。"),
    "grandpa_ill": ("2027-03-01", "あなたの祖父は肺炎で富山の病院に入院している。"),
    "grandpa_now": ("2027-08-05", "あなたの祖父は8月から、週2回デイサービスに通っている。"),
    "dentist": ("2027-05-12", "あなたは歯医者を、駅前の「さくら歯科」に変えた。"),
}


ENGINE_CONFIG = {"profile": {"enabled": False}}
"""The configuration of the ``engine`` fixture (conftest), told ``MEMORIES``: no profile
block, so every fact is judged by recall itself."""


# -- the slot a question asks about --------------------------------------------------------
def test_a_question_names_the_slot_it_asks_about_and_whose() -> None:
    assert asked_slot("俺って今どこで働いてるんだっけ") == ((), "job")
    assert asked_slot("前の職場ってどこだったっけ") == ((), "job")
    assert asked_slot("いまどこの部署で働いてるんだっけ") == ((), "job")
    assert asked_slot("弟ってどこに住んでるんだっけ") == (("弟",), "residence")
    assert asked_slot("千夏の仕事ってなんだったっけ") == (("千夏",), "job")
    assert asked_slot("孝之ってどこ住んでるんだっけ") == (("孝之",), "residence")


def test_times_and_reasons_are_not_slots() -> None:
    assert asked_slot("仕事って何時からだっけ") is None
    assert asked_slot("福岡に引っ越した理由ってなんだっけ") is None
    assert asked_slot("職場の上司って誰だっけ") is None


async def test_the_job_held_now_answers_though_it_shares_only_the_verb(
        engine: MemoryEngine) -> None:
    got = await recalled(engine, "俺って今どこで働いてるんだっけ", NOW)
    assert got and got[0] == "new_job"
    assert "sneakers" not in got   # 働いてる is heard right: no アタラシイ in it


async def test_asked_about_before_the_old_job_comes_first(engine: MemoryEngine) -> None:
    got = await recalled(engine, "前はどこで働いてたんだっけ", NOW)
    assert got and got[0] == "old_job"


async def test_someone_elses_home_is_theirs_not_the_persons(engine: MemoryEngine) -> None:
    assert (await recalled(engine, "弟ってどこに住んでるんだっけ", NOW))[:1] == ["brother"]
    assert (await recalled(engine, "今どこに住んでるんだっけ", NOW))[:1] == ["home"]


# -- habits -----------------------------------------------------------------------------------
def test_a_fact_that_says_what_it_gave_up_states_what_holds_from_then() -> None:
    text = MEMORIES["white_water"][1]
    assert [c.old_value for c in changes_in(text)] == ["コーヒー"]
    assert lasts(text)


async def test_a_habit_asked_about_is_the_one_that_replaced_the_old(
        engine: MemoryEngine) -> None:
    """ブラックコーヒー is a coffee: giving up coffee replaces the black-coffee habit, and
    「朝って何飲んでるんだっけ」 (a time of the person's day, not a thing asked about)
    gets the habit holding now, not a one-off beer."""
    assert not prepare("朝って何飲んでるんだっけ", NOW).intent.thing_named
    assert await recalled(engine, "朝って何飲んでるんだっけ", NOW) == ["white_water"]


# -- a past checked with the listener --------------------------------------------------------
def test_a_past_checked_with_yone_is_recall() -> None:
    assert detect("冬に早じまいした日あったよね").recall
    assert not detect("冬って寒いよね").recall


async def test_a_day_of_the_past_checked_with_yone_is_found(engine: MemoryEngine) -> None:
    """Asked as recall, the winter's days are looked at; 話 is not heard in 早じまい."""
    assert await recalled(engine, "冬に早じまいした日あったよね", NOW) == ["closed_early"]


def test_a_date_pushed_back_is_a_plan_moved() -> None:
    moved = changes_in("あなたは親知らずを抜く日を、9月24日から10月8日に延ばした。")
    assert [(c.kind, c.old_value) for c in moved] == [("moved", "親知らず")]


# -- a question about a thing the person once mentioned -------------------------------------
async def test_where_a_thing_comes_from_is_not_the_persons_memory_of_it(
        engine: MemoryEngine) -> None:
    """「ナポリタンって発祥どこだっけ」 asks about the dish, not about the lunch."""
    assert prepare("ナポリタンって発祥どこだっけ", NOW).asked_of_the_thing == (
        ("ナポリタン",), ("発祥",))
    assert await recalled(engine, "ナポリタンって発祥どこだっけ", NOW) == []


async def test_where_the_person_goes_for_a_thing_is_theirs(engine: MemoryEngine) -> None:
    """A verb after the topic (通ってる) makes it the person's doing."""
    assert prepare("歯医者ってどこに通ってるんだっけ", NOW).asked_of_the_thing == ((), ())
    assert "dentist" in await recalled(engine, "歯医者ってどこに通ってるんだっけ", NOW)


async def test_whether_a_thing_is_something_is_about_the_thing(engine: MemoryEngine) -> None:
    """「北海道犬って天然記念物だっけ」 shares 北海道 with the farm, and asks nothing of it."""
    assert await recalled(engine, "北海道犬って天然記念物だっけ", NOW) == []
    assert prepare("陽菜の習い事ってスイミングだっけ", NOW).asked_of_the_thing == ((), ())


def test_a_timer_asked_in_kana_is_a_command() -> None:
    for text in ("ごふんはかって", "5分計って", "10分カウントして"):
        assert detect(text).command, text
    assert not detect("体重はかって").command


async def test_a_timer_brings_no_memory_of_the_same_minutes(engine: MemoryEngine) -> None:
    assert await recalled(engine, "ごふんはかって", NOW) == []


# -- a run of days off said of a day or a month -----------------------------------------------
def _ranges(text: str) -> list[tuple[str, str]]:
    return [(s.start.isoformat(), s.end.isoformat())
            for s in resolve(text, NOW.date(), tense=Tense.PAST)]


def test_the_long_weekend_of_a_holiday_is_the_one_it_falls_in() -> None:
    """海の日 2027 is Monday 19 July: its 連休 is 17–19 July, not September's."""
    assert _ranges("海の日の連休って何したっけ") == [("2027-07-17", "2027-07-19")]
    assert _ranges("去年の11月の連休って何したっけ") == [("2026-11-21", "2026-11-23")]
    assert _ranges("この前の連休何してた") == [("2027-09-18", "2027-09-20")]


def test_the_end_of_a_year_by_other_names() -> None:
    assert _ranges("去年の暮れは何してたかな") == [("2026-12-25", "2026-12-31")]
    assert _ranges("年の瀬って何してた") == [("2026-12-25", "2026-12-31")]
    assert _ranges("夕暮れに散歩した") == []
    assert _ranges("途方に暮れた") == []


# -- more that changes: the post, the way to work, how someone is doing ---------------------
def test_the_post_the_commute_and_someones_state_are_slots_asked() -> None:
    assert asked_slot("今の部署なんだっけ") == ((), "post")
    assert asked_slot("仕事、今何担当してるんだっけ") == ((), "post")
    assert asked_slot("今って会社まで何で通ってるんだっけ") == ((), "commute")
    assert asked_slot("通勤って何使ってるっけ") == ((), "commute")
    assert asked_slot("おじいちゃんって今どうしてるっけ") == (("おじいちゃん",), "state")
    assert asked_slot("今どうしてる") is None   # how the robot is: nobody's memory


async def test_the_way_to_work_now_and_the_post_now(engine: MemoryEngine) -> None:
    assert (await recalled(engine, "今って会社まで何で通ってるんだっけ", NOW))[:1] == ["by_bike"]
    assert (await recalled(engine, "今の部署なんだっけ", NOW))[:1] == ["post"]


async def test_how_someone_is_doing_is_the_latest_told_of_them(engine: MemoryEngine) -> None:
    """おじいちゃん is 祖父: the newest lasting fact about him comes first."""
    assert (await recalled(engine, "おじいちゃんって今どうしてるっけ", NOW))[:1] == ["grandpa_now"]



async def test_where_someone_is_looked_after_is_their_home_now(engine_told) -> None:  # type: ignore[no-untyped-def]
    told: MemoryEngine = await engine_told({
        "care_manager": ("2026-10-19", "あなたの母のケアマネジャーは大塚さんで、施設のことは何でも"
                                       "相談している。"),
        "visit": ("2027-03-13", "あなたは母の面会に行き、施設の職員さんから食事の量が減っていると"
                                "聞いた。"),
        "moved": ("2027-05-10", "あなたの母は、今日から特別養護老人ホーム「ひかりの郷」で暮らし"
                                "始めた。"),
    }, profile={"enabled": False})
    for asked in ("母さんって今どこの施設にいるんだっけ", "お袋のいる施設の名前なんだっけ"):
        assert asked_slot(asked) is not None and asked_slot(asked)[1] == "residence"
        got = await recalled(told, asked, NOW)
        assert got and got[0] == "moved", asked


async def test_the_company_asked_by_name_is_the_job_a_truck_change_does_not_replace(
        engine_told) -> None:  # type: ignore[no-untyped-def]
    told: MemoryEngine = await engine_told({
        "job": ("2026-03-02", "あなたは新潟の運送会社「越後ライン」で長距離トラックの運転手を"
                              "している。"),
        "new_truck": ("2027-01-15", "故障が続いたので、会社はあなたのトラックを2月から新しい"
                                    "車両に替えるそうだ。"),
    }, profile={"enabled": False})
    for asked in ("俺の会社の名前なんだったっけ", "うちの運送会社ってなんつったっけ"):
        assert asked_slot(asked) == ((), "job")
        got = await recalled(told, asked, NOW)
        assert got and got[0] == "job", asked


async def test_two_changes_of_different_medicines_do_not_replace_each_other(
        engine_told) -> None:  # type: ignore[no-untyped-def]
    told: MemoryEngine = await engine_told({
        "eye_drops": ("2026-10-15", "今日、眼科で目薬がキサラタンからアイラミドに変わった。"
                                    "朝と晩の2回さすことになった。"),
        "blood_pressure": ("2027-01-20", "今日、内科で血圧の薬がアムロジピンからオルメテックに"
                                         "変わった。"),
    }, profile={"enabled": False})
    got = await recalled(told, "今の目薬なんだったっけ", NOW)
    assert got and got[0] == "eye_drops"
