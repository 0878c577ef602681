"""What a fact is about, read with Sudachi: the shape dedup compares.

A fact such as 「あなたの友達の佐藤さんは札幌に住んでいる。」 has

- **names**: proper nouns (佐藤, 札幌), Latin-script words (USJ) and the names the
  extractor reported in ``entities``;
- **topics**: the common nouns it is about (友達, ラーメン, 歯医者), without pronouns, time
  words, counters and light nouns (事, 予定);
- **predicates**: what is said of them (住む, 好き, 飼う, 行く), without auxiliaries
  (いる in 住んでいる, しまう);
- **numbers** with their counters (2匹, 5歳, 7時) outside dates, and the **dates** it
  carries (（2026年10月3日） → 2026-10-03);
- **polarity** (好きではない, 行かない) and whether it states a **change**
  (変える, やめる, 延期, 引っ越す, …になった).

Every word is matched by any of its keys (normalised form, surface, reading), as in the
recall channels, so 蕎麦/そば/ソバ are one topic. Two kinds of slot group predicates:

- a **preference** word is the value itself: 「猫が嫌い」 changes the value of
  「猫が好き」, while 「猫を飼っている」 is another fact;
- a **relation** (residence: 住む/暮らす/在住/引っ越す; work: 働く/勤める/転職) is one
  relation however it is worded; its value is the place or organisation named with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from omoide.memory.language.absolute_dates import absolute_dates
from omoide.memory.language.canonical import canonical, to_katakana
from omoide.memory.language.lexicon import KATAKANA, STOP_LEMMAS, TEMPORAL_READINGS, analyzer

NAME_WEIGHT = 1.5
TOPIC_WEIGHT = 1.0
PREDICATE_WEIGHT = 0.5

# Words whose presence states that something changed (normalised forms).
CHANGE_LEMMAS = frozenset([
    "変える", "変わる", "変更", "止める", "やめる", "辞める", "中止", "延期", "早める", "早まる",
    "遅らせる", "遅れる", "キャンセル", "取り止める", "ずらす", "ずれる", "無くなる", "なくなる",
    "成る", "引っ越す", "引っ越し", "引越し", "転職", "転勤", "移る", "移す", "卒業", "退職",
    "解約", "別れる", "乗り換える", "切り替える", "変化", "振り替える", "再開"])

PREFERENCE = "preference"
# Words that fill one slot of a person. A preference word is the slot's value (好き ->
# 嫌い is a change); residence and work words are synonyms of one relation.
SLOTS: dict[str, str] = {
    **dict.fromkeys(["好き", "大好き", "嫌い", "大嫌い", "苦手", "好む", "好物", "派", "得意",
                     "不得意", "嫌う", "好み", "ハマる", "はまる"], PREFERENCE),
    **dict.fromkeys(["住む", "暮らす", "在住", "住まい", "引っ越す", "引っ越し", "引越し"],
                    "residence"),
    **dict.fromkeys(["働く", "勤める", "勤務", "勤め", "就職", "転職", "職業"], "work"),
}

# Verbs that only help another verb when they follow て/で (住んでいる, 食べてしまった).
_AUXILIARY_AFTER_TE = frozenset(["居る", "いる", "有る", "ある", "仕舞う", "しまう", "置く", "おく",
                                 "見る", "みる", "行く", "来る", "くる", "貰う", "もらう", "呉れる",
                                 "くれる", "上げる", "あげる", "頂く", "いただく", "下さる"])
# Light verbs and nouns that say nothing about the subject.
_LIGHT = frozenset(["為る", "する", "居る", "いる", "有る", "ある", "成る", "なる", "出来る",
                    "できる", "言う", "思う", "事", "こと", "物", "もの", "予定", "積もり",
                    "つもり", "様", "よう", "感じ", "方", "為", "ため", "所", "ところ", "訳",
                    "はず"])
_NEGATIONS = frozenset(["ない", "無い", "ず", "ぬ", "ん"])


@dataclass(frozen=True)
class Word:
    """One content word of a fact: its keys (any shared key matches) and its role."""

    keys: frozenset[str]
    role: str  # "name", "topic" or "predicate"
    slot: str | None = None
    surface: str = ""
    person: bool = False
    """A person's name (Sudachi's 人名): whom a fact is about, never a slot's value."""

    @property
    def weight(self) -> float:
        return {"name": NAME_WEIGHT, "topic": TOPIC_WEIGHT}.get(self.role, PREDICATE_WEIGHT)

    @property
    def relation(self) -> str | None:
        """The relation slot this word words (residence, work), if any."""
        return self.slot if self.slot is not None and self.slot != PREFERENCE else None

    def matches(self, other: Word) -> bool:
        return bool(self.keys & other.keys) or (
            self.relation is not None and self.relation == other.relation)


@dataclass(frozen=True)
class FactShape:
    """What one fact is about (see the module docstring)."""

    words: tuple[Word, ...]
    numbers: tuple[str, ...]
    dates: tuple[date, ...]
    negative: bool
    change: bool
    analysed: bool
    """False when Sudachi is unavailable: then only exact duplicates are recognised."""

    @property
    def names(self) -> tuple[Word, ...]:
        return tuple(w for w in self.words if w.role == "name")

    @property
    def nouns(self) -> tuple[Word, ...]:
        """Names and topics: what the fact is about."""
        return tuple(w for w in self.words if w.role != "predicate")

    @property
    def anchors(self) -> tuple[Word, ...]:
        """What the fact is about: its nouns, or its predicates when it names nothing
        (「毎朝6時に起きている」 is about getting up)."""
        return self.nouns or tuple(w for w in self.words if w.role == "predicate")


def _keys(surface: str, normalized: str, reading: str) -> frozenset[str]:
    keys = {surface.lower(), normalized.lower(), to_katakana(surface).lower()}
    if len(reading) >= 2:
        keys.add(to_katakana(reading))
    return frozenset(k for k in keys if k)


def _role(pos: tuple[str, ...], surface: str) -> str | None:
    if surface.isascii() and surface[:1].isalpha() and len(surface) >= 2 and pos[0] == "名詞":
        return "name"
    if pos[0] == "名詞":
        if pos[1] == "固有名詞":
            return "name"
        if pos[1] == "普通名詞" and pos[2] not in ("副詞可能", "助数詞可能"):
            return "topic"
        return None
    if pos[0] == "動詞":
        return "predicate"
    if pos[0] in ("形容詞", "形状詞") and pos[1] == "一般":
        return "predicate"
    return None


def _in_date(words: list[Any], i: int) -> bool:
    """Whether the number at ``i`` is part of a written date (2026年10月3日, 10月3日):
    a year followed by a month, a month followed by a day, a day after a month."""
    def unit(j: int) -> str:
        return words[j].surface() if 0 <= j < len(words) else ""

    def number(j: int) -> bool:
        return 0 <= j < len(words) and words[j].part_of_speech()[1] == "数詞"

    here = unit(i + 1)
    if here in ("年", "月") and number(i + 2):
        return unit(i + 3) == _DATE_FOLLOWERS[here]
    return here == "日" and unit(i - 1) == "月" and number(i - 2)


_DATE_FOLLOWERS = {"年": "月", "月": "日"}


def _is_after_te(words: list[Any], i: int) -> bool:
    if i == 0:
        return False
    prev = words[i - 1]
    return bool(prev.part_of_speech()[:2] == ("助詞", "接続助詞")
                and prev.surface() in ("て", "で"))


def shape_of(text: str, entities: tuple[str, ...] = (), said_on: date | None = None,
             ) -> FactShape:
    """The shape of the fact ``text``; ``entities`` are names the extractor reported,
    ``said_on`` places dates written without a year."""
    text = canonical(text)
    dates = absolute_dates(text, said_on)
    morphemes = analyzer().morphemes(text)
    if not morphemes:
        return FactShape((), (), dates, False, False, analysed=False)
    words: list[Word] = []
    numbers: list[str] = []
    negative = change = False
    for i, m in enumerate(morphemes):
        pos = tuple(m.part_of_speech())
        surface, norm = m.surface(), m.normalized_form()
        if pos[1] == "数詞":
            if not _in_date(morphemes, i):  # dates are compared as dates
                unit = morphemes[i + 1].surface() if i + 1 < len(morphemes) else ""
                numbers.append(f"{norm}{unit}")
            continue
        if norm in _NEGATIONS and (pos[0] == "助動詞" or pos[:2] == ("形容詞", "非自立可能")):
            negative = not negative  # 行かない; 行かないわけではない is positive again
            continue
        if norm in CHANGE_LEMMAS or surface in CHANGE_LEMMAS:
            change = True
            if norm not in SLOTS:
                continue
        role = _role(pos, surface)
        if role is None and pos[0] == "接尾辞" and norm in SLOTS:
            role = "predicate"  # 蕎麦派: the suffix says what is preferred
        if role is None:
            continue
        if norm in _LIGHT or surface in _LIGHT:
            continue
        if role == "predicate" and pos[1] == "非自立可能" and _is_after_te(morphemes, i):
            continue
        if role != "predicate" and (norm in STOP_LEMMAS or surface in STOP_LEMMAS):
            continue
        reading = to_katakana(m.reading_form())
        if reading in TEMPORAL_READINGS:
            continue
        slot = SLOTS.get(norm) or SLOTS.get(surface)
        if role == "predicate":
            # inflected surfaces and readings (住ん, スン) would only add noise
            keys = frozenset({norm.lower(), to_katakana(norm).lower()})
        else:
            keys = _keys(surface, norm, reading)
        words.append(Word(keys, role, slot, surface, person=pos[2] == "人名"))
    for entity in entities:
        _add_entity(words, entity)
    return FactShape(tuple(words), tuple(sorted(numbers)), dates, negative, change,
                     analysed=True)


def _add_entity(words: list[Word], entity: str) -> None:
    """Add a name the extractor reported, unless the text's own words already have it.

    A reported "entity" that Sudachi reads as one common noun (ラーメン, 友達) is a
    topic, whatever the extractor called it.
    """
    entity = canonical(entity)
    if not entity:
        return
    parts = analyzer().morphemes(entity)
    role, person = "name", False
    if len(parts) == 1:
        pos = tuple(parts[0].part_of_speech())
        role = _role(pos, parts[0].surface()) or "name"
        person = pos[2] == "人名"
        if role == "predicate":
            return
    reading = analyzer().reading_of(entity)
    keys = _keys(entity, entity, reading if KATAKANA.match(reading) else "")
    word = Word(keys, role, None, entity, person)
    for i, w in enumerate(words):
        if w.matches(word):
            if w.role == "topic" and role == "name":
                words[i] = Word(w.keys | keys, "name", None, w.surface, person)
            return
    if role == "name" and len(parts) > 1:
        # the words the analyser split the name into (無印|良品) are the name, not topics
        words[:] = [w for w in words if w.role != "topic" or w.surface not in entity]
    words.append(word)
