"""Canonicalisation: both sides NFKC; queries lose what carries no meaning for recall."""

from __future__ import annotations

import pytest

from omoide.memory.language.absolute_dates import absolute_dates, format_stamp
from omoide.memory.language.canonical import canonical, query_copy
from omoide.memory.recall.intent import detect


def test_full_and_half_width_marks_become_one() -> None:
    assert canonical("週末の予定覚えてる？") == canonical("週末の予定覚えてる?")


@pytest.mark.parametrize("raw", ["週末の予定覚えてる?", "週末の予定覚えてる？", "週末の予定覚えてる",
                                 "えーと、週末の予定覚えてる。", "ねえ週末の予定覚えてる!!", "週末の予定覚えてる…"])
def test_query_variants_share_one_copy(raw: str) -> None:
    assert query_copy(raw) == "週末の予定覚えてる"


@pytest.mark.parametrize("raw", ["あさってって何かあったっけ", "あやと何するんだっけ", "ねんまつの予定"])
def test_words_that_start_like_fillers_are_kept(raw: str) -> None:
    assert query_copy(raw) == raw


def test_absolute_dates_in_fact_text() -> None:
    from datetime import date
    text = canonical("あなたは今日（2026年4月21日）歯医者で治療し、次は来週の火曜日（2026年4月28日）に行く。")
    assert absolute_dates(text) == (date(2026, 4, 21), date(2026, 4, 28))
    assert absolute_dates("12月28日に帰省する", date(2026, 12, 9)) == (date(2026, 12, 28),)
    assert absolute_dates("日付のない文") == ()


def test_stamp_has_the_japanese_weekday() -> None:
    from datetime import datetime
    assert format_stamp(datetime(2026, 9, 27, 20, 50)) == "2026-09-27 20:50 (日)"


@pytest.mark.parametrize(("text", "recall"), [
    ("週末の予定覚えてる?", True), ("次の歯医者いつだっけ", True), ("明日の予定なんだったかしら", True),
    ("私の好きなケーキ覚えてる", True), ("最近私が練習してることって何？", True),
    ("おすすめの映画ある？", False), ("日本で一番高い山は？", False), ("明日7時に起こして", False),
    ("ずんだ餅ってどうやって作るのかしら", False), ("今日のニュース教えて", False),
    # an attribute of the world is general knowledge even with 〜だっけ ...
    ("TOEICって何点満点だっけ?", False), ("富士山って何メートルだっけ", False),
    ("フランスの首都ってどこだっけ", False), ("日本一長い川ってなんだっけ", False),
    # ... unless the user points at themselves
    ("私のTOEICの目標って何点だっけ", True), ("私の身長って何センチだっけ", True),
])
def test_recall_intent(text: str, recall: bool) -> None:
    assert detect(canonical(text)).recall is recall
