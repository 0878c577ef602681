"""The robust read engine: channels, rank fusion and an evidence gate.

1. The query copy is canonical (NFKC) with fillers and trailing marks stripped,
   so 「週末の予定覚えてる?」, 「…？」 and 「…」 are one query; its reading (katakana)
   and sound key (:mod:`omoide.memory.language.phonetic`) are taken too.
2. Channels: dense (the embedder's query form vs the documents), lexical (Sudachi
   content words, readings and kanji; idf-weighted), sound (the person's own words
   heard approximately in the query: 数末 for 週末, セミ for ゼミ), entity (the names
   among them), temporal (the query's relative dates resolved against now, matched
   against each memory's dates; weekday habits for today/tomorrow; spoken date words
   also found by sound).
3. Gate, on evidence rather than one cosine, by what the utterance is
   (:mod:`omoide.memory.recall.intent`):

   - a command or a question about the world gets nothing;
   - a reference to the user's own memories (覚えてる, 〜だっけ, 予定, 私の…) gets the
     memories in the query's date range (narrowed by shared words when there are
     any), else those sharing words with it (exactly or by sound); dense evidence
     alone injects one memory only when it stands clearly apart (``dense_only_ratio``);
     「週末」 with nothing this weekend means the nearest weekend with a plan;
   - anything else about the user's life (contextual recall: 「箱根って寒いかな」
     「金曜日何時に帰れるかな」) gets the memories sharing a noun with it exactly,
     or dated within a few days it names.

4. Candidates are ordered by reciprocal-rank fusion of the channels (newer first
   on ties); superseded memories never appear, nor do memories already in the
   profile block; at most ``max_results``.

:class:`RobustEngine` is this read path as the ``robust`` memory engine: it reads the
core's per-person index and returns the person's profile (lasting facts, every
turn) with the episodic memories.
"""

from __future__ import annotations

import asyncio
import heapq
import math
import re
import time
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from typing import Any, ClassVar

from rapidfuzz import fuzz

from omoide.components import (
    MemoryEngineCapabilities,
    PersonMemory,
    RecallEngine,
    RecallNotes,
    RecallRequest,
    RecallResult,
)
from omoide.memory.config import RobustSettings
from omoide.memory.index.person_index import LexicalMatch, UserIndex
from omoide.memory.index.cache import dense_only_index
from omoide.memory.recall.intent import Intent, detect
from omoide.memory.language.lexicon import (
    TEMPORAL_READINGS,
    Analysis,
    analyzer,
    rewrite_temporal_reading,
)
from omoide.memory.language.phonetic import SoundIndex, min_similarity, sound_key
from omoide.memory.recall.profile import Profile
from omoide.memory.recall.subject import name_keys
from omoide.memory.language.temporal import DateSpan, resolve
from omoide.memory.language.canonical import canonical, query_copy
from omoide.types import FloatArray, RetrievedMemory


@dataclass(frozen=True)
class PreparedQuery:
    """Everything about the query that does not need the store or the embedding."""

    text: str
    intent: Intent
    analysis: Analysis
    spans: tuple[DateSpan, ...]
    date_words: tuple[str, ...] = ()
    """The date expressions and their readings, left out of the lexical channel."""


# Named periods, by reading, besides the date words of TEMPORAL_READINGS.
_PERIOD_READINGS = {"ゴールデンウィーク": "ゴールデンウィーク",
                    "シルバーウィーク": "シルバーウィーク",
                    "ネンマツネンシ": "年末年始", "ショウガツ": "正月", "オショウガツ": "お正月",
                    "クリスマス": "クリスマス", "ナツヤスミ": "夏休み", "フユヤスミ": "冬休み",
                    "ハルヤスミ": "春休み", "サンレンキュウ": "三連休"}


def _temporal_sounds() -> SoundIndex:
    index = SoundIndex()
    for reading, word in {**TEMPORAL_READINGS, **_PERIOD_READINGS}.items():
        key = sound_key(reading)
        if len(key) >= 5:
            index.add(key, word)
    return index


_TEMPORAL_SOUNDS = _temporal_sounds()


def heard_date_words(analysis: Analysis) -> list[str]:
    """Date words (in kanji) heard by sound in a query whose spelling hid them
    (数末 for 週末, ライデツ for 来月); only long words, never guessed from two morae."""
    words: list[str] = []
    never = set(analysis.not_date_sound_starts)
    starts = tuple(s for s in analysis.sound_starts if s not in never)
    for match in _TEMPORAL_SOUNDS.heard(analysis.sound, starts, analysis.sound_bounds):
        words.extend(sorted(_TEMPORAL_SOUNDS.ids(match.key)))
    return words


_BARE_WEEKDAY = re.compile(r"^[月火水木金土日]曜日?$")
_WEEK_WORDS = {"センシュウ": "先週", "ライシュウ": "来週", "コンシュウ": "今週",
               "サライシュウ": "再来週", "センセンシュウ": "先々週"}


def _week_heard_before(text: str, label: str) -> str | None:
    """The week word (先週, 来週...) a recogniser garbled right before a weekday:
    「戦修の土曜日」 and 「ライス火曜」 are 先週の土曜日 and 来週火曜."""
    at = text.find(label)
    if at <= 0:
        return None
    before = re.sub(r"の$", "", text[max(0, at - 6):at])
    key = sound_key(analyzer().reading_of(before)) if before else ""
    if len(key) < 4:
        return None
    best, best_score = None, 0.0
    for reading, word in _WEEK_WORDS.items():
        target = sound_key(reading)
        # the end of what was said before the weekday, as long as the week word
        score = fuzz.ratio(target, key[-len(target):]) if len(key) >= len(target) - 1 else 0
        if score > best_score:
            best, best_score = word, score
    return best if best_score >= min_similarity(len(sound_key(best or ""))) else None


def _past_weekday(span: DateSpan, today: date) -> DateSpan:
    if span.start <= today:
        return span
    back = span.start - timedelta(days=7)
    return DateSpan(back, back + (span.end - span.start), span.label)


def prepare(query: str, now: datetime) -> PreparedQuery:
    text = query_copy(query)
    intent = detect(canonical(query))
    analysis = analyzer().analyse(text, query=True)
    spans = tuple(resolve(analysis.temporal_text, now.date()))
    today = now.date()
    if any(_BARE_WEEKDAY.match(s.label) for s in spans):
        fixed: list[DateSpan] = []
        for s in spans:
            week = _week_heard_before(analysis.temporal_text, s.label) \
                if _BARE_WEEKDAY.match(s.label) else None
            if week is not None:
                fixed.extend(resolve(week + "の" + s.label, today) or [s])
            elif _BARE_WEEKDAY.match(s.label) and intent.past_action:
                fixed.append(_past_weekday(s, today))   # 「土曜日何したっけ」: the last one
            else:
                fixed.append(s)
        spans = tuple(fixed)
    if not spans and analysis.date_reading:
        spans = tuple(resolve(rewrite_temporal_reading(analysis.date_reading), now.date()))
    if not spans and intent.recall:
        for word in heard_date_words(analysis):
            spans = tuple(resolve(word, now.date()))
            if spans:
                break
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


def wants_embedding(q: PreparedQuery, settings: RobustSettings) -> bool:
    """Whether the gate may use the dense channel for ``q`` (commands and questions about
    the world get no memory, so their embedding would be wasted)."""
    if q.intent.command:
        return False
    if q.intent.recall:
        return True
    return not settings.require_recall_intent and not q.intent.general


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


async def robust_read(memory: PersonMemory, index: UserIndex, q: PreparedQuery,
                      vector: FloatArray | None, now: datetime, settings: RobustSettings,
                      max_results: int, in_profile: frozenset[str] = frozenset(),
                      ) -> RobustResult:
    """Episodic memories of ``memory``'s person to inject for ``q`` (see the module doc
    for the gate); ``index`` is theirs.

    ``in_profile``: ids of memories the profile block already carries; they are
    never repeated here.
    """
    details: dict[str, Any] = {
        "query": q.text, "recall_intent": q.intent.recall, "intent": list(q.intent.markers),
        "date_ranges": [(s.start.isoformat(), s.end.isoformat(), s.label) for s in q.spans]}
    if q.intent.command:
        details["gate"] = "a command"
        return RobustResult([], details)
    if settings.require_recall_intent and not q.intent.recall:
        details["gate"] = "no recall intent"
        return RobustResult([], details)
    if q.intent.general and not q.intent.recall:
        details["gate"] = "a question about the world"
        return RobustResult([], details)
    contextual = not q.intent.recall

    cached = settings.dense_from_index and index.has_all_vectors
    dense: dict[str, float] = {}
    if vector is not None and not cached:
        for hit in await memory.search(vector, settings.dense_candidates):
            dense[hit.memory.id] = hit.score
            if hit.memory.id not in index:
                index.add(hit.memory)
        details["dense_source"] = "store"

    superseded = index.superseded

    def live(mid: str) -> bool:
        return mid not in superseded and mid in index

    lexical: dict[str, LexicalMatch] = {
        k: v for k, v in index.lexical(q.analysis, q.date_words).items()
        if live(k)}
    if settings.sound_matching and (not contextual or q.intent.personal):
        # Words heard by sound count as shared words when the user asks about their
        # memories, or speaks of their own situation (「タルマやまって寒いかな」) and the
        # word heard is long enough to be sure of (a remark must not hang on two morae).
        heard = {k: v for k, v in index.sounds(
            q.analysis, _date_sounds(q, index),
            min_length=settings.context_sound_letters if contextual else 0).items()
            if live(k)}
        if heard:
            details["heard"] = sorted({w for v in heard.values() for w in v.matched})
        for mid, v in heard.items():
            old = lexical.get(mid)
            lexical[mid] = v if old is None else LexicalMatch(
                old.score + v.score, old.nouns + v.nouns, old.entity, old.matched + v.matched,
                max(old.coverage, v.coverage), old.exact + v.exact)
    spans = q.spans
    use_dates = bool(spans) and not q.intent.calendar
    if use_dates and not contextual:
        shifted = weekend_fallback(index, spans)
        if shifted is not None:
            spans = (shifted,)
            details["weekend_fallback"] = shifted.start.isoformat()
    widest = max((s.days for s in spans), default=0)
    # A memory about a wider range than asked (「正月」 for 「今日」, a month for a
    # weekend) is not about that day.
    max_memory_days = settings.context_span_days if contextual else max(8, 4 * widest)
    temporal = {k: v for k, v in index.temporal(
        spans if use_dates else (), max_memory_days=max_memory_days).items() if live(k)}
    # Shared words count as evidence when they cover most of what the query asks
    # about: 「TOEICって何点満点」 shares TOEIC with a plan but asks about 満点.
    min_coverage = settings.context_min_coverage if contextual else settings.min_coverage
    lex_nouns = {k: (v.exact if contextual else v.nouns) for k, v in lexical.items()
                 if (v.exact if contextual else v.nouns) > 0 and v.coverage >= min_coverage}
    if contextual and temporal:
        # A date alone brings up what is still to come (「金曜日何時に帰れるかな」 and
        # Friday's party), not what already happened that day.
        temporal = {k: v for k, v in temporal.items()
                    if k in lex_nouns or index.ahead(k, now.date())}
    if contextual and widest > settings.context_span_days:
        # 「来月」 alone says nothing about next month's plans; it only confirms a memory
        # the utterance names (「沖縄って11月でも泳げる」 and the November trip to Okinawa).
        temporal = {k: v for k, v in temporal.items() if k in lex_nouns}
    if contextual and lex_nouns and q.intent.question and not q.intent.personal and \
            not temporal:
        # A plain question that only shares a name with a memory is about the thing, not
        # about what the user did with it (「おぼんって誰が書いてくるの」); only a plan
        # still to come makes it about the user (「箱根って今寒い？」 before the trip).
        kept = {k: v for k, v in lex_nouns.items() if index.ahead(k, now.date())}
        if len(kept) < len(lex_nouns):
            details["shared_words_ignored"] = "a plain question, not about a plan to come"
        lex_nouns = kept

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
    if contextual:
        details["gate"] = "about: " + details["gate"]

    people = index.people_named(q.analysis) if settings.subject_check else set()
    own_shares: dict[str, float] = {}
    if people and candidates:
        # 「遥って…」 asks about 遥: a memory about someone else answers nothing (LoCoMo's
        # adversarial questions swap the speaker: "What did Caroline realise…" when
        # Melanie said it).
        # What the utterance says about them, without their name (a turn addressed
        # to them names them too).
        content = replace(q.analysis, terms=tuple(
            t for t in q.analysis.terms if not name_keys(t) & people))
        about_what = index.lexical(content, q.date_words, only=candidates)
        # Each turn counts only what its speaker says of themselves: John's "That's
        # great, Maria! Joining a church…" is Maria's news, not John's.
        own_shares = {c: index.own_share(c, about_what[c].matched)
                      for c in candidates if c in about_what}
        own_ids = [c for c in candidates if index.about(c, people, own=True)
                   and own_shares.get(c, 1.0) > 0]
        scored = {c: about_what[c].score * share for c, share in own_shares.items()}
        own = [scored[c] for c in own_ids if c in scored]
        best_all = max(scored.values(), default=0.0)
        weaker = max(own, default=0.0) < settings.subject_ratio * best_all and \
            q.intent.wh and not q.intent.asks_when
        if weaker and vector is not None:
            # and the meaning agrees: their own closest memory is further than someone
            # else's (both signals, so that one noisy channel does not decide)
            near = index.dense_top(vector, settings.dense_candidates)
            near.update(index.cosine([c for c in candidates if c not in near], vector))
            # (a turn of theirs that shares only the other's words is not theirs)
            own_near = [v for c, v in near.items() if index.about(c, people, own=True)
                        and own_shares.get(c, 1.0) > 0]
            weaker = not own_near or max(own_near) < max(near.values()) - settings.subject_gap
        if not own_ids or weaker:
            # what matched is someone else's, or only their questions to the other
            details["gate"] = "about someone else"
            candidates = set()

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
    if not candidates and settings.dense_only_ratio is not None and len(top) >= 3 and \
            (not contextual or (q.intent.personal and settings.context_dense_days)):
        spread = top[0] - top[len(top) // 2]
        if spread > 0 and top[0] - top[1] >= settings.dense_only_ratio * spread:
            closest = max(dense, key=lambda k: dense[k])
            if people and not index.about(closest, people, own=True):
                details["gate"] = "about someone else"
            elif not contextual:
                candidates = {closest}
                details["gate"] = "dense margin"
            elif index.upcoming(closest, now.date(), 7, settings.context_dense_days or 0):
                # Something the user is about to do (or just did) that this remark is
                # clearly about, though it names nothing (「先生に何を聞けばいい」 and
                # the parents' meeting on Wednesday).
                candidates = {closest}
                details["gate"] = "about: dense margin, upcoming"

    if not candidates:
        return RobustResult([], details)

    if settings.fill_from_dense:
        candidates = candidates | set(dense)
    rrf = settings.rrf_k
    r_dense = _ranks(dense)
    r_lex = _ranks({c: lexical[c].score for c in candidates if c in lexical})
    r_tem = _ranks({c: temporal[c] for c in candidates if c in temporal})
    fused: dict[str, float] = {}
    for c in candidates:
        score = 0.0
        for ranks in (r_dense, r_lex, r_tem):
            if c in ranks:
                score += 1.0 / (rrf + ranks[c])
        if q.intent.asks_when and index.has_dates(c):
            score += 0.5 / rrf
        if people and not q.intent.asks_when and index.about(c, people, own=True):
            # (a question about when ranks by date; who said it matters less there)
            score += settings.subject_boost / rrf * own_shares.get(c, 1.0)
        fused[c] = score

    def order(c: str) -> tuple[float, float]:
        m = index.get(c)
        return (-fused[c], -(m.created_at.timestamp() if m else 0.0))

    answered = candidates & in_profile
    if answered:
        details["in_profile"] = len(answered)
    chosen = heapq.nsmallest(max_results, candidates - in_profile, key=order)
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
        if c in lexical:
            details.setdefault("matched", {})[c] = list(lexical[c].matched)
    return RobustResult(out, details)


def _date_sounds(q: PreparedQuery, index: UserIndex) -> set[str]:
    """Sound keys the query's own date words account for (the temporal channel has
    them): the words' keys and every vocabulary key inside them (ゴールデン, ボン)."""
    keys = {k for k in (sound_key(w) for w in q.date_words) if k}
    if not keys:
        return set()
    return {v for v in index.sound_keys() if any(v in k for k in keys)} | keys


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


WARM_UP_QUERY = "来週の海の日は箱根に行くんだっけ?"
"""A query that goes through every analysis step once at start."""


class RobustEngine(RecallEngine):
    """The default memory engine: channels, rank fusion, an evidence gate, contextual
    recall and the profile block (see the module doc)."""

    name = "robust"
    Config = RobustSettings
    config: RobustSettings
    capabilities: ClassVar[MemoryEngineCapabilities] = MemoryEngineCapabilities(
        profile=True, contextual=True, uses_index=True)

    async def _start(self) -> None:
        # A first query imports the holiday calendar, computes this year's and compiles
        # the day's date patterns (about 0.1 s): done now, not on the event loop while
        # the first people talk.
        await asyncio.to_thread(prepare, WARM_UP_QUERY, datetime.now().astimezone())

    async def _recall(self, memory: PersonMemory, request: RecallRequest,
                      notes: RecallNotes) -> RecallResult:
        started = time.perf_counter()
        memory.prepare_index()  # built while the query is embedded, if not ready
        with notes.timed("analyse"):
            prepared = prepare(request.query, request.now)
        wanted = wants_embedding(prepared, self.config)
        inputs = await memory.index_and_vector(prepared.text, wanted, started)
        notes.timings_ms["embed"] = inputs.embed_ms
        notes.details.update(inputs.notes)
        if "embedding" in inputs.notes:
            notes.shortfalls.append(f"query embedding {inputs.notes['embedding']}")
        budget = request.profile_budget_chars
        with notes.timed("search"):
            settings, index = self.config, inputs.index
            profile = (index.profile(budget) if index is not None and budget is not None
                       else Profile())
            if index is None and inputs.vector is not None:
                # Not built yet (or over the memory budget): the dense search of the store
                # finds the candidates this turn, the index channels judge only those,
                # unless the index loads from its saved copy before the store answers.
                index = await memory.index_of_nearest(inputs.vector, settings.dense_candidates)
                if index is memory.ready_index():
                    notes.details["index"] = "loaded during the dense search of the store"
                    if budget is not None:
                        profile = index.profile(budget)
                else:
                    settings = settings.model_copy(update={"dense_from_index": False})
                    notes.details["index"] = "not ready: dense recall from the store"
                    notes.shortfalls.append("index not ready: dense recall from the store only")
            elif index is None and wanted:
                notes.shortfalls.append(inputs.notes.get(
                    "dense", "index not ready and no query vector in time: nothing to recall"
                    " from"))
            result = await robust_read(
                memory, index if index is not None else dense_only_index(memory.user,
                                                                         memory.timezone),
                prepared, inputs.vector, request.now, settings, request.max_results,
                profile.ids)
        notes.details.update(result.details)
        if inputs.index is None and budget is not None:
            # the index may have become ready meanwhile: the profile is never held back
            profile = self._ready_profile(memory, budget)
        return RecallResult(result.memories, profile)

    def _ready_profile(self, memory: PersonMemory, budget_chars: int) -> Profile:
        index = memory.ready_index()
        return index.profile(budget_chars) if index is not None else Profile()
