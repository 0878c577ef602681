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
from omoide.memory.recall.robust.currency import (
    asks_about_before,
    current_versions,
    earlier_versions,
)
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
from omoide.memory.recall.robust.query import (
    PreparedQuery,
    doings_asked,
    states_the_quantity_asked,
    tells_a_beginning,
)
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
        if q.asks_since and candidates:
            # (the closest memory by meaning too must say since when)
            candidates = _telling_a_beginning(index, q, candidates, now.date(), why)
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
    candidates = _answering_the_thing_asked(index, q, lexical, candidates, today, why)
    if not contextual:
        # (after: the fact filling the slot asked answers whatever words it shares)
        candidates = _what_holds_asked(index, q, lexical, candidates, why)
    if q.asks_since and candidates:
        candidates = _telling_a_beginning(index, q, candidates, today, why)
    asked = people_asked_about(index, q, settings, candidates)
    if asked.people and candidates and \
            about_someone_else(index, q, vector, settings, candidates, asked):
        why.gate = "about someone else"
        candidates = set()
    return candidates, lexical, temporal, asked


def _telling_a_beginning(index: UserIndex, q: PreparedQuery, candidates: set[str],
                         today: date, why: ReadExplanation) -> set[str]:
    """For a question asking since when (:attr:`PreparedQuery.asks_since`): the candidates
    that tell a beginning (:func:`~.query.tells_a_beginning`), or plans still to come
    (「別府っていつから行くんだっけ」: the trip's dates answer it)."""
    doings = doings_asked(q)
    kept = {c for c in candidates
            if index.ahead(c, today) or tells_a_beginning(_text(index, c), doings)}
    if not kept:
        why.gate = "since when: nothing tells a beginning"
    return kept


def _what_holds_asked(index: UserIndex, q: PreparedQuery, lexical: dict[str, LexicalMatch],
                      candidates: set[str], why: ReadExplanation) -> set[str]:
    """A question about a habit or a slot (job, home): with no other evidence, the habits
    sharing its verb; and the fact filling the slot, whatever words it shares."""
    if not candidates:
        candidates = habits_asked(index, q, lexical)
        if candidates:
            why.gate = "a habit asked"
    held = slot_filled(index, q)
    if held:
        # 「今どこで働いてるんだっけ」: the fact that fills the job now answers, whatever
        # words it shares (「外来で働き始め」); asked about before, it brings the old ones
        why.slot_asked = q.slot[1] if q.slot else None
        if not candidates:
            why.gate = "a slot asked: " + (why.slot_asked or "")
        candidates = candidates | held
    return candidates


def _answering_the_thing_asked(index: UserIndex, q: PreparedQuery,
                               lexical: dict[str, LexicalMatch], candidates: set[str],
                               today: date, why: ReadExplanation) -> set[str]:
    """For a question about a thing it names (:attr:`PreparedQuery.topic_head`,
    :attr:`PreparedQuery.beyond_topic`, :attr:`PreparedQuery.asked_of_the_thing`), the
    candidates that name it and tell what it asks."""
    if q.beyond_topic and candidates:
        asked_after = set(q.beyond_topic)
        candidates = {c for c in candidates
                      if (c in lexical and asked_after & set(lexical[c].matched))
                      or states_the_quantity_asked(q, _text(index, c))}
        if not candidates:
            why.gate = "a thing named: nothing shares what is asked about it"
    if q.topic_head and candidates and not why.heard:
        candidates = {c for c in candidates
                      if any(all(_names(index, lexical, c, w) for w in words)
                             for words in q.topic_head)}
        if not candidates:
            why.gate = "a thing named: nothing names it"
    topic, after = q.asked_of_the_thing
    # (words heard by sound: the recogniser garbled the question, its verb perhaps)
    if after and candidates and not why.heard:
        candidates = {c for c in candidates if index.ahead(c, today) or (
            c in lexical and set(topic) & set(lexical[c].matched)
            and any(_names(index, lexical, c, w) for w in after))}
        if not candidates:
            why.gate = "a thing named: no plan names it, nothing tells what is asked of it"
    return candidates


def _names(index: UserIndex, lexical: dict[str, LexicalMatch], memory_id: str,
           word: str) -> bool:
    """Whether a memory shares ``word`` with the query (as the lexical channel matched
    it) or spells it."""
    return (memory_id in lexical and word in lexical[memory_id].matched) or \
        word in _text(index, memory_id)


SLOT_BONUS = 1.0
"""Added (over ``rrf_k``) to the fused score of the fact filling the slot asked about:
above one channel's first place, so the current job outranks memories merely sharing
its words."""


def slot_filled(index: UserIndex, q: PreparedQuery) -> set[str]:
    """The memories filling the slot ``q`` asks about (:attr:`PreparedQuery.slot`), now."""
    if q.slot is None:
        return set()
    live = live_memories(index)
    return {m for m in index.slot_holders(*q.slot) if live(m)}


MAX_HABITS = 2
"""A question about a habit (「朝って何飲んでるんだっけ」) whose only shared word is its
verb gets the habits that share it, when there are at most this many."""


def habits_asked(index: UserIndex, q: PreparedQuery,
                 lexical: dict[str, LexicalMatch]) -> set[str]:
    """「朝って何飲んでるんだっけ」 shares no noun with 「毎朝コーヒーを飲むのが習慣だ」, only
    its verb: among the memories sharing the query's words, the few that state a habit or
    a state (not an event, not a plan). A habit given up since gives way to what replaced
    it (「コーヒーをやめて朝は白湯を飲むようにした」) when ranked, unless the question
    asks about before (:mod:`.currency`)."""
    if not q.intent.wh or q.intent.impersonal or q.beyond_topic:
        return set()
    found = {k for k, v in lexical.items() if v.score > 0 and index.states_a_habit(k)
             and k not in index.superseded}
    # (a habit and the one that replaced it are one habit told twice)
    habits = found if asks_about_before(q) else {index.current_version(k) for k in found}
    return found if len(habits) <= MAX_HABITS else set()


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
    for c in slot_filled(index, q) & candidates:
        fused[c] += SLOT_BONUS / settings.rrf_k
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
