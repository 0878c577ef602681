"""The lexical channel of a large index scores likely matches only: memories sharing a
rare word with the query, or two independent common content words. Small indexes (every
person below ``LARGE_INDEX`` memories) score every memory sharing a word.

The thresholds are lowered here so that 40 memories make a "large" index.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from omoide.memory.index import person_index as index_module
from omoide.memory.index.person_index import UserIndex
from omoide.memory.recall.robust import prepare
from omoide.types import Memory

NOW = datetime(2026, 9, 27, 21, 0, tzinfo=ZoneInfo("Asia/Tokyo"))


def _index() -> UserIndex:
    texts = ([f"あなたは蓮と寿司を{i + 2}皿食べた。" for i in range(12)]
             + [f"あなたは蓮と公園を{i + 2}周散歩した。" for i in range(12)]
             + [f"あなたは寿司を{i + 2}パック買った。" for i in range(12)]
             + [f"あなたは石垣島に{i + 2}回行った。" for i in range(4)])
    index = UserIndex("me", "Asia/Tokyo")
    for i, text in enumerate(texts):
        index.add(Memory(f"m{i:02d}", "me", text, NOW))
    return index


def _scored(index: UserIndex, query: str) -> set[str]:
    prepared = prepare(query, NOW)
    return set(index.lexical(prepared.analysis, prepared.date_words))


@pytest.fixture
def large(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_module, "LARGE_INDEX", 10)
    monkeypatch.setattr(index_module, "COMMON_SHARE", 4)   # common: in more than 10 of 40


def test_a_small_index_scores_every_memory_sharing_a_word() -> None:
    scored = _scored(_index(), "蓮と寿司のこと覚えてる？")
    assert len(scored) == 36


def test_a_large_index_scores_memories_sharing_two_common_words(large: None) -> None:
    scored = _scored(_index(), "蓮と寿司のこと覚えてる？")
    assert scored == {f"m{i:02d}" for i in range(12)}


def test_a_large_index_still_scores_every_memory_sharing_a_rare_word(large: None) -> None:
    scored = _scored(_index(), "蓮と石垣島のこと覚えてる？")
    assert {f"m{i:02d}" for i in range(36, 40)} <= scored
    assert not scored & {f"m{i:02d}" for i in range(12, 24)}   # 蓮 alone: common


def test_a_large_index_scores_a_lone_common_word_everywhere_it_occurs(large: None) -> None:
    scored = _scored(_index(), "寿司のこと覚えてる？")
    assert scored == {f"m{i:02d}" for i in range(12)} | {f"m{i:02d}" for i in range(24, 36)}


def test_a_large_index_returns_only_its_strongest_matches(
        large: None, monkeypatch: pytest.MonkeyPatch) -> None:
    prepared = prepare("蓮と寿司と石垣島のこと覚えてる？", NOW)
    every = _index().lexical(prepared.analysis, prepared.date_words)
    monkeypatch.setattr(index_module, "LEXICAL_KEEP", 5)
    kept = _index().lexical(prepared.analysis, prepared.date_words)
    assert len(every) > 5 and len(kept) == 5
    assert min(m.score for m in kept.values()) >= \
        max(m.score for k, m in every.items() if k not in kept)
