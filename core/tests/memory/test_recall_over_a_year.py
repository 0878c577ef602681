"""Recall among a year of memories: family called by role, one day named in a remark, a
date misheard from a word, and common words that are not heard as others.

Runs over the test doubles (hash embedder, in-memory store): the dense channel says
little here, so each case rests on the words, names and dates the engine reads.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from omoide.memory.engine import MemoryEngine
from omoide.memory.index.family_names import names_after
from omoide.memory.language.lexicon import analyzer
from omoide.memory.recall.robust.query import prepare
from omoide.types import Memory

from .conftest import recalled

JST = ZoneInfo("Asia/Tokyo")
NOW = datetime(2027, 9, 29, 21, 0, tzinfo=JST)   # a Wednesday
MEMORIES = {
    "visit": ("2027-03-20", "あなたの弟の拓真と姪の美羽が、春休みに岡山から遊びに来る予定だ。"),
    "zoo": ("2027-03-27", "あなたは泊まりに来た美羽を連れて動物公園へ行き、レッサーパンダを見た。"),
    "lunch": ("2027-05-15", "あなたは義母の節子さんと喫茶店でランチをして、オムライスを食べた。"),
    "mother": ("2027-06-02", "あなたは母と電話で話した。"),
    "pills": ("2027-06-22", "あなたは血圧の薬を、朝1錠から朝晩の2回に増やされた。"),
    "pot": ("2027-09-28", "あなたは通販で圧力鍋を注文した。"),
    "sports_day": ("2027-09-27", "あなたは、息子の運動会が来週の土曜日（2027年10月9日）に"
                                 "延期になったと知らされた。"),
    "friends": ("2027-04-10", "あなたは友達とランチに行って、パスタを食べた。"),
    "friends2": ("2027-07-03", "あなたは友達と駅前のカフェでランチをした。"),
    "sumo": ("2027-08-02", "あなたは大相撲の中継を見て、最後まで目が離せなかった。"),
    "hair": ("2027-07-29", "あなたは湿気で髪が広がってしまい、朝から何度もくしでとかした。"),
    "bath": ("2027-08-03", "あなたはお風呂にひのきの香りの入浴剤を入れて、体の芯まで温まった。"),
    "aquarium": ("2027-08-29", "あなたは家族で鴨川の水族館に行き、シャチのショーを見た。"),
    "cake": ("2027-08-12", "あなたは駅前のケーキ屋でモンブランを買った。"),
}


def test_a_kin_word_followed_by_a_name_gives_the_name() -> None:
    text = MEMORIES["visit"][1]
    terms = analyzer().analyse(text, query=False).terms
    assert "美羽" in names_after("姪", text, terms)
    assert "拓真" in names_after("弟", text, terms)


def test_the_mother_in_law_is_not_the_mother() -> None:
    text = MEMORIES["lunch"][1]
    terms = analyzer().analyse(text, query=False).terms
    assert "節子" in names_after("義母", text, terms)
    assert names_after("母", text, terms) == set()


async def test_a_question_about_the_niece_finds_memories_that_only_name_her(
        engine: MemoryEngine) -> None:
    assert "zoo" in await recalled(engine, "姪っ子とどこ出かけたんだっけ?", NOW)


async def test_a_question_about_the_mother_does_not_bring_the_mother_in_law(
        engine: MemoryEngine) -> None:
    assert "lunch" not in await recalled(engine, "母と最後に話したのいつだっけ?", NOW)


async def test_a_remark_naming_one_day_brings_what_is_on_that_day_first(
        engine: MemoryEngine) -> None:
    # the lunches share words with the remark; the sports day is what the day holds
    got = await recalled(engine, "来週の土曜、友達にランチ誘われたんだけど行っちゃおうかな", NOW)
    assert got and got[0] == "sports_day"


def test_a_word_heard_as_a_date_is_still_a_date_to_the_query() -> None:
    # (けつあつ sounds like 月末: the date is heard; the next test shows it does not hide
    # the word's own memory)
    assert [s.label for s in prepare("けつあつの薬いま何錠飲んでるんだっけ", NOW).spans] == ["月末"]


async def test_a_misheard_date_does_not_hide_the_memory_the_words_name(
        engine: MemoryEngine) -> None:
    assert "pills" in await recalled(engine, "けつあつの薬いま何錠飲んでるんだっけ", NOW)


def test_a_common_word_written_in_kanji_is_not_heard_as_another() -> None:
    # 最近 (サイキン) is not 最後 (サイゴ) misheard: where it begins, no word is heard
    a = prepare("最近何時ごろに寝るようにしてるんだっけ", NOW).analysis
    assert 0 not in a.sound_starts


async def test_a_sound_alike_of_a_common_word_brings_nothing(engine: MemoryEngine) -> None:
    assert "sumo" not in await recalled(engine, "最近何時ごろに寝るようにしてるんだっけ", NOW)


async def test_where_the_user_went_in_a_period_is_a_memory_of_going_out(
        engine: MemoryEngine) -> None:
    assert prepare("夏休みって結局どこ行ったんだっけ", NOW).intent.asks_where_to
    assert not prepare("鍵どこに置いたっけ", NOW).intent.asks_where_to
    got = await recalled(engine, "夏休みって結局どこ行ったんだっけ", NOW)
    assert got and got[0] == "aquarium"


def test_a_quoted_name_is_one_name_and_its_head_too() -> None:
    terms = analyzer().analyse("あなたは「まるよし食堂」でチキン南蛮定食を食べた。", query=False).terms
    names = {t.surface: t.keys for t in terms if t.proper}
    assert "マルヨシショクドウ" in names["まるよし食堂"]
    assert "マルヨシ" in names["まるよし"]
    # a name that does not end in a kind of place keeps its whole spelling only
    terms = analyzer().analyse("あなたは「珈琲ラルゴ」でランチをした。", query=False).terms
    assert [t.surface for t in terms if t.proper] == ["珈琲ラルゴ"]


def test_a_prefix_and_its_noun_are_one_name_but_a_polite_o_is_not() -> None:
    """Sudachi splits a name it does not know into a prefix and a noun (まる|八 of
    「うどん処まる八」): together they are one name, as asked (「まる八行ったの誰とだっけ」);
    the polite お of おせんべい adds nothing to せんべい."""
    memory = analyzer().analyse("あなたはうどん処まる八で味噌煮込みうどんを食べた。", query=False)
    assert "まる八" in {t.surface for t in memory.terms if t.proper}
    query = analyzer().analyse("この前まる八行ったの誰とだっけ", query=True)
    assert "まる八" in {t.surface for t in query.terms if t.proper}
    polite = analyzer().analyse("あなたは母におせんべいを送った。", query=False)
    assert "おせんべい" not in {t.surface for t in polite.terms}


async def test_a_shop_said_by_its_reading_in_other_kanji_is_found(
        engine: MemoryEngine) -> None:
    await engine.add_memories("me", [Memory(
        "diner", "me", "あなたは「まるよし食堂」で、チキン南蛮定食を食べた。",
        datetime(2027, 9, 24, 21, 0, tzinfo=JST))])
    assert "diner" in await recalled(engine, "このまえ丸吉で食べたの何だったかな", NOW)
