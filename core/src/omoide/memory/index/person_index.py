"""A per-user, in-process index of memories for the lexical, entity and temporal channels.

Built from the store's ``scroll(user)`` (one user's records only) the first time
that user is recalled, then kept current by the engine on every write and forget.
It also keeps each memory's vector (quantised to int8, :mod:`.quantised_vectors`), so
candidates that the dense search did not return can still be ranked by cosine without
another store call. Small per memory (about 1.7 KB with its vector, see
:data:`~omoide.memory.index.lru.ENTRY_BYTES`): postings are compact
(:mod:`.postings`), and what memories have in common is held once.
"""

from __future__ import annotations

import itertools
import math
import re
import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

import numpy as np

from omoide.memory.facts.profile import (
    Classification,
    Profile,
    ProfileFact,
    classify,
    is_past,
    last_clause,
    select_profile,
)
from omoide.memory.facts.subject import Subject, name_keys, subject_of
from omoide.memory.facts.validity import (
    PLAN_CHANGES,
    STATE_OF_SOMEONE,
    Change,
    Validity,
    changes_in,
    lasts,
    same_someone,
    same_subject,
    slot_key,
)
from omoide.memory.index.family_names import KIN_WORDS, names_after
from omoide.memory.index.postings import MemoryNumbers, Postings
from omoide.memory.index.quantised_vectors import QuantisedVectors
from omoide.memory.language.canonical import canonical, to_katakana
from omoide.memory.language.english_dates import SAID_LABEL, memory_spans_en
from omoide.memory.language.english_time import tells_when
from omoide.memory.language.lexicon import KATAKANA, Analysis, Term, analyzer
from omoide.memory.language.phonetic import SoundIndex, sound_key
from omoide.memory.language.temporal import DateSpan, habit_weekdays, memory_spans
from omoide.memory.language.word_classes import CHANGE_VERBS, OUTING_STEMS, regex_alternation
from omoide.types import FloatArray, Memory


@dataclass(slots=True)
class _Entry:
    """What the index keeps of one memory. Everything two memories can share (their
    words, dates, subject, kind, slot) is the one object the index holds for it
    (:meth:`UserIndex._share`): with 100,000 memories of one person most of it repeats."""

    memory: Memory
    terms: tuple[Term, ...]
    spans: tuple[DateSpan, ...]
    habits: frozenset[int]
    kanji: str
    """The distinct kanji of the text, in one string."""
    row: int
    """The vector's row in the index's :class:`QuantisedVectors` (-1: no vector)."""
    sounds: tuple[str, ...] = ()
    kind: Classification | None = None
    subject: Subject | None = None
    past: bool = False
    slot: tuple[tuple[str, ...], str] | None = None
    changes: tuple[Change, ...] = ()
    lasts: bool = False
    widest: int = 0
    """Days of the memory's widest date range (0 when it has none)."""
    says_when: bool = False
    """English text placing its event in time ("yesterday", "last week")."""


@dataclass
class _Validities:
    """What the index derived of its memories' validity (:meth:`UserIndex.validity`), as
    of ``revision``: built memory by memory, oldest first, so that a memory newer than
    all the others is added to it without going over the rest again."""

    revision: int
    replaced: dict[str, Validity] = field(default_factory=dict)
    slot_latest: dict[tuple[tuple[str, ...], str], str] = field(default_factory=dict)
    newest: datetime | None = None
    linked: set[str] = field(default_factory=set)
    """Memories extraction linked to what replaced them (the link wins)."""


@dataclass(frozen=True)
class LexicalMatch:
    """Per-memory lexical evidence: ``score`` (idf-weighted), ``nouns`` (the part of
    it carried by nouns/names, which is what the gate counts) and ``entity`` (names)."""

    score: float
    nouns: float
    entity: float
    matched: tuple[str, ...] = field(default=())
    coverage: float = 0.0
    """Share of the query's content nouns this memory contains (0..1)."""
    exact: float = 0.0
    """The part carried by whole nouns and names matched as they are, in any spelling of
    their reading (not one kanji inside a compound, not a fragment inside a longer word):
    what a remark must share to be about a memory."""


_T = TypeVar("_T")

_OUTING = re.compile(regex_alternation(OUTING_STEMS))

LARGE_INDEX = 5000
"""Memories above which the lexical channel scores only likely matches (see
:func:`_likely_matches`); below it every memory sharing a word is scored."""

COMMON_SHARE = 50
"""A word found in more than 1/COMMON_SHARE of a large index is common."""

LEXICAL_KEEP = 1024
"""Lexical matches a large index returns at most, the best first (the robust engine
scores at most 256 candidates; the rest of thousands of weak matches are never chosen)."""


def _common_above(n: int) -> int:
    """How many of ``n`` memories a word may be found in and still not be common (all of
    them below :data:`LARGE_INDEX`: a small index has no common words)."""
    return max(1, n // COMMON_SHARE) if n > LARGE_INDEX else n


_TOLD_ONLY = frozenset({"told", SAID_LABEL})
"""Date labels of a memory dated only by the day it was told (no date of its own)."""


class UserIndex:
    """One user's memories with postings for lexical keys and single kanji."""

    def __init__(self, user: str, timezone: str) -> None:
        self.user = user
        self._tz = ZoneInfo(timezone)
        self._entries: dict[str, _Entry] = {}
        self._numbers = MemoryNumbers()
        self._postings: Postings[str] = Postings(self._numbers)
        self._kanji: Postings[str] = Postings(self._numbers)
        self._days: Postings[int] = Postings(self._numbers)
        self._readings: Postings[str] = Postings(self._numbers)
        self._short_names: Postings[str] = Postings(self._numbers)
        self._vectors = QuantisedVectors()
        self._row_ids: list[str] = []
        """The memory of each vector row ("" for a free row)."""
        self._shared: dict[Any, Any] = {}
        self._without_vector = 0
        self.built_at = time.monotonic()
        self._habits: Postings[int] = Postings(self._numbers)
        self.revision = 0
        self._kin_cache: dict[str, frozenset[str]] = {}
        self._kin_revision = -1
        """Counts changes (add, remove, supersede): what is derived from the index is
        cached by it."""
        self._vocabulary: tuple[int, list[str]] | None = None
        self._sound = SoundIndex()
        self._profile: dict[int, Profile] = {}
        self._subjects: Postings[str] = Postings(self._numbers)
        self.superseded: set[str] = set()
        """Ids of indexed memories a newer one replaced (never injected)."""
        self._said_only: set[str] = set()
        """English memories dated only by the day they were told (SAID_LABEL)."""
        self._validity: _Validities | None = None
        self._current: tuple[int, dict[str, str]] = (-1, {})
        self._tails: tuple[int, dict[str, list[str]]] = (-1, {})
        """What :meth:`current_version` found, as of a revision."""

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, memory_id: str) -> bool:
        return memory_id in self._entries

    def memories(self) -> list[Memory]:
        return [e.memory for e in self._entries.values()]

    def get(self, memory_id: str) -> Memory | None:
        e = self._entries.get(memory_id)
        return e.memory if e else None

    def terms(self, memory_id: str) -> tuple[Term, ...]:
        """The content words the index holds for a memory (empty if it is not indexed)."""
        e = self._entries.get(memory_id)
        return e.terms if e else ()

    def vector(self, memory_id: str) -> FloatArray | None:
        """The memory's vector as the index holds it (quantised, :mod:`.quantised_vectors`)."""
        e = self._entries.get(memory_id)
        return self._vectors.get(e.row) if e is not None and e.row >= 0 else None

    def _share(self, value: Any) -> Any:
        """The one object the index holds equal to ``value`` (``value`` the first time)."""
        return self._shared.setdefault(value, value)

    def add(self, memory: Memory, vector: FloatArray | None = None) -> None:
        """Index (or re-index) a memory of this user."""
        if memory.user != self.user:
            raise ValueError(f"memory {memory.id} belongs to {memory.user!r}, not {self.user!r}")
        old = self._entries.get(memory.id)
        if vector is None and old is not None and old.row >= 0:
            vector = self._vectors.get(old.row)
        revision_before = self.revision
        self.remove(memory.id)
        self.revision += 1
        text = canonical(memory.text)
        analysis = analyzer().analyse(text, query=False)
        # names the extraction reported are entity keys too, in their own spelling
        named = tuple(Term(frozenset({canonical(e).lower(), to_katakana(canonical(e)).lower()}),
                           1.5, True, e) for e in memory.entities if len(canonical(e)) >= 2)
        said_on = memory.created_at.astimezone(self._tz).date()
        spans = memory_spans(text, said_on) or memory_spans_en(text, said_on)
        if memory.event_dates and not any(s.label in ("date", "stay") for s in spans):
            spans = [DateSpan(d, d, "date") for d in memory.event_dates]
        kanji = "".join(sorted({c for c in text if "\u4e00" <= c <= "\u9fff"}))
        terms = tuple(self._share(t) for t in analysis.terms + named)
        sounds = _sound_keys(terms)
        if memory.superseded_by:
            self.superseded.add(memory.id)
        share = self._share
        entry = _Entry(memory, terms, tuple(share(s) for s in spans),
                       share(habit_weekdays(text)), kanji, self._vector_row(memory.id, vector),
                       tuple(sounds), share(classify(memory, said_on)),
                       share(subject_of(text)), bool(spans) and is_past(last_clause(text)),
                       share(slot_key(text)), share(changes_in(text)), lasts(text),
                       max((s.days for s in spans), default=0), tells_when(text))
        self._entries[memory.id] = entry
        self._profile.clear()
        state = self._validity
        if state is not None and old is None and state.revision == revision_before and \
                (state.newest is None or memory.created_at >= state.newest):
            self._apply_validity(state, entry)   # the newest memory: nothing else to redo
            state.revision = self.revision
        for key, reading in sounds.items():
            self._sound.add(key, memory.id, reading)
        for name in entry.subject.names if entry.subject else ():
            self._subjects.add(name, memory.id)
        self._without_vector += entry.row < 0
        for term in entry.terms:
            for key in term.keys:
                self._postings.add(key, memory.id)
            for r in _noun_readings(term):
                self._readings.add(r, memory.id)
                if term.proper and len(r) == 2:
                    self._short_names.add(r, memory.id)
        for c in kanji:
            self._kanji.add(c, memory.id)
        for d in _span_days(spans):
            self._days.add(d, memory.id)
        if spans and all(s.label == SAID_LABEL for s in spans):
            self._said_only.add(memory.id)
        for w in entry.habits:
            self._habits.add(w, memory.id)

    def remove(self, memory_id: str) -> None:
        entry = self._entries.pop(memory_id, None)
        if entry is None:
            return
        self.revision += 1
        self._profile.clear()
        self.superseded.discard(memory_id)
        self._said_only.discard(memory_id)
        if entry.row >= 0:
            self._vectors.free(entry.row)
            self._row_ids[entry.row] = ""
        for key in entry.sounds:
            self._sound.discard(key, memory_id)
        self._subjects.discard_all(entry.subject.names if entry.subject else (), memory_id)
        self._without_vector -= entry.row < 0
        for term in entry.terms:
            self._postings.discard_all(term.keys, memory_id)
        readings = {r for t in entry.terms for r in _noun_readings(t)}
        self._readings.discard_all(readings, memory_id)
        self._short_names.discard_all(readings, memory_id)
        self._kanji.discard_all(entry.kanji, memory_id)
        self._days.discard_all(_span_days(entry.spans), memory_id)
        self._habits.discard_all(entry.habits, memory_id)
        self._numbers.release(memory_id)

    def mark_superseded(self, memory_id: str, by: str) -> None:
        entry = self._entries.get(memory_id)
        if entry is not None:
            entry.memory = replace(entry.memory, superseded_by=by)
            self.revision += 1
            self.superseded.add(memory_id)
            self._profile.clear()

    # -- validity ----------------------------------------------------------------------
    def validity(self) -> dict[str, Validity]:
        """The memories a newer one replaced, derived or linked
        (:mod:`omoide.memory.facts.validity`), each with when and by what; memories not
        listed are current. Cached until the index changes (:attr:`revision`)."""
        if self._validity is None or self._validity.revision != self.revision:
            state = _Validities(self.revision)
            for e in sorted(self._entries.values(), key=lambda e: e.memory.created_at):
                self._apply_validity(state, e)
            self._validity = state
        return self._validity.replaced

    def slot_holders(self, who: tuple[str, ...], slot: str) -> set[str]:
        """The memories that fill ``slot`` (job, residence: :func:`slot_key`) of ``who``
        now (the person themselves for ``()``), one per someone the words can name."""
        if slot == STATE_OF_SOMEONE:
            return self._latest_about(who)
        self.validity()
        assert self._validity is not None
        return {mid for (told, name), mid in self._validity.slot_latest.items()
                if name == slot and same_someone(who, told) and mid not in self.superseded}

    def _latest_about(self, who: tuple[str, ...], count: int = 2) -> set[str]:
        """The ``count`` newest facts about ``who`` that last and hold now."""
        ids = set().union(*(self._subjects.get(name) or set() for name in self._subjects
                            if same_someone(who, (name,))))
        replaced = self.validity()
        lasting = [self._entries[m] for m in ids if m in self._entries and
                   self._entries[m].lasts and m not in replaced and m not in self.superseded]
        lasting.sort(key=lambda e: e.memory.created_at, reverse=True)
        return {e.memory.id for e in lasting[:count]}

    def current_version(self, memory_id: str) -> str:
        """The memory that holds now what ``memory_id`` once held (itself if current).

        A slot filled again and again (a habit told a thousand times) makes a long chain
        of replacements: what each memory on a walked chain leads to is kept until the
        index changes, so every chain is walked once."""
        replaced = self.validity()
        if self._current[0] != self.revision:
            self._current = (self.revision, {})
        known = self._current[1]
        path, seen, cycle = [memory_id], {memory_id}, False
        while memory_id in replaced:
            if memory_id in known:
                memory_id = known[memory_id]
                break
            by = replaced[memory_id].latest_by
            if by is None or by not in self._entries:
                break
            if by in seen:
                cycle = True   # kept for nobody: another start would stop elsewhere
                break
            seen.add(by)
            path.append(by)
            memory_id = by
        if not cycle:
            known.update(dict.fromkeys(path, memory_id))
        return memory_id

    def versions(self, memory_id: str) -> list[Memory]:
        """Every version of what ``memory_id`` holds, oldest first: the memories it
        replaced, itself, and those that replaced it (and what those replaced)."""
        linked: dict[str, set[str]] = defaultdict(set)
        for mid, v in self.validity().items():
            for by in (v.superseded_by, v.latest_by):
                if by is not None:
                    linked[mid].add(by)
                    linked[by].add(mid)
        chain, todo = {memory_id}, [memory_id]
        while todo:
            for other in linked.get(todo.pop(), ()):
                if other not in chain:
                    chain.add(other)
                    todo.append(other)
        return sorted((e.memory for m in chain if (e := self._entries.get(m))),
                      key=lambda m: m.created_at)

    def _apply_validity(self, state: _Validities, e: _Entry) -> None:
        """Add ``e``, newer than every memory ``state`` holds, to ``state``: the older
        memories it replaces (the same slot, or a change it says), and its own link."""
        by = e.memory.superseded_by
        if by and by in self._entries:
            state.replaced[e.memory.id] = Validity(
                e.memory.created_at, self._entries[by].memory.created_at, by, "linked", by)
            state.linked.add(e.memory.id)
        if e.slot is not None:
            previous = self._entries.get(state.slot_latest.get(e.slot, ""))
            if previous is not None and previous is not e:
                _replace_by(state, previous, e, f"same slot: {e.slot[1]}")
            state.slot_latest[e.slot] = e.memory.id
        for change in e.changes:
            for old in self._told_before(e, change):
                _replace_by(state, old, e, f"{change.kind}: {change.old_value}")
        if state.newest is None or e.memory.created_at > state.newest:
            state.newest = e.memory.created_at

    def _told_before(self, new: _Entry, change: Change) -> list[_Entry]:
        """The older lasting facts of the same someone that hold the value ``change``
        replaced, and share something more with ``new`` (another word, or the kind of
        fact it is)."""
        ids: set[str] | None = None
        plan = change.kind in PLAN_CHANGES
        for keys in change.names if plan and change.names else change.keys:
            found = self._posted(keys) | self._headed_by(keys)
            ids = set(found) if ids is None else ids & found
        if not ids:
            return []
        names = new.subject.names if new.subject else ()
        # what else they share: a noun, or the verb of the habit (コーヒーを飲む)
        # (a verb of changing is shared by any two changes: not a sign of the same thing)
        new_keys = {k for t in new.terms if t.weight >= 0.5 and not t.keys & CHANGE_VERBS
                    for k in t.keys}
        value_keys = {k for keys in change.keys for k in keys}
        category = new.kind.category if new.kind else None
        out: list[_Entry] = []
        for mid in ids:
            old = self._entries[mid]
            if old is new or old.memory.created_at >= new.memory.created_at or not old.lasts:
                continue
            if old.slot is not None and change.kind == "replaced":
                # a job or a home is replaced by the next one (the slot), not by a change of
                # something it mentions (the company replacing the truck of 「長距離トラックの
                # 運転手をしている」)
                continue
            if not same_subject(names, old.subject.names if old.subject else ()):
                continue
            if plan and (old.kind is None or not old.kind.profile):
                out.append(old)  # a plan called off, moved or replaced: the one it names
                continue
            shared = {k for t in old.terms if t.weight >= 0.5 for k in t.keys} & new_keys
            if shared - value_keys or (category is not None and old.kind is not None
                                       and old.kind.category == category) or \
                    _keeps_the_value(old.memory.text, change.old_value):
                out.append(old)
        return out

    # -- profile -----------------------------------------------------------------------
    def classification(self, memory_id: str) -> Classification | None:
        """Profile or episodic for an indexed memory (None if it is not indexed)."""
        e = self._entries.get(memory_id)
        return e.kind if e else None

    def profile(self, budget_chars: int) -> Profile:
        """The person's profile within ``budget_chars`` (cached until the next write)."""
        cached = self._profile.get(budget_chars)
        if cached is not None:
            return cached
        replaced = self.validity()
        facts = [ProfileFact(e.memory, e.kind.category) for e in self._entries.values()
                 if e.kind is not None and e.kind.profile and e.kind.category is not None
                 and not e.memory.superseded_by and e.memory.id not in replaced]
        profile = select_profile(facts, budget_chars)
        self._profile[budget_chars] = profile
        return profile

    # -- vocabulary --------------------------------------------------------------------
    def vocabulary(self, limit: int = 50) -> list[str]:
        """The person's own words, most useful first: names (people, pets, places,
        products, and the entities extraction reported, in their own spelling) before
        other nouns, then by how many memories use them, then by how recently. For
        recognisers (an initial prompt or hotwords) and for people reading what omoide
        knows. Superseded memories do not count.

        Ranking 10,000 memories takes tens of milliseconds and a recogniser asks at every
        audio turn, so the ranking is kept until the index changes (:attr:`revision`).
        """
        if limit <= 0:
            return []
        if self._vocabulary is None or self._vocabulary[0] != self.revision:
            self._vocabulary = (self.revision, self._rank_vocabulary())
        return self._vocabulary[1][:limit]

    def _rank_vocabulary(self) -> list[str]:
        stats: dict[str, list[float]] = {}
        for e in self._entries.values():
            if e.memory.superseded_by:
                continue
            stamp = e.memory.created_at.timestamp()
            seen: set[str] = set()
            for t in e.terms:
                word = t.surface
                if t.weight < 1.0 or len(word) < 2 or word in seen or (
                        KATAKANA.match(word) and len(word) < 3 and not t.proper):
                    continue
                seen.add(word)
                row = stats.setdefault(word, [0.0, 0.0, 0.0])
                row[0] = max(row[0], 1.0 if t.proper else 0.0)
                row[1] += 1
                row[2] = max(row[2], stamp)
        return sorted(stats, key=lambda w: (-stats[w][0], -stats[w][1], -stats[w][2], w))

    # -- channels --------------------------------------------------------------------
    def lexical(self, query: Analysis, exclude: Iterable[str] = (),
                only: set[str] | None = None) -> dict[str, LexicalMatch]:
        """Memories sharing content words with the query, idf-weighted.

        Besides exact keys: a one-kanji word matches that kanji inside a compound
        (酒 in 日本酒), a katakana word matches inside a longer word (ケーキ in
        チーズケーキ), and a name's reading matches inside the query's reading even
        when the analyser split the query differently (だいき|って). Terms inside
        ``exclude`` (the query's date expressions) are left to the temporal channel.
        ``only``: score these memories only (the rest are not wanted).
        """
        n = max(1, len(self._entries))
        excluded = [e for e in exclude if e]
        seen_sets: list[set[str]] = []
        used_readings: set[str] = set()
        found, asked = self._term_postings(query, excluded)
        if only is None and n > LARGE_INDEX:
            only = _likely_matches([(ids, term.weight) for term, ids, _ in found], n)
        credits = _Credits(n, only)
        credit = credits.give
        for term, ids, weight in found:
            if term.weight < 1.0 and any(ids == seen for seen in seen_sets):
                continue  # a run of words that only repeats a word already counted
            seen_sets.append(ids)
            if term.weight >= 0.8:
                used_readings.update(k for k in term.keys if KATAKANA.match(k))
            credit(ids, weight, term.proper, term.surface,
                   term.weight if term.weight >= 1.0 else 0.0, exact=weight >= 1.0)
        if query.reading:
            for reading in self._readings:
                if len(reading) >= 3 and query.begins_a_word(reading) and \
                        not any(reading in u for u in used_readings) and \
                        not any(reading in to_katakana(e) for e in excluded):
                    used_readings.add(reading)
                    credit(self._readings.get(reading) or set(), 0.8, False, reading, 1.0,
                           exact=True)   # the whole word, as said
                    asked += 1.0
            # a two-mora name (あや) where a word starts, when the analyser glued it on
            for start in query.reading_starts:
                reading = query.reading[start:start + 2]
                names = self._short_names.get(reading)
                if names and reading not in used_readings:
                    used_readings.add(reading)
                    credit(names, 0.8, True, reading, 1.0, exact=True)
                    asked += 1.0
        # the weakest of thousands of matches would never be chosen: do not dress them
        return credits.matches(asked, LEXICAL_KEEP if n > LARGE_INDEX else None)

    def _term_postings(self, query: Analysis, excluded: list[str],
                       ) -> tuple[list[tuple[Term, set[str], float]], float]:
        """Per query term (heaviest first, date words left out): the memories holding it
        and the weight it counts with; and the weight of the words the query asks about."""
        asked = 0.0
        found: list[tuple[Term, set[str], float]] = []
        for term in sorted(query.terms, key=lambda t: -t.weight):
            kana = to_katakana(term.surface)
            if any(term.surface in e or e in term.surface or kana in e for e in excluded):
                continue
            if term.weight >= 1.0:
                asked += term.weight
            ids = self._posted(term.keys)
            kin = term.keys & KIN_WORDS
            if kin and (named := self._kin_names(kin)):
                ids = ids | self._posted(named)   # 姪っ子 is 美羽 too (「姪の美羽」)
            weight = term.weight
            if not ids and term.weight >= 1.0:
                ids, weight = self._inside_longer_words(term), 0.8
            if ids:
                found.append((term, ids, weight))
        return found, asked

    def tells_an_outing(self, memory_id: str) -> bool:
        """Whether the memory tells of going somewhere (行った, 旅行, 泊まった)."""
        e = self._entries.get(memory_id)
        return e is not None and bool(_OUTING.search(e.memory.text))

    def _kin_names(self, kin: set[str] | frozenset[str]) -> set[str]:
        """The keys of the names the memories give these kin (「姪の美羽」: 美羽's keys
        for 姪), worked out once per revision of the index."""
        if self._kin_revision != self.revision:
            self._kin_cache, self._kin_revision = {}, self.revision
        out: set[str] = set()
        for word in kin:
            if word not in self._kin_cache:
                self._kin_cache[word] = frozenset().union(*(
                    names_after(word, e.memory.text, e.terms)
                    for mid in self._posted({word}) if (e := self._entries.get(mid))))
            out |= self._kin_cache[word]
        return out

    def _posted(self, keys: Iterable[str]) -> set[str]:
        """The memories holding any of ``keys``: the index's own posting set when only
        one key has any (not to be changed by the caller), else a new union."""
        posted = [ids for key in keys if (ids := self._postings.get(key))]
        if len(posted) == 1:
            return posted[0]
        return set().union(*posted)

    def _headed_by(self, keys: Iterable[str]) -> set[str]:
        """The memories with a compound noun whose head (its last word) is one of the
        katakana ``keys``: ブラックコーヒー for コーヒー, 赤ワイン for ワイン."""
        ids: set[str] = set()
        for key in keys:
            if not KATAKANA.match(key) or len(key) < 2:
                continue
            for reading in self._readings_ending(key[-2:]):
                if len(reading) > len(key) and reading.endswith(key):
                    ids |= self._readings.get(reading) or set()
        return ids

    def _readings_ending(self, tail: str) -> list[str]:
        """The noun readings ending in ``tail`` (two letters), grouped once per revision
        of the index (a year's validity is read again without a pass over every word
        for each change it finds)."""
        if self._tails[0] != self.revision:
            tails: dict[str, list[str]] = defaultdict(list)
            for reading in self._readings:
                tails[reading[-2:]].append(reading)
            self._tails = (self.revision, tails)
        return self._tails[1].get(tail, [])

    def _inside_longer_words(self, term: Term) -> set[str]:
        ids: set[str] = set()
        for key in term.keys:
            if len(key) == 1 and "\u4e00" <= key <= "\u9fff":
                ids |= self._kanji.get(key) or set()
            elif KATAKANA.match(key):
                for reading in self._readings:
                    if len(reading) > len(key) and key in reading:
                        ids |= self._readings.get(reading) or set()
        return ids

    # -- whose memory ----------------------------------------------------------------------
    def people_named(self, query: Analysis) -> set[str]:
        """The people the query names who are the subject of some memory (a speaker of
        a conversation turn, 「あなたの妹の遥は…」's 遥); empty when it names nobody."""
        out: set[str] = set()
        for term in query.terms:
            if not term.proper:
                continue
            for key in name_keys(term):
                if key in self._subjects:
                    out.add(key)
        return out

    def about(self, memory_id: str, people: set[str], *, own: bool = False) -> bool:
        """Whether a memory is about one of ``people``: its subject, or, for a fact that
        is not a quoted turn, a person its text names. ``own``: for a turn, only when the
        speaker talks about themselves (not a question to the other)."""
        e = self._entries.get(memory_id)
        if e is None or e.subject is None:
            return False
        if set(e.subject.names) & people:
            return e.subject.own or not own
        if e.subject.turn:
            return False   # a turn said by someone else is about its speaker
        text = e.memory.text.lower()
        return any(p in text for p in people)

    def own_share(self, memory_id: str, matched: Sequence[str]) -> float:
        """The share of ``matched`` that a turn's speaker says of themselves, not of the
        one they talk to (:meth:`~omoide.memory.facts.subject.Subject.own_share`); 1 for a
        memory that is not a turn."""
        e = self._entries.get(memory_id)
        return 1.0 if e is None or e.subject is None else e.subject.own_share(matched)

    def sound_keys(self) -> list[str]:
        """Every sound key of the vocabulary."""
        return self._sound.keys()

    def sounds(self, query: Analysis, exclude: Iterable[str] = (),
               min_length: int = 0) -> dict[str, LexicalMatch]:
        """Memories whose words are *heard* in the query by sound
        (:mod:`~omoide.memory.language.phonetic`):
        the recogniser's 数末 for a memory's 週末, セミ for ゼミ, どういく for TOEIC.

        Scores are idf-weighted like :meth:`lexical`, scaled by the similarity, and
        count as nouns (they are the person's names and things); ``exclude`` holds
        sound keys the exact channel already matched; ``min_length``: only words whose
        sound key is at least this long. In a large index (:data:`LARGE_INDEX`) a word
        heard in more than 1/:data:`COMMON_SHARE` of the memories is passed over: a
        sound match on a common word is weak evidence for each of thousands of them.
        """
        if not query.sound:
            return {}
        n = max(1, len(self._entries))
        most = _common_above(n)
        out: dict[str, LexicalMatch] = {}
        for match in self._sound.heard(query.sound, query.sound_starts, query.sound_bounds,
                                       exclude):
            ids = self._sound.ids(match.key)
            if not ids or len(ids) > most or len(match.key) < min_length or \
                    self._sound.spelled_in(match.key, query.reading):
                continue   # too short to be sure of, or said as written (exact channel)
            weight = 0.8 * match.similarity / 100.0
            idf = math.log(1.0 + n / len(ids))
            for mid in ids:
                old = out.get(mid)
                score = weight * idf + (old.score if old else 0.0)
                out[mid] = LexicalMatch(score, score, 0.0,
                                        (*(old.matched if old else ()), match.key), 1.0, score)
        return out

    def temporal(self, spans: Sequence[DateSpan], *,
                 max_memory_days: int | None = None) -> dict[str, float]:
        """Memories whose dates fall in the query's ranges; narrower ranges score more,
        and a memory dated only by the day it was told half as much.

        A habit on a weekday (「毎週水曜」) matches a range of at most two days that
        contains that weekday. ``max_memory_days``: leave out memories whose own date
        range is wider (a fact about 「正月」 is not about one day of it).
        """
        if not spans:
            return {}
        # Each range gives one score to all it finds: sets of memories, the best score
        # first, each memory taking the first (thousands of habits on a weekday cost
        # set operations, not a step each).
        found: list[tuple[float, set[str]]] = []
        entries = self._entries
        for q in spans:
            weight = 1.0 / math.log2(1 + q.days)
            first = q.start.toordinal()
            dated: set[str] = set()
            for day in range(first, first + min(q.days, 400)):
                dated.update(self._days.members(day))
            if max_memory_days is not None:
                dated = {m for m in dated if entries[m].widest <= max_memory_days}
            # told in the range, its own words placing it nowhere: weaker than a memory
            # that says its event was then ("last week I went…")
            said = dated & self._said_only
            found.extend(((weight, dated - said), (0.5 * weight, said)))
            if q.days <= 2:
                found.extend((0.5 * weight, self._habits.get(w) or set())
                             for w in _weekdays_in(q))
        out: dict[str, float] = {}
        for weight, ids in sorted(found, key=lambda f: -f[0]):
            out.update(dict.fromkeys(ids.difference(out) if out else ids, weight))
        return out

    def live_only(self, found: dict[str, _T]) -> dict[str, _T]:
        """``found`` (what a channel of this index found, changed in place) without the
        superseded memories, in the order it had: one set operation, not a test per
        memory (a date range finds thousands). The channels find indexed memories only."""
        if self.superseded:
            for mid in self.superseded.intersection(found):
                del found[mid]
        return found

    def _widest_span(self, memory_id: str) -> int:
        e = self._entries.get(memory_id)
        return e.widest if e else 0

    def dated_in(self, span: DateSpan, max_memory_days: int | None = None) -> set[str]:
        """Live memories with a date inside ``span`` (habits do not count), leaving out
        those whose own range is wider than ``max_memory_days``."""
        out: set[str] = set()
        first = span.start.toordinal()
        for day in range(first, first + min(span.days, 400)):
            out.update(self._days.members(day))
        return {m for m in out if not self._entries[m].memory.superseded_by and
                (max_memory_days is None or self._widest_span(m) <= max_memory_days)}

    def ahead(self, memory_id: str, today: date) -> bool:
        """Whether a dated memory is still to come (a plan, not a past event). Told in the
        past tense, it is still to come when all its dates fall after the day it was told
        (「面談を10月6日に行うと連絡を受けた」: the telling is past, the meeting is not)."""
        e = self._entries.get(memory_id)
        if e is None or not any(s.end >= today for s in e.spans):
            return False
        if not e.past:
            return True
        told = e.memory.created_at.astimezone(self._tz).date()
        return all(s.start > told for s in e.spans)

    def upcoming(self, memory_id: str, today: date, back_days: int, ahead_days: int) -> bool:
        """Whether a memory is dated between ``back_days`` before and ``ahead_days``
        after ``today`` (an upcoming plan or a recent event)."""
        e = self._entries.get(memory_id)
        if e is None or not e.spans:
            return False
        lo, hi = today.toordinal() - back_days, today.toordinal() + ahead_days
        return any(s.start.toordinal() <= hi and s.end.toordinal() >= lo and s.days <= 8
                   for s in e.spans)

    def states_a_habit(self, memory_id: str) -> bool:
        """Whether a memory states something that lasts (a habit, a state: not a one-off
        event, not a dated plan), whether or not something newer replaced it since."""
        e = self._entries.get(memory_id)
        return bool(e and e.lasts and all(s.label in _TOLD_ONLY for s in e.spans))

    def tells_an_event(self, memory_id: str) -> bool:
        """Whether a memory tells something that happened, not something that lasts (a
        liking, a habit, a fact about someone) or is still to come."""
        e = self._entries.get(memory_id)
        return e is not None and not e.lasts

    def has_dates(self, memory_id: str) -> bool:
        e = self._entries.get(memory_id)
        return bool(e and (any(s.label != SAID_LABEL for s in e.spans) or e.habits
                           or e.says_when))

    @property
    def has_all_vectors(self) -> bool:
        return self._without_vector == 0

    def _vector_row(self, memory_id: str, vector: FloatArray | None) -> int:
        if vector is None:
            return -1
        row = self._vectors.put(vector)
        if row == len(self._row_ids):
            self._row_ids.append(memory_id)
        else:
            self._row_ids[row] = memory_id
        return row

    def dense_top(self, query_vector: FloatArray, limit: int) -> dict[str, float]:
        """Top ``limit`` memories by cosine over the index's vectors (one product)."""
        if not len(self._vectors):
            return {}
        sims = self._vectors.similarities(query_vector)
        k = min(limit, len(self._vectors))
        top = np.argpartition(-sims, k - 1)[:k]
        return {self._row_ids[i]: float(sims[i]) for i in top}

    def cosine(self, memory_ids: Iterable[str], query_vector: FloatArray) -> dict[str, float]:
        """Cosine of the index's vectors (memories indexed without one are left out)."""
        entries = self._entries
        ids = [m for m in memory_ids if (e := entries.get(m)) is not None and e.row >= 0]
        if not ids:
            return {}
        sims = self._vectors.similarities(query_vector, [entries[m].row for m in ids])
        return {m: float(s) for m, s in zip(ids, sims, strict=True)}

    def vector_bytes(self) -> int:
        """Bytes the index's vectors take (:class:`QuantisedVectors`)."""
        return self._vectors.nbytes + 8 * len(self._row_ids)


def _keeps_the_value(text: str, value: str) -> bool:
    """Whether a fact says how the person keeps ``value`` (「コーヒーはデカフェにしている」):
    a state of that very thing, which a change of it (「コーヒーを普通のものに戻した」)
    replaces though the two share no other word."""
    return bool(re.search(re.escape(value) + r"(?:は|を)[^。、]{0,20}?(?:にして|して)(?:いる|る)",
                          text))


def _replace_by(state: _Validities, old: _Entry, new: _Entry, why: str) -> None:
    """Note that ``new`` replaced ``old``: the first replacement closes its validity,
    the latest says what holds now (a link extraction made wins over both)."""
    mid, when = old.memory.id, new.memory.created_at
    if mid in state.linked:
        return
    was = state.replaced.get(mid)
    if was is None:
        state.replaced[mid] = Validity(old.memory.created_at, when, new.memory.id, why,
                                       new.memory.id)
        return
    if was.valid_until is not None and when < was.valid_until:
        was = replace(was, valid_until=when, superseded_by=new.memory.id, why=why)
    state.replaced[mid] = replace(was, latest_by=new.memory.id)  # memories come oldest first


def _sound_keys(terms: Iterable[Term]) -> dict[str, str]:
    """Sound keys of a memory's nouns and names, and of its longer other words, each
    with the reading it was made from."""
    keys: dict[str, str] = {}
    for term in terms:
        for k in term.keys:
            if not KATAKANA.match(k):
                continue
            key = sys.intern(sound_key(k))
            if term.weight >= 1.0 or len(key) >= 6:
                keys.setdefault(key, k)
    return keys


def _noun_readings(term: Term) -> set[str]:
    if term.weight < 1.0:
        return set()
    return {k for k in term.keys if KATAKANA.match(k)}


def _span_days(spans: Iterable[DateSpan]) -> set[int]:
    days: set[int] = set()
    for s in spans:
        if s.days <= 62:
            days.update(range(s.start.toordinal(), s.end.toordinal() + 1))
    return days


def _weekdays_in(span: DateSpan) -> set[int]:
    days = min(span.days, 7)
    return {(span.start.toordinal() + i - 1) % 7 for i in range(days)}


def said_on(memory: Memory, timezone: str) -> date:
    return memory.created_at.astimezone(ZoneInfo(timezone)).date()


def _likely_matches(matches: Sequence[tuple[set[str], float]], n: int) -> set[str] | None:
    """The memories worth scoring in a large index (``n`` memories), from each query
    word's matches and weight: every memory sharing a rare word, and those sharing two
    independent common content words (weight 1 or more, neither word's memories all
    inside the other's: 駒沢 adds nothing to 駒沢公園). A memory whose only link to the
    query is one common word (a name said in 5,000 of 100,000 memories) would score too
    low to be chosen, and scoring it costs the most. None when that leaves nothing
    (score them all).
    """
    cap = _common_above(n)
    if all(len(ids) <= cap for ids, _ in matches):
        return None
    out: set[str] = set()
    common: list[set[str]] = []
    for ids, weight in sorted(matches, key=lambda m: len(m[0])):
        if len(ids) <= cap:
            out |= ids
        elif weight >= 1.0 and not any(ids == seen for seen in common):
            common.append(ids)
    for i, small in enumerate(common):
        for other in common[i + 1:]:
            if not small <= other:
                out |= small & other
    return out or None


class _Credits:
    """The credits a query's words give, and which memories earned each.

    Each credit is one bit; the memories that earned the same credits (the same bits)
    make one group, kept as one set, and a group's evidence is summed once: with 100,000
    memories a query's words reach thousands of them, mostly with the same few words in
    common, and a credit splits the groups with set operations instead of visiting
    each memory it reaches.
    """

    __slots__ = ("_covered", "_groups", "_n", "_only", "credits")

    def __init__(self, n: int, only: set[str] | None) -> None:
        self._n = n
        self._only = only
        self.credits: list[tuple[float, float, float, float, float, str]] = []
        self._groups: list[tuple[set[str], int]] = []
        """Memories that earned exactly the credits of the bits, one set per bits."""
        self._covered: set[str] = set()

    def give(self, ids: set[str], weight: float, proper: bool, label: str, covers: float,
             exact: bool = False) -> None:
        """A credit for the memories ``ids`` (the index's own set: never changed here),
        idf-weighted by how many hold it."""
        w = weight * math.log(1.0 + self._n / len(ids))
        bit = 1 << len(self.credits)
        self.credits.append((w, w if weight >= 0.8 else 0.0, w if proper else 0.0, covers,
                             w if exact else 0.0, label))
        members = ids & self._only if self._only is not None else ids
        groups: list[tuple[set[str], int]] = []
        for held, bits in self._groups:
            inside = held & members
            if not inside:
                groups.append((held, bits))
                continue
            groups.append((inside, bits | bit))
            if len(inside) < len(held):
                groups.append((held - inside, bits))
        new = members - self._covered
        if new:
            groups.append((new, bit))
            self._covered |= new
        self._groups = groups

    def matches(self, asked: float, keep: int | None) -> dict[str, LexicalMatch]:
        """Each memory's evidence, the best first; at most about ``keep`` of them (all
        those scoring above the one at ``keep``, then as many of those equal to it as
        fit, in no particular order), or all when ``keep`` is None."""
        scored = sorted(((held, _earned_match(bits, self.credits, asked))
                         for held, bits in self._groups), key=lambda g: -g[1].score)
        out: dict[str, LexicalMatch] = {}
        room = len(self._covered) if keep is None else keep
        for held, match in scored:
            if room <= 0:
                break
            taken = held if len(held) <= room else itertools.islice(held, room)
            out.update(dict.fromkeys(taken, match))
            room -= len(held)
        return out


def _earned_match(bits: int, credits: Sequence[tuple[float, float, float, float, float, str]],
                  asked: float) -> LexicalMatch:
    """The lexical evidence of a memory that earned the credits whose bits are set in
    ``bits`` (each credit: score, nouns, entity, covers, whole, label), added in the
    order the credits were given; ``asked`` is what full coverage of the query sums to."""
    score = nouns = entity = covers = whole = 0.0
    labels: list[str] = []
    for i, (w, noun, name, cover, exact, label) in enumerate(credits):
        if bits >> i & 1:
            score += w
            nouns += noun
            entity += name
            covers += cover
            whole += exact
            labels.append(label)
    return LexicalMatch(score, nouns, entity, tuple(labels),
                        min(1.0, covers / asked) if asked else 0.0, whole)
