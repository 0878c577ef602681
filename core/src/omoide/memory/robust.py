"""The robust read engine: channels, rank fusion and an evidence gate.

1. The query copy is canonical (NFKC) with fillers and trailing marks stripped,
   so 「週末の予定覚えてる?」, 「…？」 and 「…」 are one query.
2. Channels: dense (the embedder's query form vs the documents), lexical (Sudachi
   content words, readings and kanji; idf-weighted), entity (the names among
   them), temporal (the query's relative dates resolved against now, matched
   against each memory's dates; weekday habits for today/tomorrow).
3. Gate, on evidence rather than one cosine: nothing unless the user refers to
   their own memories (:mod:`omoide.memory.intent`); then candidates are the
   memories in the query's date range (narrowed by shared words when there are
   any), else the memories sharing content words with the query. Dense evidence
   alone injects one memory only when it stands clearly apart from the rest
   (``dense_only_ratio``), never on a fixed cosine.
4. Candidates are ordered by reciprocal-rank fusion of the channels (newer first
   on ties); superseded memories never appear; at most ``max_results``.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from omoide.components import VectorStore
from omoide.memory.config import RobustSettings
from omoide.memory.index import LexicalMatch, UserIndex
from omoide.memory.intent import Intent, detect
from omoide.memory.lexicon import Analysis, analyzer, rewrite_temporal_reading
from omoide.memory.records import from_payload
from omoide.memory.temporal import DateSpan, resolve
from omoide.memory.text import canonical, query_copy
from omoide.types import FloatArray, Memory, RetrievedMemory


@dataclass(frozen=True)
class PreparedQuery:
    """Everything about the query that does not need the store or the embedding."""

    text: str
    intent: Intent
    analysis: Analysis
    spans: tuple[DateSpan, ...]
    date_words: tuple[str, ...] = ()
    """The date expressions and their readings, left out of the lexical channel."""


def prepare(query: str, now: datetime) -> PreparedQuery:
    text = query_copy(query)
    intent = detect(canonical(query))
    analysis = analyzer().analyse(text, query=True)
    spans = tuple(resolve(analysis.temporal_text, now.date()))
    if not spans and analysis.reading:
        spans = tuple(resolve(rewrite_temporal_reading(analysis.reading), now.date()))
    labels = {s.label for s in spans}
    exclude = tuple(labels | {analyzer().reading_of(label) for label in labels})
    return PreparedQuery(text, intent, analysis, spans, exclude)


@dataclass
class RobustResult:
    memories: list[RetrievedMemory]
    details: dict[str, Any] = field(default_factory=dict)


MAX_POOL = 256
"""Candidates scored at most (the best by date and shared words), bounding the work."""


def _ranks(scores: dict[str, float]) -> dict[str, int]:
    """Competition ranks: ties share a rank (a tie must not be broken by dict order)."""
    values = sorted(scores.values(), reverse=True)
    first: dict[float, int] = {}
    for i, v in enumerate(values):
        first.setdefault(v, i)
    return {k: first[v] for k, v in scores.items()}


async def robust_read(store: VectorStore, index: UserIndex, user: str, q: PreparedQuery,
                      vector: FloatArray | None, now: datetime, settings: RobustSettings,
                      max_results: int) -> RobustResult:
    details: dict[str, Any] = {
        "query": q.text, "recall_intent": q.intent.recall,
        "date_ranges": [(s.start.isoformat(), s.end.isoformat(), s.label) for s in q.spans]}
    if settings.require_recall_intent and not q.intent.recall:
        details["gate"] = "no recall intent"
        return RobustResult([], details)

    cached = settings.dense_from_index and index.has_all_vectors
    dense: dict[str, float] = {}
    if vector is not None and not cached:
        for hit in await store.search(user, vector, settings.dense_candidates):
            dense[hit.id] = hit.score
            if hit.id not in index:
                index.add(from_payload(hit.id, hit.payload))
        details["dense_source"] = "store"

    def live(mid: str) -> Memory | None:
        m = index.get(mid)
        return m if m is not None and not m.superseded_by else None

    lexical: dict[str, LexicalMatch] = {
        k: v for k, v in index.lexical(q.analysis, q.date_words).items()
        if live(k)}
    use_dates = bool(q.spans) and not q.intent.calendar
    temporal = {k: v for k, v in index.temporal(q.spans if use_dates else ()).items()
                if live(k)}
    # Shared words count as evidence when they cover most of what the query asks
    # about: 「TOEICって何点満点」 shares TOEIC with a plan but asks about 満点.
    lex_nouns = {k: v.nouns for k, v in lexical.items()
                 if v.nouns > 0 and v.coverage >= settings.min_coverage}

    if temporal:
        both = set(temporal) & set(lex_nouns)
        if both:
            candidates = both
            details["gate"] = "date range and shared words"
        elif lex_nouns:
            # nothing in range shares a word: the date may be off (a moved plan, a
            # misheard day), so the word matches compete with the date matches
            best = max(lex_nouns.values())
            candidates = set(temporal) | {
                k for k, v in lex_nouns.items() if v >= settings.lexical_keep_ratio * best}
            details["gate"] = "date range or shared words"
        else:
            candidates = set(temporal)
            details["gate"] = "date range"
    elif lex_nouns:
        best = max(lex_nouns.values())
        candidates = {k for k, v in lex_nouns.items() if v >= settings.lexical_keep_ratio * best}
        details["gate"] = "shared words"
    else:
        candidates = set()
        details["gate"] = "no evidence"

    if len(candidates) > MAX_POOL:
        best_lex = max((lexical[c].score for c in candidates if c in lexical), default=1.0)
        candidates = set(heapq.nlargest(
            MAX_POOL, candidates, key=lambda c: temporal.get(c, 0.0)
            + (lexical[c].score / best_lex if c in lexical else 0.0)))
    if vector is not None and cached and (not candidates or settings.fill_from_dense):
        # The user's vectors are cached with the index (built from the store's scroll
        # of this user only): one matrix product instead of a store round trip. Only
        # needed when dense evidence may decide; otherwise candidates are scored alone.
        dense = index.dense_top(vector, settings.dense_candidates)
        details["dense_source"] = "index"
    if vector is not None:
        missing = [c for c in candidates if c not in dense]
        dense.update(index.cosine(missing, vector))
    dense = {k: v for k, v in dense.items() if live(k)}

    top = sorted(dense.values(), reverse=True)
    if len(top) >= 2:
        details["dense_margin"] = round(top[0] - top[1], 4)
        details["dense_spread"] = round(top[0] - top[len(top) // 2], 4)
    if not candidates and settings.dense_only_ratio is not None and len(top) >= 3:
        spread = top[0] - top[len(top) // 2]
        if spread > 0 and top[0] - top[1] >= settings.dense_only_ratio * spread:
            candidates = {max(dense, key=lambda k: dense[k])}
            details["gate"] = "dense margin"

    if not candidates:
        return RobustResult([], details)

    if settings.fill_from_dense:
        candidates = candidates | set(dense)
    k = settings.rrf_k
    r_dense = _ranks(dense)
    r_lex = _ranks({c: lexical[c].score for c in candidates if c in lexical})
    r_tem = _ranks({c: temporal[c] for c in candidates if c in temporal})
    fused: dict[str, float] = {}
    for c in candidates:
        score = 0.0
        for ranks in (r_dense, r_lex, r_tem):
            if c in ranks:
                score += 1.0 / (k + ranks[c])
        if q.intent.asks_when and index.has_dates(c):
            score += 0.5 / k
        fused[c] = score

    def order(c: str) -> tuple[float, float]:
        m = index.get(c)
        return (-fused[c], -(m.created_at.timestamp() if m else 0.0))

    chosen = heapq.nsmallest(max_results, candidates, key=order)
    out: list[RetrievedMemory] = []
    for c in chosen:
        m = index.get(c)
        assert m is not None
        channels = {"dense": dense.get(c, math.nan)}
        if c in lexical:
            channels["lexical"] = lexical[c].score
            channels["entity"] = lexical[c].entity
        if c in temporal:
            channels["temporal"] = temporal[c]
        out.append(RetrievedMemory(m, fused[c], channels))
    return RobustResult(out, details)
