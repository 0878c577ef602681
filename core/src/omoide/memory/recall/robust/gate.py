"""The evidence gate: which memories a query may bring up, on evidence rather than one
cosine, by what the utterance is (:mod:`omoide.memory.recall.intent`).

- a command or a question about the world gets nothing (:func:`intent_refusal`), unless
  asked in the past tense: then, like a remark, it needs a memory sharing its words;
- a reference to the user's own memories gets those in the query's date range
  (narrowed by shared words when there are any), else those sharing words with it
  (:func:`candidates_by_evidence`); dense evidence alone lets one memory through only
  when it stands clearly apart (:func:`dense_margin_gate`);
- anything else about the user's life (a remark) gets the memories sharing a noun
  with it exactly, or dated within a few days it names (:func:`remark_evidence`);
- a question about someone named gets nothing when what matched is someone else's
  (:func:`people_asked_about`, :func:`about_someone_else`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import date

from omoide.memory.config import RobustSettings
from omoide.memory.facts.subject import name_keys
from omoide.memory.index.person_index import LexicalMatch, UserIndex
from omoide.memory.language.tense import Tense
from omoide.memory.recall.robust.query import PreparedQuery
from omoide.types import FloatArray


def wants_embedding(q: PreparedQuery, settings: RobustSettings) -> bool:
    """Whether the gate may use the dense channel for ``q`` (commands and questions about
    the world get no memory, so their embedding would be wasted; one asked in the past
    tense may, see :func:`intent_refusal`)."""
    if q.intent.command:
        return False
    if q.intent.recall:
        return True
    # (the weather of a day reads the index for that day's plans: a first turn waits for
    # it as for any recall, though the vector itself will not be used)
    return not settings.require_recall_intent and (not q.intent.general or
                                                   _past_of_the_person(q) or
                                                   _weather_on_a_day(q))


def intent_refusal(q: PreparedQuery, settings: RobustSettings) -> str | None:
    """Why ``q`` gets no memory whatever the evidence, or None when it may get some."""
    if q.intent.command:
        return "a command"
    if settings.require_recall_intent and not q.intent.recall:
        return "no recall intent"
    if q.intent.general and not q.intent.recall and not _past_of_the_person(q) and \
            not _weather_on_a_day(q):
        return "a question about the world"
    return None


def _past_of_the_person(q: PreparedQuery) -> bool:
    """A question shaped like one about the world but asked in the past tense
    (「健診の血圧って上いくつだった?」): about something of the person's, unless what it
    asks is an attribute of the world (a height, a population: ``world fact``), whose
    だった / やったっけ is the past of recollecting, not of an event
    (「その塔の高さって何メートルだったっけ」)."""
    return q.tense is Tense.PAST and "world fact" not in q.intent.markers


WEATHER_DAYS = 1
"""The weather asked of one day may bring the plans dated then (see
:func:`_weather_on_a_day`); a weekend's or a week's is asked of the world at large."""


def _weather_on_a_day(q: PreparedQuery) -> bool:
    """The weather asked of one day (「明後日の天気どげん？」「19日の朝って雪降るかな」):
    the world's, but a plan of the user's dated that day is what the answer is for (「the
    Akizuki outing is on Sunday: sunny」); the date alone lets only plans still to come
    through (:func:`remark_evidence`). Not the forecast asked for by name (「明日の天気は？」)."""
    return "weather" in q.intent.markers and bool(q.spans) and \
        max(s.days for s in q.spans) <= WEATHER_DAYS and not _FORECAST_ASKED.search(q.text)


_FORECAST_ASKED = re.compile(r"天気は[？?]?$")
"""「明日の天気は？」: the forecast asked for, as one asks a weather service."""


def shared_word_evidence(lexical: dict[str, LexicalMatch], settings: RobustSettings,
                         contextual: bool) -> dict[str, float]:
    """The shared-word evidence per memory: nouns shared (exactly, for a remark or a
    question about a thing: ``contextual``), where they cover most of what the query
    asks about (「TOEICって何点満点」 shares TOEIC with a plan but asks about 満点)."""
    min_coverage = settings.context_min_coverage if contextual else settings.min_coverage
    return {k: (v.exact if contextual else v.nouns) for k, v in lexical.items()
            if (v.exact if contextual else v.nouns) > 0 and v.coverage >= min_coverage}


@dataclass(frozen=True)
class RemarkEvidence:
    """A remark's evidence once narrowed (see :func:`remark_evidence`)."""

    lex_nouns: dict[str, float]
    temporal: dict[str, float]
    shared_words_ignored: bool = False


def remark_evidence(index: UserIndex, q: PreparedQuery, settings: RobustSettings,
                    lex_nouns: dict[str, float], temporal: dict[str, float], widest: int,
                    today: date) -> RemarkEvidence:
    """A remark's (contextual recall's) evidence, narrowed to what it is about."""
    if _weather_on_a_day(q):
        lex_nouns = {}   # 天気 or 雨 in a memory says nothing of that day's plans
    if temporal:
        # A date alone brings up what is still to come (「金曜日何時に帰れるかな」 and
        # Friday's party), not what already happened that day.
        temporal = {k: v for k, v in temporal.items()
                    if k in lex_nouns or index.ahead(k, today)}
    if widest > settings.context_span_days:
        # 「来月」 alone says nothing about next month's plans; it only confirms a memory
        # the utterance names (「沖縄って11月でも泳げる」 and the November trip to Okinawa).
        temporal = {k: v for k, v in temporal.items() if k in lex_nouns}
    ignored = False
    if lex_nouns and q.intent.question and not q.intent.personal and not temporal:
        # A plain question that only shares a name with a memory is about the thing, not
        # about what the user did with it (「おぼんって誰が書いてくるの」); only a plan
        # still to come makes it about the user (「箱根って今寒い？」 before the trip), or,
        # asked in the past tense, what already happened (「健診の血圧って上いくつだった?」).
        past = q.tense is Tense.PAST
        kept = {k: v for k, v in lex_nouns.items() if index.ahead(k, today) != past}
        ignored = len(kept) < len(lex_nouns)
        lex_nouns = kept
    return RemarkEvidence(lex_nouns, temporal, ignored)


def candidates_by_evidence(temporal: dict[str, float], lex_nouns: dict[str, float],
                           settings: RobustSettings) -> tuple[set[str], str]:
    """The memories the date and word evidence let through, and which evidence did."""
    strong = _strong_word_matches(lex_nouns, settings)
    if temporal:
        both = set(temporal) & set(lex_nouns)
        if both & strong:
            return both, "date range and shared words"
        if lex_nouns:
            # nothing in range shares the words that matter: the date may be off (a moved
            # plan, a misheard day: けつあつ heard as 月末), so the best word matches
            # compete with the date matches
            return set(temporal) | both | strong, "date range or shared words"
        return set(temporal), "date range"
    if lex_nouns:
        return strong, "shared words"
    return set(), "no evidence"


def _strong_word_matches(lex_nouns: dict[str, float], settings: RobustSettings) -> set[str]:
    """The memories sharing words with the query about as well as the best one does."""
    if not lex_nouns:
        return set()
    best = max(lex_nouns.values())
    return {k for k, v in lex_nouns.items() if v >= settings.lexical_keep_ratio * best}


@dataclass(frozen=True)
class PeopleAsked:
    """Whom the query names, and how much of what it says each candidate's speaker
    says of themselves."""

    people: set[str]
    own_shares: dict[str, float] = field(default_factory=dict)
    """Per candidate: the part of what matched that its speaker says of themselves."""
    scores: dict[str, float] = field(default_factory=dict)
    """Per candidate: its lexical score on what the query says of them, times its share."""


def people_asked_about(index: UserIndex, q: PreparedQuery, settings: RobustSettings,
                       candidates: set[str]) -> PeopleAsked:
    """The people ``q`` names (with the subject check on) and, when there are candidates,
    what they say of themselves.

    「遥って…」 asks about 遥: a memory about someone else answers nothing (LoCoMo's
    adversarial questions swap the speaker: "What did Caroline realise…" when Melanie
    said it).
    """
    people = index.people_named(q.analysis) if settings.subject_check else set()
    if not (people and candidates):
        return PeopleAsked(people)
    # What the utterance says about them, without their name (a turn addressed to them
    # names them too).
    content = replace(q.analysis, terms=tuple(
        t for t in q.analysis.terms if not name_keys(t) & people))
    about_what = index.lexical(content, q.date_words, only=candidates)
    # Each turn counts only what its speaker says of themselves: John's "That's great,
    # Maria! Joining a church…" is Maria's news, not John's.
    own_shares = {c: index.own_share(c, about_what[c].matched)
                  for c in candidates if c in about_what}
    scores = {c: about_what[c].score * share for c, share in own_shares.items()}
    return PeopleAsked(people, own_shares, scores)


def about_someone_else(index: UserIndex, q: PreparedQuery, vector: FloatArray | None,
                       settings: RobustSettings, candidates: set[str],
                       asked: PeopleAsked) -> bool:
    """Whether what matched is someone else's than the people named, or only their
    questions to the other."""
    people, own_shares = asked.people, asked.own_shares
    own_ids = [c for c in candidates if index.about(c, people, own=True)
               and own_shares.get(c, 1.0) > 0]
    own = [asked.scores[c] for c in own_ids if c in asked.scores]
    best_all = max(asked.scores.values(), default=0.0)
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
    return not own_ids or weaker


def dense_margin_gate(index: UserIndex, q: PreparedQuery, settings: RobustSettings,
                      dense: dict[str, float], people: set[str], today: date,
                      ) -> tuple[set[str], str | None]:
    """With no other evidence: the closest memory by meaning, when it stands clearly
    apart from the rest (``dense_only_ratio``); and the gate's reason, None when this
    gate did not decide."""
    contextual = not q.intent.recall
    top = sorted(dense.values(), reverse=True)
    if q.intent.impersonal or q.beyond_topic:
        return set(), None   # a question about a thing needs a memory naming it
    if settings.dense_only_ratio is None or len(top) < 3 or \
            (contextual and not (q.intent.personal and settings.context_dense_days)):
        return set(), None
    spread = top[0] - top[len(top) // 2]
    if not (spread > 0 and top[0] - top[1] >= settings.dense_only_ratio * spread):
        return set(), None
    closest = max(dense, key=lambda k: dense[k])
    if people and not index.about(closest, people, own=True):
        return set(), "about someone else"
    if not contextual:
        return {closest}, "dense margin"
    if index.upcoming(closest, today, 7, settings.context_dense_days or 0):
        # Something the user is about to do (or just did) that this remark is clearly
        # about, though it names nothing (「先生に何を聞けばいい」 and the parents'
        # meeting on Wednesday).
        return {closest}, "about: dense margin, upcoming"
    return set(), None
