"""Rank fusion: the candidates the gate let through, ordered by reciprocal-rank fusion of
the channels (newer first on ties), memories in the profile block left out."""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from omoide.memory.config import RobustSettings
from omoide.memory.index.person_index import LexicalMatch, UserIndex
from omoide.memory.recall.robust.gate import PeopleAsked
from omoide.memory.recall.robust.query import PreparedQuery
from omoide.types import RetrievedMemory

MAX_POOL = 256
"""Candidates scored at most (the best by date and shared words), bounding the work."""


@dataclass(frozen=True)
class ChannelScores:
    """What the dense, lexical (with entity and sound) and temporal channels found."""

    dense: dict[str, float]
    lexical: dict[str, LexicalMatch]
    temporal: dict[str, float]


SAME_DAY = 0.99
"""A temporal score this high: the memory is dated on the one day the query names (a
habit on that weekday scores half)."""


SHORT_PERIOD_DAYS = 3
"""A period this short (a day, クリスマス, 三が日) names when something happened as
closely as one day does."""


DATED_THEN_BONUS = 1.0
"""Added (over ``rrf_k``) to a memory dated in the short period the query names: one
channel's first place, so that what happened then outranks what merely shares a word
with the question (「去年のクリスマス、子どもたちに何あげたっけ」 and the presents given on
the 25th, over the days spent cooking with the children)."""


def bounded_pool(candidates: set[str], lexical: dict[str, LexicalMatch],
                 temporal: dict[str, float]) -> set[str]:
    """At most :data:`MAX_POOL` candidates: the best by date and shared words."""
    if len(candidates) <= MAX_POOL:
        return candidates
    # what heapq.nlargest gives (the first met on ties), without a Python step per
    # candidate: a date range can let thousands through
    order = list(candidates)
    lex = np.fromiter(map({c: m.score for c, m in lexical.items()}.get, order,
                          itertools.repeat(np.nan)), dtype=np.float64, count=len(order))
    known = ~np.isnan(lex)
    best_lex = float(lex[known].max()) if known.any() else 1.0
    score = np.fromiter(map(temporal.get, order, itertools.repeat(0.0)), dtype=np.float64,
                        count=len(order))
    score[known] += lex[known] / best_lex
    return {order[i] for i in np.argsort(-score, kind="stable")[:MAX_POOL]}


def _ranks(scores: dict[str, float]) -> dict[str, int]:
    """Competition ranks: ties share a rank (a tie must not be broken by dict order)."""
    values = sorted(scores.values(), reverse=True)
    first: dict[float, int] = {}
    for i, v in enumerate(values):
        first.setdefault(v, i)
    return {k: first[v] for k, v in scores.items()}


def fused_scores(index: UserIndex, q: PreparedQuery, settings: RobustSettings,
                 candidates: set[str], seen: ChannelScores, asked: PeopleAsked,
                 ) -> dict[str, float]:
    """Each candidate's reciprocal-rank fusion of the channels, with a bonus for dated
    memories when the query asks when, and for memories about the people it names."""
    rrf = settings.rrf_k
    r_dense = _ranks(seen.dense)
    r_lex = _ranks({c: seen.lexical[c].score for c in candidates if c in seen.lexical})
    r_tem = _ranks({c: seen.temporal[c] for c in candidates if c in seen.temporal})
    people = asked.people
    # one day or a few named (「来週の土曜」「去年のクリスマス」): what is dated then is
    # what the utterance is about, more than a memory sharing a word with it from months
    # ago (dated by its own words: a memory only told then, or a weekday habit, scores
    # less in the temporal channel and gets no bonus)
    widest = max((s.days for s in q.spans), default=0)
    on_the_day = 0 < widest <= SHORT_PERIOD_DAYS
    full_weight = SAME_DAY / math.log2(1 + widest) if on_the_day else math.inf
    fused: dict[str, float] = {}
    for c in candidates:
        score = 0.0
        for ranks in (r_dense, r_lex, r_tem):
            if c in ranks:
                score += 1.0 / (rrf + ranks[c])
        if on_the_day and seen.temporal.get(c, 0.0) >= full_weight:
            score += DATED_THEN_BONUS / rrf
        elif q.intent.asks_when and index.has_dates(c):
            score += 0.5 / rrf
        if q.intent.asks_where_to and c in (seen.temporal if q.spans else seen.lexical) \
                and index.tells_an_outing(c):
            # (in the period named, if any: not an outing heard by a sound-alike word)
            score += 0.5 / rrf
        if people and not q.intent.asks_when and index.about(c, people, own=True):
            # (a question about when ranks by date; who said it matters less there)
            score += settings.subject_boost / rrf * asked.own_shares.get(c, 1.0)
        fused[c] = score
    return fused


def best_first(index: UserIndex, candidates: set[str], fused: dict[str, float],
               max_results: int) -> list[str]:
    """The ``max_results`` best candidates by fused score, the newer first on ties."""
    def order(c: str) -> tuple[float, float]:
        m = index.get(c)
        return (-fused[c], -(m.created_at.timestamp() if m else 0.0))

    pool: Iterable[str] = candidates
    if len(candidates) > max_results > 0:
        # only those scoring at least the max_results-th best can be chosen
        least = heapq.nlargest(max_results, map(fused.__getitem__, candidates))[-1]
        pool = [c for c in candidates if fused[c] >= least]
    return heapq.nsmallest(max_results, pool, key=order)


def retrieved(index: UserIndex, chosen: list[str], fused: dict[str, float],
              seen: ChannelScores) -> list[RetrievedMemory]:
    """The chosen memories with their fused score and each channel's score."""
    out: list[RetrievedMemory] = []
    for c in chosen:
        m = index.get(c)
        assert m is not None
        channels = {"dense": seen.dense.get(c, math.nan)}
        if c in seen.lexical:
            channels["lexical"] = seen.lexical[c].score
            channels["entity"] = seen.lexical[c].entity
        if c in seen.temporal:
            channels["temporal"] = seen.temporal[c]
        out.append(RetrievedMemory(m, fused[c], channels))
    return out
