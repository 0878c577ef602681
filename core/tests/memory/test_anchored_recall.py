"""この前 / 初めて among repeated events: the latest (or the first) visit, not any."""

from __future__ import annotations

from datetime import datetime

from omoide.memory.config import RobustSettings
from omoide.memory.index.person_index import UserIndex
from omoide.memory.recall.robust.channels import anchored_dates
from omoide.memory.recall.robust.gate import shared_word_evidence
from omoide.memory.recall.robust.query import prepare
from omoide.types import Memory

NOW = datetime.fromisoformat("2027-09-28T21:00:00+09:00")
VISITS = {
    "first": ("2027-02-27", "あなたは航平と「珈琲ラルゴ」に行き、チーズケーキを頼んだ。"),
    "middle": ("2027-07-24", "あなたは「珈琲ラルゴ」で白桃のパフェを食べた。"),
    "latest": ("2027-09-11", "あなたは真希と「珈琲ラルゴ」で会い、ナポリタンを食べた。"),
    "plan": ("2027-09-26", "あなたは来週の土曜日（2027年10月2日）に「珈琲ラルゴ」へ行く予定だ。"),
    "liking": ("2027-09-27", "あなたは「珈琲ラルゴ」のナポリタンが好きだ。"),
}


def _index() -> UserIndex:
    index = UserIndex("u", "Asia/Tokyo")
    for mid, (day, text) in VISITS.items():
        index.add(Memory(id=mid, user="u", text=text,
                         created_at=datetime.fromisoformat(day + "T20:00:00+09:00")))
    return index


def _anchored(query: str) -> set[str]:
    index, q, settings = _index(), prepare(query, NOW), RobustSettings()
    lex_nouns = shared_word_evidence(index.lexical(q.analysis, q.date_words), settings, False)
    return set(anchored_dates(index, q, lex_nouns, settings, NOW.date()))


def test_kono_mae_is_the_latest_visit_already_past() -> None:
    assert _anchored("この前ラルゴで何食べたっけ") == {"latest"}
    assert _anchored("こないだラルゴ行ったとき誰と一緒だった?") == {"latest"}


def test_hajimete_is_the_first_visit() -> None:
    assert _anchored("初めてラルゴに行ったとき何頼んだっけ") == {"first"}


def test_without_an_anchor_no_visit_is_preferred() -> None:
    assert _anchored("ラルゴで何食べたっけ") == set()


def test_an_anchored_question_about_something_done_is_about_the_users_past() -> None:
    assert prepare("こないだラルゴ行ったとき誰と一緒だった?", NOW).intent.recall
    assert not prepare("日本で一番高い山は？", NOW).intent.recall
