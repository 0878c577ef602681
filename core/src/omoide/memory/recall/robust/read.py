"""One robust read: the channels, the evidence gate and rank fusion, in that order.

:func:`robust_read` runs the steps of :mod:`.channels`, :mod:`.gate` and :mod:`.fusion`
and notes what each saw in a :class:`~.explanation.ReadExplanation`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from omoide.components import PersonMemory
from omoide.memory.config import RobustSettings
from omoide.memory.index.person_index import LexicalMatch, UserIndex
from omoide.memory.recall.robust.channels import (
    anchored_dates,
    date_matches,
    dense_from_store,
    dense_scores,
    live_memories,
    word_matches,
)
from omoide.memory.recall.robust.currency import current_versions, earlier_versions
from omoide.memory.recall.robust.explanation import ReadExplanation
from omoide.memory.recall.robust.fusion import (
    ChannelScores,
    best_first,
    bounded_pool,
    fused_scores,
    retrieved,
)
from omoide.memory.recall.robust.gate import (
    PeopleAsked,
    about_someone_else,
    candidates_by_evidence,
    dense_margin_gate,
    intent_refusal,
    people_asked_about,
    remark_evidence,
    shared_word_evidence,
)
from omoide.memory.recall.robust.query import PreparedQuery, states_the_quantity_asked
from omoide.types import FloatArray, RetrievedMemory


@dataclass
class RobustResult:
    """The memories a read returns, and the notes on why (:meth:`ReadExplanation.as_details`)."""

    memories: list[RetrievedMemory]
    details: dict[str, Any] = field(default_factory=dict)
    dense: dict[str, float] = field(default_factory=dict)
    """What the dense channel saw (memory id -> cosine), for the profile's view."""


async def robust_read(memory: PersonMemory, index: UserIndex, q: PreparedQuery,
                      vector: FloatArray | None, now: datetime, settings: RobustSettings,
                      max_results: int, in_profile: frozenset[str] = frozenset(),
                      ) -> RobustResult:
    """Episodic memories of ``memory``'s person to inject for ``q`` (see
    :mod:`omoide.memory.recall.robust` for the gate); ``index`` is theirs.

    ``in_profile``: ids of memories the profile block already carries; they are
    never repeated here.
    """
    why = ReadExplanation.of(q)
    why.gate = intent_refusal(q, settings)
    if why.gate is not None:
        return RobustResult([], why.as_details())
    cached = settings.dense_from_index and index.has_all_vectors
    from_store: dict[str, float] = {}
    if vector is not None and not cached:
        from_store = await dense_from_store(memory, index, vector, settings)
        why.dense_source = "store"
    candidates, lexical, temporal, asked = _gated_by_words_and_dates(
        index, q, vector, now.date(), settings, why)
    candidates = bounded_pool(candidates, lexical, temporal)
    dense, from_index = dense_scores(index, vector, settings, from_store, candidates, cached,
                                     live_memories(index))
    if from_index:
        why.dense_source = "index"
    _note_dense_margins(why, dense)
    if not candidates:
        candidates, gate = dense_margin_gate(index, q, settings, dense, asked.people,
                                             now.date())
        why.gate = gate if gate is not None else why.gate
    if not candidates:
        return RobustResult([], why.as_details(), dense)
    return _ranked(index, q, settings, candidates, ChannelScores(dense, lexical, temporal),
                   asked, in_profile, max_results, why)


def _text(index: UserIndex, memory_id: str) -> str:
    m = index.get(memory_id)
    return m.text if m is not None else ""


def _gated_by_words_and_dates(
        index: UserIndex, q: PreparedQuery, vector: FloatArray | None, today: date,
        settings: RobustSettings, why: ReadExplanation,
) -> tuple[set[str], dict[str, LexicalMatch], dict[str, float], PeopleAsked]:
    """The candidates the word and date evidence let through (and the subject check
    keeps), with the lexical and temporal channels as the gate left them."""
    contextual = not q.intent.recall
    # a question about a thing (「1ガロンって何リットルだっけ」) hangs on the words it
    # names, as a remark does: not on fragments (国 of 韓国) or one word of many
    strict = contextual or q.intent.impersonal
    lexical, why.heard = word_matches(index, q, settings, contextual)
    dates = date_matches(index, q, settings, contextual)
    if dates.fallback is not None:
        why.weekend_fallback = dates.fallback.start.isoformat()
    lex_nouns = shared_word_evidence(lexical, settings, strict)
    temporal = dates.temporal or anchored_dates(index, q, lex_nouns, settings, today)
    if contextual:
        remark = remark_evidence(index, q, settings, lex_nouns, temporal, dates.widest, today)
        lex_nouns, temporal = remark.lex_nouns, remark.temporal
        if remark.shared_words_ignored:
            why.shared_words_ignored = "a plain question, not about a plan to come"
    candidates, gate = candidates_by_evidence(temporal, lex_nouns, settings)
    why.gate = "about: " + gate if contextual else gate
    if q.beyond_topic and candidates:
        asked_after = set(q.beyond_topic)
        candidates = {c for c in candidates
                      if (c in lexical and asked_after & set(lexical[c].matched))
                      or states_the_quantity_asked(q, _text(index, c))}
        if not candidates:
            why.gate = "a thing named: nothing shares what is asked about it"
    asked = people_asked_about(index, q, settings, candidates)
    if asked.people and candidates and \
            about_someone_else(index, q, vector, settings, candidates, asked):
        why.gate = "about someone else"
        candidates = set()
    return candidates, lexical, temporal, asked


def _note_dense_margins(why: ReadExplanation, dense: dict[str, float]) -> None:
    top = sorted(dense.values(), reverse=True)
    if len(top) >= 2:
        why.dense_margin = round(top[0] - top[1], 4)
        why.dense_spread = round(top[0] - top[len(top) // 2], 4)


def _ranked(index: UserIndex, q: PreparedQuery, settings: RobustSettings, candidates: set[str],
            seen: ChannelScores, asked: PeopleAsked, in_profile: frozenset[str],
            max_results: int, why: ReadExplanation) -> RobustResult:
    """The best candidates by rank fusion, leaving out those in the profile block."""
    if settings.fill_from_dense:
        candidates = candidates | set(seen.dense)
    fused = fused_scores(index, q, settings, candidates, seen, asked)
    candidates, fused, swapped = current_versions(index, q, candidates, fused)
    if swapped:
        why.current_versions = swapped
    candidates, fused, brought = earlier_versions(index, q, candidates, fused)
    if brought:
        why.earlier_versions = brought
    answered = candidates & in_profile
    if answered:
        why.in_profile = len(answered)
    chosen = best_first(index, candidates - in_profile, fused, max_results)
    why.matched = {c: list(seen.lexical[c].matched) for c in chosen if c in seen.lexical}
    return RobustResult(retrieved(index, chosen, fused, seen), why.as_details(), seen.dense)
