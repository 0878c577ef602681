"""Japanese word classes: the words for "I", for family, pets and the people around one.

Every module that looks for these words takes them from here (the core's recall rules and
the stand-in chat model alike, the latter through :mod:`omoide.api`), so that a spelling
added for one reader is seen by all the readers that want it. A test scans the sources so
that no new literal list of them creeps back.

Where readers deliberately read differently, the class they use has its own name and a
comment says why; the narrower classes are subsets of the wide ones (a test checks it).
Order is kept stable (tuples) because patterns are built from them with
:func:`regex_alternation`; none of the words of one class is a prefix of another except
where noted, so order never decides *whether* a pattern matches.

This module imports nothing of omoide: anything may import it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# -- the speaker ----------------------------------------------------------------------

FIRST_PERSON_PRONOUNS: tuple[str, ...] = (
    "私", "わたし", "わたくし", "あたし", "俺", "おれ", "僕", "ぼく")
"""The pronouns a speaker uses for themselves, in kanji and in kana (speech recognition
writes either)."""

REFLEXIVE_SELF = "自分"
"""「自分」: "oneself". It is the speaker only when it stands as a noun before a particle
(「自分の誕生日」); 「自分で作れる？」 says nothing about who speaks, so readers that search a
text anywhere leave it out (:data:`FIRST_PERSON_PRONOUNS`)."""

FIRST_PERSON: tuple[str, ...] = (*FIRST_PERSON_PRONOUNS, REFLEXIVE_SELF)
"""Every word for the speaker, for readers that look for it before a particle
(「私の」「僕が」「自分は」)."""

FIRST_PERSON_SEARCHED_ANYWHERE: tuple[str, ...] = ("私", "僕", "俺", "あたし")
"""The first-person spellings looked for anywhere in a sentence, particle or not.

The kana わたし, わたくし, ぼく and おれ are left out on purpose: they sit inside other
words (わたしました 渡しました, ぼくじょう 牧場, おれい お礼, おれた 折れた), so a search
without a following particle would find a speaker where there is none. 自分 is left out
as for :data:`FIRST_PERSON_PRONOUNS`."""

FIRST_PERSON_LEMMAS: tuple[str, ...] = ("私", "僕", "俺", "あたし", "自分")
""":data:`FIRST_PERSON` as Sudachi normalises it (わたし, わたくし, あたし → 私; ぼく → 僕;
おれ → 俺), for readers of lemmas; あたし is kept as written too, for the readers that
also compare a word's surface."""

OUR_HOUSEHOLD = "うちの"
"""「うちの」: "our (family's)"; 「うちの猫」 is the speaker's own cat."""

# -- the people and animals of one's life ------------------------------------------

CLOSE_FAMILY: tuple[str, ...] = (
    "妻", "夫", "嫁", "旦那", "母", "父", "兄", "姉", "弟", "妹", "息子", "娘", "祖母", "祖父")
"""Spouse, parents, siblings, children and grandparents: single words that are family
wherever they stand. The stand-in extractor reads only these (with a few other words of
its own) because it searches a whole sentence: the wider :data:`FAMILY` holds words that
are also parts of other words (いとこ in いいところ, 孫 in 孫悟空)."""

FAMILY: tuple[str, ...] = (
    "妻", "夫", "嫁", "旦那", "主人", "母", "父", "兄", "姉", "弟", "妹", "兄弟", "姉妹",
    "息子", "娘", "子ども", "子供", "長男", "長女", "次男", "次女", "孫", "祖母", "祖父",
    "おばあちゃん", "おじいちゃん", "両親", "家族", "義母", "義父", "叔父", "叔母", "伯父",
    "伯母", "いとこ", "甥", "姪", "彼氏", "彼女", "婚約者", "恋人", "パートナー", "実家")
"""Kin, partners and the family home: a fact about one of these (あなたの妻の…は) is a
family fact. Some words are prefixes of others here (兄 of 兄弟, 姉 of 姉妹)."""

FAMILY_AS_A_GROUP: tuple[str, ...] = ("両親", "兄弟", "姉妹", "家族", "実家")
"""Words of :data:`FAMILY` that name several people or a home, not one person."""

KIN_OF_ONE: frozenset[str] = frozenset(w for w in FAMILY if w not in FAMILY_AS_A_GROUP)
"""Words of :data:`FAMILY` that name one person (姪, 義母, 夫): whom 「姪の美羽」 names."""

KIN_BY_READING: dict[str, str] = {
    **dict.fromkeys(("ハハ", "ハハオヤ", "カアサン", "オカアサン", "カアチャン", "オカアチャン",
                     "オフクロ", "オカン", "ママ"), "母"),
    **dict.fromkeys(("チチ", "チチオヤ", "トウサン", "オトウサン", "トウチャン", "オトウチャン",
                     "オヤジ", "オトン", "パパ"), "父"),
    **dict.fromkeys(("アニ", "アニキ", "ニイサン", "オニイサン", "ニイチャン",
                     "オニイチャン"), "兄"),
    **dict.fromkeys(("アネ", "アネキ", "ネエサン", "オネエサン", "ネエチャン",
                     "オネエチャン"), "姉"),
    **dict.fromkeys(("ソボ", "オバアチャン", "バアチャン", "オバアサン"), "祖母"),
    **dict.fromkeys(("ソフ", "オジイチャン", "ジイチャン", "オジイサン"), "祖父"),
    **dict.fromkeys(("ツマ", "ヨメ", "オクサン", "カミサン", "ニョウボウ", "カナイ"), "妻"),
    **dict.fromkeys(("オット", "ダンナ", "ダンナサン"), "夫"),
    **dict.fromkeys(("メイッコ", "メイゴ"), "姪"),
    **dict.fromkeys(("オイッコ", "オイゴ"), "甥"),
}
"""Kin as people call them (katakana readings of 母さん, お袋, 親父, 兄貴, 奥さん...) and the
one word each means (母, 父, 兄, 姉, 祖母, 祖父, 妻, 夫): said any way, the mother of a
memory is the mother asked about."""

PARTNERS: tuple[str, ...] = ("彼女", "彼氏")
"""Girlfriend and boyfriend (part of :data:`FAMILY`), as the stand-in extractor reads
them beside :data:`CLOSE_FAMILY`."""

CHILDREN: tuple[str, ...] = ("子ども", "子供")
"""Child, in both spellings (part of :data:`FAMILY`), as the stand-in extractor reads it."""

PETS: tuple[str, ...] = (
    "ペット", "猫", "犬", "柴犬", "ハムスター", "文鳥", "インコ", "うさぎ", "ウサギ", "金魚",
    "熱帯魚", "メダカ", "亀", "カメ", "トイプードル", "プードル", "チワワ", "ダックス",
    "レトリバー", "フェレット", "モルモット", "オウム", "セキセイ")
"""Animals people keep; 猫 and 犬 are prefixes of nothing here but sit inside 柴犬."""

COMMON_PETS: tuple[str, ...] = ("猫", "犬", "ペット")
"""The pets the stand-in extractor knows as a sentence's topic (a subset of :data:`PETS`)."""

PEOPLE_AROUND: tuple[str, ...] = (
    "友達", "友人", "親友", "同僚", "上司", "部下", "先輩", "後輩", "担任", "先生",
    "幼なじみ", "同級生", "知り合い", "仲間", "ママ友", "恩師", "教授", "指導教員", "隣")
"""Friends, colleagues, teachers and neighbours: a fact about one is about a person."""

WORKMATES: tuple[str, ...] = ("上司", "部下", "同僚")
"""The people of one's work (a subset of :data:`PEOPLE_AROUND`)."""

FRIENDS: tuple[str, ...] = ("友達", "友人")
"""Friend, plainly said (a subset of :data:`PEOPLE_AROUND`)."""


NAME_SUFFIXES: tuple[str, ...] = ("さん", "くん", "君", "ちゃん", "様", "さま", "氏")
"""Honorifics after a name (「松尾さん」「そうたくん」): someone the speaker knows."""

CHANGE_VERBS: frozenset[str] = frozenset({
    "変わる", "変える", "替える", "替わる", "換える", "切り替える", "切り替わる", "変更", "移る",
    "移す", "増やす", "減らす", "増える", "減る", "やめる", "辞める", "止める", "戻す", "戻る"})
"""Verbs of changing (normalised forms): two facts that each tell a change share them
whatever changed, so sharing one says nothing about sharing a subject."""

FAMILIAR_NAME_SUFFIXES: tuple[str, ...] = ("ちゃん", "くん", "君")
"""The suffixes of :data:`NAME_SUFFIXES` one puts after the name of someone close (a
child, a cousin, a friend), never after a public figure's."""

# -- time as the speaker lives it ------------------------------------------------------

DEICTIC_TIME_READINGS: tuple[str, ...] = (
    "イマ", "サイキン", "コノゴロ", "サッキ", "コトシ", "キョネン", "サクネン", "ライネン",
    "マエ", "ゼンカイ", "サイゴ", "ハジメテ", "サイショ", "ムカシ", "コナイダ")
"""Readings (katakana, as Sudachi reads the word in any spelling) of time words counted
from the speaker's now besides the date words the lexicon rewrites
(:data:`omoide.memory.language.lexicon.TEMPORAL_READINGS`: 今日, 先月, 週末...): 今, 最近,
去年, 前回, 昔. A question holding one is about the speaker's own time line
(「去年の文化祭の曲なんだっけ」), unlike one about the world (「うるう年って4年に1回だっけ」)."""


# -- going out -------------------------------------------------------------------------

OUTING_STEMS: tuple[str, ...] = (
    "に行っ", "に行き", "に行く", "に行こ", "へ行っ", "へ行き", "へ行く", "へ行こ", "出かけ",
    "でかけ", "出掛け", "遊びに", "訪ね", "訪れ", "泊ま", "観光", "ドライブ", "日帰り", "帰省",
    "旅")
"""Written stems of going somewhere (水族館に行った, 出かけた, 旅行, 泊まった):
「どこ行ったっけ」 is answered by a memory of going out, not by whatever else happened in
those weeks. The lexicon leaves 行く out as a stop word, so these are read from the text
itself (に行った, not 行う)."""


# -- names of places -------------------------------------------------------------------

PLACE_KINDS: frozenset[str] = frozenset((
    "食堂", "商店", "商店街", "書店", "書房", "カフェ", "喫茶", "レストラン", "ベーカリー",
    "パン屋", "酒場", "病院", "医院", "クリニック", "歯科", "薬局", "ホテル", "旅館", "温泉",
    "公園", "神社", "寺", "教会", "駅", "会館", "ホール", "ジム", "教室", "塾", "保育園",
    "幼稚園", "小学校", "中学校", "高校", "大学", "美術館", "博物館", "図書館", "水族館",
    "動物園", "スーパー", "ストア", "マート", "センター"))
"""The kind of place a name may end with (「まるよし食堂」, 「みどり歯科」): the name is also
said without it (まるよし), so the head is a name too. A set for looking a word up, not
a pattern; other readers' lists of places (schools as workplaces, 病院 as an errand) are
their own classes."""

def regex_alternation(words: Iterable[str]) -> str:
    """A regular-expression group matching any one of ``words``: ``(?:a|b|c)``.

    Words are escaped and kept in the order given (the classes' order), so a pattern
    built from a class reads as the class does.
    """
    return "(?:" + "|".join(re.escape(word) for word in words) + ")"
