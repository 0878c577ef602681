"""Dedup verdicts: a duplicate or an update needs the same subject, not close wording.

Each row is (new fact, its kind, stored fact, its kind, verdict). Facts are said on
2026-09-27 (a Sunday); the vectors are taken to agree (cosine 0.95 over a 0.92
threshold) unless a test says otherwise, so the verdicts below come from what the facts
say, which is the point: a close vector never merges two facts on its own.
"""

from __future__ import annotations

from datetime import date

import pytest

from omoide.memory.facts.dedup import Verdict, compare, view

SAID_ON = date(2026, 9, 27)
DUPLICATE, UPDATE, NEW = Verdict.DUPLICATE, Verdict.UPDATE, Verdict.NEW
HAKONE = "あなたは来週の土曜日（2026年10月3日）に友達と箱根に行く予定だ。"

SAME_FACT_REWORDED = [
    ("あなたは猫が好き。", "preference", "あなたは猫が好き", "preference"),
    ("あなたは来週の土曜日（2026年10月3日）に箱根へ行く予定だ。", "plan",
     "あなたは来週の土曜日（2026年10月3日）に箱根に行く予定だ。", "plan"),
    ("あなたは最近ギターを練習している。", "habit",
     "あなたは最近、仕事終わりにギターの練習をしている。", "habit"),
    ("あなたはむぎという猫を飼っている。", "habit", "あなたは猫のむぎを飼っている。", "habit"),
    ("あなたは毎朝ジョギングをしている。", "habit", "あなたは毎朝、ジョギングをしている。", "habit"),
    ("あなたはそばが好きだ。", "preference", "あなたは蕎麦が好きだ。", "preference"),
    ("あなたは東京に住んでいる。", "profile", "あなたは東京在住だ。", "profile"),
    ("あなたの妹は看護師だ。", "person", "あなたの妹は看護師として働いている。", "person"),
    ("あなたは週に2回ジムに通っている。", "habit", "あなたは週2回ジムに通っている。", "habit"),
    ("あなたは箱根に行く予定だ。", "plan", HAKONE, "plan"),
]

SAME_SLOT_CHANGED = [
    ("あなたは来週の日曜日（2026年10月4日）に友達と箱根に行く予定だ。", "plan", HAKONE, "plan"),
    ("あなたは箱根行きを来週の日曜日（2026年10月4日）に変えた。", "plan", HAKONE, "plan"),
    ("あなたは箱根行きをやめた。", "event", HAKONE, "plan"),
    ("あなたは箱根旅行を延期した。", "plan", HAKONE, "plan"),
    ("あなたはラーメンより蕎麦派になった。", "preference", "あなたはラーメンが好きだ。", "preference"),
    ("あなたはラーメンが好きだ。", "preference", "あなたはラーメンより蕎麦派になった。", "preference"),
    ("あなたは猫が嫌いだ。", "preference", "あなたは猫が好きだ。", "preference"),
    ("あなたは猫が苦手だ。", "preference", "あなたは猫が好きだ。", "preference"),
    ("あなたは猫が好きではない。", "preference", "あなたは猫が好きだ。", "preference"),
    ("あなたは猫を3匹飼っている。", "habit", "あなたは猫を2匹飼っている。", "habit"),
    ("あなたは週に3回ジムに通っている。", "habit", "あなたは週に2回ジムに通っている。", "habit"),
    ("あなたは毎朝6時に起きている。", "habit", "あなたは毎朝7時に起きている。", "habit"),
    ("あなたの娘は6歳になった。", "person", "あなたの娘は5歳だ。", "person"),
    ("あなたの友達の佐藤さんは札幌に13年住んでいる。", "person",
     "あなたの友達の佐藤さんは札幌に12年住んでいる。", "person"),
    ("あなたの友達の佐藤さんは仙台に引っ越した。", "person",
     "あなたの友達の佐藤さんは札幌に住んでいる。", "person"),
    ("あなたは大阪に引っ越した。", "profile", "あなたは東京に住んでいる。", "profile"),
    ("あなたはヨガ教室をやめた。", "habit", "あなたはヨガ教室に通っている。", "habit"),
    ("あなたは歯医者の予約を来週の火曜日（2026年10月6日）に変更した。", "plan",
     "あなたは明日（2026年9月28日）歯医者に行く予定だ。", "plan"),
    ("あなたは最近、仕事終わりにギターの練習をしている。", "habit",
     "あなたは最近ギターを練習している。", "habit"),  # restated with more detail
]

DIFFERENT_FACTS = [
    # two plans, nothing in common but the words for "going" and a date
    ("あなたは明日（2026年9月28日）歯医者に行く予定だ。", "plan", HAKONE, "plan"),
    # different people and places
    ("あなたの友達の鈴木さんは仙台に住んでいる。", "person",
     "あなたの友達の佐藤さんは札幌に住んでいる。", "person"),
    ("あなたの友達の田中さんは福岡に住んでいる。", "person",
     "あなたの友達の鈴木さんは仙台に住んでいる。", "person"),
    ("あなたの友達の高橋さんは名古屋に住んでいる。", "person",
     "あなたの友達の田中さんは福岡に住んでいる。", "person"),
    ("あなたの友達の佐藤さんは仙台に引っ越した。", "person",
     "あなたの友達の鈴木さんは札幌に住んでいる。", "person"),
    ("あなたの夫は大阪で働いている。", "person", "あなたは東京で働いている。", "profile"),
    ("あなたは来週の土曜日（2026年10月3日）に京都に行く予定だ。", "plan", HAKONE, "plan"),
    ("あなたは11月に北海道へ旅行する予定だ。", "plan", "あなたは11月に沖縄へ旅行する予定だ。", "plan"),
    ("あなたは明日（2026年9月28日）佐藤さんとランチに行く予定だ。", "plan",
     "あなたは明日（2026年9月28日）鈴木さんとランチに行く予定だ。", "plan"),
    ("あなたはUSJに行った。", "event", "あなたはディズニーランドに行った。", "event"),
    ("あなたは10月3日に家族と箱根に行く予定だ。", "plan",
     "あなたは10月3日に友達と箱根に行く予定だ。", "plan"),
    # different numbers of different things
    ("あなたの息子は5歳だ。", "person", "あなたの娘は3歳だ。", "person"),
    ("あなたの母の誕生日は5月3日だ。", "person", "あなたの父の誕生日は8月12日だ。", "person"),
    ("あなたは犬を2匹飼っている。", "habit", "あなたは猫を2匹飼っている。", "habit"),
    # different activities, or another predicate about the same thing
    ("あなたは来週の土曜日（2026年10月3日）に映画を見る予定だ。", "plan", HAKONE, "plan"),
    ("あなたは毎週土曜日にテニスをしている。", "habit", "あなたは毎週土曜日にゴルフをしている。", "habit"),
    ("あなたの友達の佐藤さんは札幌で働いている。", "person",
     "あなたの友達の佐藤さんは札幌に住んでいる。", "person"),
    ("あなたは猫を飼っている。", "habit", "あなたは猫が好きだ。", "preference"),
    ("あなたは毎朝コーヒーを飲む。", "habit", "あなたはコーヒーが好きだ。", "preference"),
    ("あなたは駅前のラーメン屋によく行く。", "habit", "あなたはラーメンが好きだ。", "preference"),
    ("あなたは猫カフェに行った。", "event", "あなたは猫が好きだ。", "preference"),
    ("あなたは辛い料理が苦手だ。", "preference", "あなたは甘いものが好きだ。", "preference"),
    ("あなたの弟は大学生だ。", "person", "あなたの兄は大学生だ。", "person"),
    # a change of something else than the stored fact
    ("あなたは友達と映画に行くのをやめた。", "event", HAKONE, "plan"),
    ("あなたは猫を飼うのをやめた。", "event", "あなたは猫が好きだ。", "preference"),
    ("あなたの息子は小学生になった。", "person", "あなたの息子は野球が好きだ。", "preference"),
    # the same kind of appointment again, after the first one had happened
    ("あなたは明日（2026年9月28日）歯医者に行く予定だ。", "plan",
     "あなたは9月5日に歯医者に行く予定だ。", "plan"),
    ("You like cats.", "other", "You like dogs.", "other"),
]


def verdict(new: str, new_kind: str, old: str, old_kind: str, cosine: float = 0.95,
            new_entities: tuple[str, ...] = (), old_entities: tuple[str, ...] = ()) -> Verdict:
    return compare(view(new, new_kind, new_entities, SAID_ON),
                   view(old, old_kind, old_entities, SAID_ON), cosine, 0.92)


@pytest.mark.parametrize(("new", "new_kind", "old", "old_kind"), SAME_FACT_REWORDED)
def test_the_same_fact_reworded_is_a_duplicate(new: str, new_kind: str, old: str,
                                               old_kind: str) -> None:
    assert verdict(new, new_kind, old, old_kind) is DUPLICATE


@pytest.mark.parametrize(("new", "new_kind", "old", "old_kind"), SAME_SLOT_CHANGED)
def test_a_change_of_the_same_fact_is_an_update(new: str, new_kind: str, old: str,
                                                old_kind: str) -> None:
    assert verdict(new, new_kind, old, old_kind) is UPDATE


@pytest.mark.parametrize(("new", "new_kind", "old", "old_kind"), DIFFERENT_FACTS)
def test_different_facts_are_new_however_close_their_vectors(new: str, new_kind: str,
                                                             old: str, old_kind: str) -> None:
    assert verdict(new, new_kind, old, old_kind, cosine=0.99) is NEW


def test_the_six_friends_in_six_cities_are_six_facts() -> None:
    friends = [("佐藤", "札幌"), ("鈴木", "仙台"), ("田中", "福岡"), ("高橋", "名古屋"),
               ("伊藤", "大阪"), ("渡辺", "京都")]
    facts = [f"あなたの友達の{name}さんは{city}に住んでいる。" for name, city in friends]
    verdicts = {verdict(a, "person", b, "person", cosine=0.99)
                for a in facts for b in facts if a != b}
    assert verdicts == {NEW}


def test_a_reworded_fact_whose_vector_disagrees_is_kept() -> None:
    assert verdict("あなたは最近ギターを練習している。", "habit",
                   "あなたは最近、仕事終わりにギターの練習をしている。", "habit",
                   cosine=0.5) is NEW


def test_an_exact_duplicate_needs_no_vector_agreement() -> None:
    assert verdict("あなたは猫が好き。", "preference", "あなたは猫が好き", "preference",
                   cosine=0.1) is DUPLICATE


def test_a_change_of_another_kind_of_fact_is_new() -> None:
    assert verdict("あなたはヨガ教室をやめた。", "person", "あなたはヨガ教室に通っている。",
                   "plan") is NEW


def test_a_name_the_extractor_reported_counts_as_one_name() -> None:
    # Sudachi splits 無印良品 into two common nouns; the extractor's entity joins them
    assert verdict("あなたは無印良品に転職した。", "profile", "あなたはユニクロで働いている。",
                   "profile", new_entities=("無印良品",), old_entities=("ユニクロ",)) is UPDATE


def test_an_entity_that_is_a_common_noun_is_a_topic_not_a_name() -> None:
    assert verdict("あなたはそばが好きだ。", "preference", "あなたは蕎麦が好きだ。", "preference",
                   new_entities=("そば",)) is DUPLICATE
