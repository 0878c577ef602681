"""A person's memory vocabulary: the words speech recognition is biased towards.

Taken from the per-user index (no store call, no analysis: the index already holds
each memory's content words). Names come first — the entities the extraction
reported and the proper nouns of the memories (people, pets, places) — then the
other nouns (ラーメン, ギター), each tier ordered by how many live memories mention
the word, then by how recently. Superseded memories do not count.

Ranking 10,000 memories takes about 25 ms, so the result is cached per index and
recomputed only after the index changed (:attr:`UserIndex.revision`).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from omoide.memory.index import UserIndex

NAME_TIER = 0
NOUN_TIER = 1
MIN_CHARS = 2
"""Shorter words (本, 犬) bias a recogniser towards nothing in particular."""
NOUN_WEIGHT = 1.0
"""The index's weight of a common noun (verbs and adjectives weigh less)."""


_CACHE: weakref.WeakKeyDictionary[UserIndex, tuple[int, int, list[str]]] = \
    weakref.WeakKeyDictionary()


def cached_recognition_vocabulary(index: UserIndex, limit: int) -> list[str]:
    """:func:`recognition_vocabulary`, recomputed only when ``index`` or ``limit`` changed."""
    hit = _CACHE.get(index)
    if hit is not None and hit[0] == index.revision and hit[1] == limit:
        return list(hit[2])
    words = recognition_vocabulary(index, limit)
    _CACHE[index] = (index.revision, limit, words)
    return list(words)


@dataclass
class _Tally:
    tier: int
    count: int
    latest: float


def recognition_vocabulary(index: UserIndex, limit: int) -> list[str]:
    """Up to ``limit`` words of the memories in ``index``, most useful first."""
    if limit <= 0:
        return []
    tallies: dict[str, _Tally] = {}
    for memory in index.memories():
        if memory.superseded_by:
            continue
        at = memory.created_at.timestamp()
        words: dict[str, int] = {e.strip(): NAME_TIER for e in memory.entities}
        for term in index.terms(memory.id):
            if term.proper:
                words[term.surface] = NAME_TIER
            elif term.weight >= NOUN_WEIGHT:
                words.setdefault(term.surface, NOUN_TIER)
        for word, tier in words.items():
            if len(word) < MIN_CHARS:
                continue
            tally = tallies.get(word)
            if tally is None:
                tallies[word] = _Tally(tier, 1, at)
            else:
                tally.tier = min(tally.tier, tier)
                tally.count += 1
                tally.latest = max(tally.latest, at)
    ranked = sorted(tallies.items(), key=lambda kv: (kv[1].tier, -kv[1].count, -kv[1].latest))
    return [word for word, _ in ranked[:limit]]
