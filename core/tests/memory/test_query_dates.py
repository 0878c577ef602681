"""Dates a spoken query names, as recall reads them: date words the recogniser spelled in
kana or garbled are still dates; a verb written in kanji is never one, however it sounds
(通う reads カヨウ like 火曜)."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from omoide.memory.recall.robust import prepare

NOW = datetime(2026, 9, 27, 21, 0, tzinfo=ZoneInfo("Asia/Tokyo"))   # a Sunday


def _labels(text: str) -> list[str]:
    return [span.label for span in prepare(text, NOW).spans]


@pytest.mark.parametrize("text", ["ジムに通うのっていつだっけ？", "恵子と大阪でヨガに通うのっていつだっけ？",
                                  "学校に通う日って覚えてる？"])
def test_a_verb_that_sounds_like_a_weekday_is_not_a_date(text: str) -> None:
    assert _labels(text) == []


@pytest.mark.parametrize("text", ["朝って何飲んでるんだっけ", "夜って何時に寝てたっけ"])
def test_a_word_in_kanji_and_the_particle_after_it_do_not_sound_out_a_date(text: str) -> None:
    """「朝って」 reads アサッテ like 明後日, but a recogniser that heard 明後日 writes it so
    or in kana (あさって), never as 朝 and a particle."""
    assert _labels(text) == []


def test_the_day_after_tomorrow_in_kana_is_still_a_date() -> None:
    assert _labels("あさって何するんだっけ") == ["明後日"]


@pytest.mark.parametrize(("text", "label"), [
    ("かようびの予定覚えてる？", "火曜日"), ("火曜の予定覚えてる？", "火曜"),
    ("数末の予定覚えてる？", "週末"), ("ねんまつって何するんだっけ", "ねんまつ"),
    ("おとといの夜何食べたっけ", "一昨日")])
def test_a_date_word_spelled_in_kana_or_misheard_is_still_a_date(text: str, label: str) -> None:
    assert label in _labels(text)


@pytest.mark.parametrize(("text", "day"), [
    ("母の日に何送ったんだっけ", "2026-05-10"), ("ははの日のプレゼント何にしたっけ", "2026-05-10"),
    ("父の日って何あげたっけ", "2026-06-21")])
def test_mothers_and_fathers_day_are_their_sundays(text: str, day: str) -> None:
    """The second Sunday of May and the third of June; asked in the past, the last one."""
    [span] = prepare(text, NOW).spans
    assert span.start.isoformat() == day == span.end.isoformat()
