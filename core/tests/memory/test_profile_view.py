"""The profile block is a view: a lasting fact the budget left out comes in for the turn
that is about it, in place of a less important one, and never for a command or a question
about a thing. Safety facts always stay.
"""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pytest

from omoide.components import Profile
from omoide.memory.facts.profile import (
    Category,
    ProfileFact,
    line_text,
    select_profile,
    with_relevant,
)
from omoide.memory.index.person_index import UserIndex
from omoide.memory.recall.robust import profile_view
from omoide.memory.recall.robust.profile_view import about_the_person, relevant_overflow
from omoide.memory.recall.robust.query import prepare
from omoide.types import Memory

NOW = datetime.fromisoformat("2027-09-28T21:00:00+09:00")
FACTS = {
    "allergy": (Category.HEALTH, "あなたはペニシリンにアレルギーがある。"),
    "job": (Category.WORK, "あなたは看護師として病院に勤めている。"),
    "coffee": (Category.LIKE, "あなたはブラックコーヒーが好きだ。"),
    "plant": (Category.HABIT, "あなたは部屋でモンステラを育てていて、「モンちゃん」と呼んでいる。"),
    "bedtime": (Category.HABIT, "あなたは夜は12時前に寝るようにしている。"),
}


def _fact(mid: str) -> ProfileFact:
    category, text = FACTS[mid]
    return ProfileFact(Memory(mid, "u", text, NOW), category)


def _profile(budget_facts: int) -> Profile:
    """The profile with room for the first ``budget_facts`` facts in order of importance."""
    facts = [_fact(m) for m in FACTS]
    ordered = sorted(facts, key=lambda f: f.priority)
    budget = sum(len(line_text(f)) for f in ordered[:budget_facts])
    return select_profile(facts, budget)


def _unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(32).astype(np.float32)
    return v / np.linalg.norm(v)


def test_an_overflow_fact_comes_in_for_the_least_important_one() -> None:
    profile = _profile(3)
    assert "plant" not in profile.ids
    view = with_relevant(profile, ["plant"])
    assert "plant" in view.ids
    assert "allergy" in view.ids          # safety stays
    assert view.chars <= profile.budget_chars
    assert len(view.facts) + len(view.overflow) == len(profile.facts) + len(profile.overflow)


def test_nothing_relevant_leaves_the_profile_as_it_was() -> None:
    profile = _profile(3)
    assert with_relevant(profile, []) is profile
    assert with_relevant(profile, ["job"]) is profile   # already in the block


def test_the_overflow_fact_closest_by_meaning_is_the_relevant_one() -> None:
    profile = _profile(3)
    vectors = {m: _unit(i) for i, m in enumerate(FACTS)}
    index = UserIndex("u", "Asia/Tokyo")
    for f in (*profile.facts, *profile.overflow):
        index.add(f.memory, vectors[f.memory.id])
    query = vectors["plant"]
    dense = {"job": float(vectors["job"] @ query)}
    assert relevant_overflow(index, profile, query, dense) == ["plant"]


def test_an_overflow_fact_farther_than_what_the_dense_channel_found_stays_out() -> None:
    profile = _profile(3)
    vectors = {m: _unit(i) for i, m in enumerate(FACTS)}
    index = UserIndex("u", "Asia/Tokyo")
    for f in (*profile.facts, *profile.overflow):
        index.add(f.memory, vectors[f.memory.id])
    query = vectors["job"]
    assert relevant_overflow(index, profile, query, {"job": 1.0}) == []


def test_only_an_utterance_about_the_person_reshapes_the_block() -> None:
    assert about_the_person(prepare("最近何時ごろに寝るようにしてるんだっけ", NOW))
    assert not about_the_person(prepare("15分たったら教えて", NOW))
    assert not about_the_person(prepare("1ガロンって何リットルだっけ", NOW))


def test_a_large_index_weighs_only_the_overflow_facts_the_dense_channel_saw(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(profile_view, "LARGE_INDEX", 2)   # this index of five counts as large
    profile = _profile(3)
    vectors = {m: _unit(i) for i, m in enumerate(FACTS)}
    index = UserIndex("u", "Asia/Tokyo")
    for f in (*profile.facts, *profile.overflow):
        index.add(f.memory, vectors[f.memory.id])
    query = vectors["plant"]
    assert relevant_overflow(index, profile, query, {"job": 0.1}) == []
    assert relevant_overflow(index, profile, query, {"plant": 1.0}) == ["plant"]
