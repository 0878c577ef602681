"""The robust engine's channels: what each kind of evidence finds among a person's memories.

- dense: the embedder's query form against the documents (from a store search, or from
  the vectors the index caches);
- lexical: Sudachi content words, readings and kanji, idf-weighted; the entity channel
  is the names among them (:attr:`LexicalMatch.entity`);
- sound: the person's own words heard approximately in the query (数末 for 週末), merged
  into the lexical matches;
- temporal: the query's date ranges matched against each memory's dates.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from omoide.components import PersonMemory
from omoide.memory.config import RobustSettings
from omoide.memory.index.person_index import LexicalMatch, UserIndex
from omoide.memory.language.phonetic import heard_as_a_name, sound_key
from omoide.memory.language.temporal import DateSpan
from omoide.memory.language.tense import Anchor
from omoide.memory.recall.robust.query import PreparedQuery
from omoide.types import FloatArray

Live = Callable[[str], bool]
"""Whether a memory id may be recalled (indexed and not superseded)."""


def live_memories(index: UserIndex) -> Live:
    """The test of a memory id being recallable from ``index`` as it is now."""
    superseded = index.superseded

    def live(mid: str) -> bool:
        return mid not in superseded and mid in index

    return live


async def dense_from_store(memory: PersonMemory, index: UserIndex, vector: FloatArray,
                           settings: RobustSettings) -> dict[str, float]:
    """Dense scores of the store's nearest memories; those the index lacks are added to
    it, so the other channels judge them too."""
    dense: dict[str, float] = {}
    for hit in await memory.search(vector, settings.dense_candidates):
        dense[hit.memory.id] = hit.score
        if hit.memory.id not in index:
            index.add(hit.memory)
    return dense


def _merged(old: LexicalMatch | None, heard: LexicalMatch) -> LexicalMatch:
    if old is None:
        return heard
    return LexicalMatch(old.score + heard.score, old.nouns + heard.nouns, old.entity,
                        old.matched + heard.matched, max(old.coverage, heard.coverage),
                        old.exact + heard.exact)


def word_matches(index: UserIndex, q: PreparedQuery, settings: RobustSettings,
                 contextual: bool) -> tuple[dict[str, LexicalMatch], list[str] | None]:
    """The lexical channel, with words heard by sound added; and the words heard (None
    when nothing was heard).

    Words heard by sound count as shared words when the user asks about their memories,
    or speaks of their own situation (「タルマやまって寒いかな」) and the word heard is long
    enough to be sure of (a remark must not hang on two morae); for a question about a
    thing (「1ガロンって何リットルだっけ」), only words heard as whole nouns.
    """
    lexical = index.live_only(index.lexical(q.analysis, q.date_words))
    if not settings.sound_matching or (contextual and not q.intent.personal):
        return lexical, None
    heard = index.live_only(index.sounds(
        q.analysis, _date_sounds(q, index),
        min_length=settings.context_sound_letters if contextual else 0))
    if q.intent.impersonal:
        # a question about a thing hangs on the thing's name: heard, it must be heard
        # as whole nouns, not pieced from a noun and the words after it
        a = q.analysis
        heard = {k: v for k, v in heard.items()
                 if any(heard_as_a_name(w, a.sound, a.noun_runs) for w in v.matched)}
    heard_words = sorted({w for v in heard.values() for w in v.matched}) if heard else None
    for mid, v in heard.items():
        lexical[mid] = _merged(lexical.get(mid), v)
    return lexical, heard_words


def _date_sounds(q: PreparedQuery, index: UserIndex) -> set[str]:
    """Sound keys the query's own date words account for (the temporal channel has
    them): the words' keys and every vocabulary key inside them (ゴールデン, ボン)."""
    keys = {k for k in (sound_key(w) for w in q.date_words) if k}
    if not keys:
        return set()
    return {v for v in index.sound_keys() if any(v in k for k in keys)} | keys


_FALLBACK_WEEKENDS = frozenset({"週末", "この週末", "土日"})


def weekend_fallback(index: UserIndex, spans: tuple[DateSpan, ...],
                     live: set[str] | None = None, weeks: int = 8) -> DateSpan | None:
    """「週末」 with nothing planned this weekend: the nearest later weekend with a plan.

    Only for the bare word (週末, 土日): 今週末 and 来週末 name their weekend. ``live``
    restricts the memories that count (superseded ones do not).
    """
    weekends = [s for s in spans if s.label in _FALLBACK_WEEKENDS]
    if not weekends or len(weekends) != len(spans):
        return None
    if any(index.dated_in(s, 8) & live if live is not None else index.dated_in(s, 8)
           for s in weekends):
        return None  # this weekend has a plan
    last = max(weekends, key=lambda s: s.start)
    for k in range(1, weeks + 1):
        shifted = DateSpan(last.start + timedelta(weeks=k), last.end + timedelta(weeks=k),
                           last.label)
        found = index.dated_in(shifted, 8)
        if live is not None:
            found &= live
        if found:
            return shifted
    return None


@dataclass(frozen=True)
class DateMatches:
    """The temporal channel for one query."""

    temporal: dict[str, float]
    """Memories dated within the query's ranges, and how well."""
    widest: int
    """Days in the widest range asked about."""
    fallback: DateSpan | None
    """The later weekend used for a bare 「週末」 with nothing planned this one."""


def date_matches(index: UserIndex, q: PreparedQuery, settings: RobustSettings,
                 contextual: bool) -> DateMatches:
    """The temporal channel: memories dated in the query's ranges (none for a question
    about the calendar itself)."""
    spans = q.spans
    use_dates = bool(spans) and not q.intent.calendar
    fallback = weekend_fallback(index, spans) if use_dates and not contextual else None
    if fallback is not None:
        spans = (fallback,)
    widest = max((s.days for s in spans), default=0)
    # A memory about a wider range than asked (「正月」 for 「今日」, a month for a
    # weekend) is not about that day.
    max_memory_days = settings.context_span_days if contextual else max(8, 4 * widest)
    temporal = index.live_only(index.temporal(spans if use_dates else (),
                                              max_memory_days=max_memory_days))
    return DateMatches(temporal, widest, fallback)


def anchored_dates(index: UserIndex, q: PreparedQuery, lex_nouns: dict[str, float],
                   settings: RobustSettings, today: date) -> dict[str, float]:
    """この前 / 前回 / 初めて with no date named: among the memories the query's words
    match best, the dated ones already past, those told on the latest day (この前) or
    the first (初めて) — the same shop visited six times has one この前.

    Plans still to come are left out, and so are memories with no date or that tell
    what lasts (a liking is not a visit: 「渡辺さんは釣りが趣味だ」 is no first fishing)."""
    if q.anchor is None or q.spans or not lex_nouns:
        return {}
    best = max(lex_nouns.values())
    told = {k: index.get(k) for k, v in lex_nouns.items()
            if v >= settings.lexical_keep_ratio * best and index.has_dates(k)
            and index.tells_an_event(k)
            and not index.ahead(k, today) and not _dated_after(index, k, today)}
    days = {k: m.created_at.date() for k, m in told.items() if m is not None}
    if not days:
        return {}
    pick = max if q.anchor is Anchor.LATEST else min
    day = pick(days.values())
    return {k: 1.0 for k, d in days.items() if d == day}


def _dated_after(index: UserIndex, memory_id: str, today: date) -> bool:
    """Whether a memory has a date after ``today`` (「来週までに持ってくるよう頼まれた」
    is told in the past tense but is about a day to come)."""
    return index.upcoming(memory_id, today + timedelta(days=1), 0, 36500)


def dense_scores(index: UserIndex, vector: FloatArray | None, settings: RobustSettings,
                 from_store: dict[str, float], candidates: set[str], cached: bool,
                 live: Live) -> tuple[dict[str, float], bool]:
    """The dense channel over the live memories, and whether it came from the index.

    The user's vectors are cached with the index (built from the store's scroll of this
    user only): one matrix product instead of a store round trip, only when dense
    evidence may decide; otherwise the candidates are scored alone.
    """
    dense, from_index = from_store, False
    if vector is not None and cached and (not candidates or settings.fill_from_dense):
        dense, from_index = index.dense_top(vector, settings.dense_candidates), True
    if vector is not None:
        missing = [c for c in candidates if c not in dense]
        dense.update(index.cosine(missing, vector))
    return {k: v for k, v in dense.items() if live(k)}, from_index


def explain(index: UserIndex, q: PreparedQuery, vector: FloatArray | None,
            memory_ids: list[str]) -> dict[str, dict[str, Any]]:
    """What each channel saw of some memories for ``q`` (for ``omoide eval --misses``):
    dense cosine, lexical score and the words shared, the sound matches, the date match."""
    lexical = index.lexical(q.analysis, q.date_words, only=set(memory_ids))
    heard = index.sounds(q.analysis)
    temporal = index.temporal(q.spans) if q.spans else {}
    dense = index.cosine(memory_ids, vector) if vector is not None else {}
    out: dict[str, dict[str, Any]] = {}
    for mid in memory_ids:
        row: dict[str, Any] = {}
        if mid in dense:
            row["dense"] = round(dense[mid], 3)
        if mid in lexical:
            row["lexical"] = round(lexical[mid].score, 3)
            row["shared"] = list(lexical[mid].matched)
        if mid in heard:
            row["heard"] = list(heard[mid].matched)
        if mid in temporal:
            row["temporal"] = round(temporal[mid], 3)
        out[mid] = row
    return out
