"""The query as the robust engine reads it: its canonical copy, intent, words and dates.

Everything here needs neither the store nor the embedding, so it runs while the query is
embedded (and once at start, to warm the analysers up).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta

from rapidfuzz import fuzz

from omoide.memory.facts.validity import asked_slot
from omoide.memory.language.canonical import canonical, query_copy
from omoide.memory.language.english_dates import question_spans
from omoide.memory.language.lexicon import (
    TEMPORAL_READINGS,
    Analysis,
    analyzer,
    rewrite_temporal_reading,
)
from omoide.memory.language.phonetic import SoundIndex, min_similarity, sound_key
from omoide.memory.language.regional_forms import standard_forms
from omoide.memory.language.temporal import DateSpan, resolve
from omoide.memory.language.tense import Anchor, Tense, anchor, anchor_words, tense
from omoide.memory.recall.intent import Intent, detect


@dataclass(frozen=True)
class PreparedQuery:
    """Everything about the query that does not need the store or the embedding."""

    text: str
    intent: Intent
    analysis: Analysis
    spans: tuple[DateSpan, ...]
    date_words: tuple[str, ...] = ()
    """The date expressions and their readings, left out of the lexical channel."""
    tense: Tense = Tense.NEUTRAL
    """Past, a plan or neither: it places the named periods (お盆, 正月) it names."""
    anchor: Anchor | None = None
    """この前 (the latest of repeated events) or 初めて (the first), if it says so."""
    beyond_topic: tuple[str, ...] = ()
    """For a question about a thing it names (:attr:`Intent.thing_named`) that asks
    neither when nor where and names no date, the content words it asks after its topic
    (「名古屋城って誰が建てた」: 建て); a memory must share one of them (or state the
    quantity it asks for)."""
    asked_of_the_thing: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    """For a question about a thing it names that asks where or when (「ナポリタンって発祥
    どこだっけ」): the content words of its topic and those it asks after the topic. A
    memory answers it by sharing both, or by being a plan still to come that names the
    thing (「おせちっていつ受け取りだっけ」)."""
    slot: tuple[tuple[str, ...], str] | None = None
    """The single-valued slot (job, residence) a question asks about, and whose
    (:func:`omoide.memory.facts.validity.asked_slot`)."""
    asks_since: bool = False
    """It asks since when (いつから, 何年から): what answers it tells a beginning (see
    :func:`tells_a_beginning`)."""
    topic_head: tuple[tuple[str, ...], ...] = ()
    """For a question about a thing it names (:attr:`Intent.thing_named`): the words
    that name the head of its topic (しゃちほこ of 「名古屋城の金のしゃちほこって」, 牛タン
    of 「牛タンって仙台が発祥だっけ」), as alternatives a memory must share all the words
    of one of (a compound, or every part of it: see :func:`_topic_head`) — one naming
    only 名古屋 or 仙台, or only the last part of a compound, is not about the thing."""


# Named periods, by reading, besides the date words of TEMPORAL_READINGS.
_PERIOD_READINGS = {"ゴールデンウィーク": "ゴールデンウィーク",
                    "シルバーウィーク": "シルバーウィーク",
                    "ネンマツネンシ": "年末年始", "ショウガツ": "正月", "オショウガツ": "お正月",
                    "クリスマス": "クリスマス", "ナツヤスミ": "夏休み", "フユヤスミ": "冬休み",
                    "ハルヤスミ": "春休み", "サンレンキュウ": "三連休"}


def _temporal_sounds() -> SoundIndex:
    index = SoundIndex(whole_words=False)
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


def _weekdays_placed(spans: tuple[DateSpan, ...], analysis: Analysis, intent: Intent,
                     today: date) -> tuple[DateSpan, ...]:
    """Bare weekdays (土曜日) put in their week: the one a garbled week word before them
    names, else the last one when the query asks what was done (「土曜日何したっけ」)."""
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
    return tuple(fixed)


def _query_spans(analysis: Analysis, intent: Intent, today: date,
                 said: Tense | None) -> tuple[DateSpan, ...]:
    """The query's date ranges: as written, else as read aloud, else (for a question
    about the user's memories) as heard by sound; named periods placed by ``said``."""
    spans = tuple(resolve(analysis.temporal_text, today, tense=said))
    if any(_BARE_WEEKDAY.match(s.label) for s in spans):
        spans = _weekdays_placed(spans, analysis, intent, today)
    if not spans and analysis.date_reading:
        spans = tuple(resolve(rewrite_temporal_reading(analysis.date_reading), today,
                              tense=said))
    if not spans and intent.recall:
        for word in heard_date_words(analysis):
            spans = tuple(resolve(word, today, tense=said))
            if spans:
                break
    return spans


_SOMEONE_ELSE_DID = re.compile(r"(?:誰|だれ|どっち|どちら|どこ|何|なに)が")


def _done_in_a_period(intent: Intent, text: str, spans: tuple[DateSpan, ...]) -> Intent:
    """What was done in a period named (「くりすます何してた？」, the period in kana), with
    no one else doing it (not 「去年の紅白って誰が勝った」), is the user's own past."""
    if intent.recall or not spans or not (intent.wh and intent.past_action) or \
            intent.command or "weather" in intent.markers or _SOMEONE_ELSE_DID.search(text):
        return intent
    return replace(intent, recall=True, general=False, personal=True,
                   markers=(*intent.markers, "done in a period"))


def _own_slot_asked(intent: Intent, text: str) -> Intent:
    """A question about the person's own job, home or way to work (「図書館まで何で
    行ってる？」「どこで働いてる？」) asks what they told, with or without っけ."""
    if intent.recall or intent.command:
        return intent
    slot = asked_slot(text)
    if slot is None or slot[0]:
        return intent
    return replace(intent, recall=True, general=False, personal=True,
                   markers=(*intent.markers, "own slot asked"))


def _anchored_past(intent: Intent, text: str) -> Intent:
    """この前 / 初めて with something done (「こないだラルゴ行ったとき誰と一緒だった」)
    points at the user's own past: recall, though nothing else in it says so."""
    if intent.recall or anchor(text) is None or tense(text) is not Tense.PAST:
        return intent
    return replace(intent, recall=True, markers=(*intent.markers, "anchored past"))


def prepare(query: str, now: datetime) -> PreparedQuery:
    """``query`` analysed for recall at ``now``: canonical copy, intent, words, and the
    date ranges it names (their words and readings kept out of the lexical channel)."""
    text = standard_forms(query_copy(query))
    intent = _own_slot_asked(_anchored_past(detect(standard_forms(canonical(query))), text),
                             text)
    analysis = analyzer().analyse(text, query=True)
    said = tense(text)
    # a recall question in neither tense (「冬の展示どこだっけ」) may mean the last one
    placing = None if said is Tense.NEUTRAL and intent.recall else said
    spans = _query_spans(analysis, intent, now.date(), placing) or \
        tuple(question_spans(text, now.date()))
    if "still" in intent.markers:
        # 「スマホ教室、今も木曜？」: a weekday asked of what goes on is its habit, not a date
        spans = tuple(s for s in spans if not _BARE_WEEKDAY.fullmatch(s.label))
    intent = _done_in_a_period(intent, text, spans)
    labels = {s.label for s in spans}
    excluded = labels | set(anchor_words(text))
    exclude = tuple(excluded | {analyzer().reading_of(word) for word in excluded})
    # when and where (「おせちっていつ受け取りだっけ」) and a date named (「お盆って誰が
    #帰ってくるんだっけ」) ask about a plan or a time of the user's, not about the thing
    about_the_thing = intent.thing_named and not spans and not intent.asks_when and \
        not _WHERE.search(text)
    return PreparedQuery(text, intent, analysis, spans, exclude, said, anchor(text),
                         _beyond_topic(text, analysis) if about_the_thing else (),
                         _asked_of_the_thing(text, analysis)
                         if not spans and not about_the_thing and "still" not in intent.markers
                         and (intent.thing_named or _is_a_thing_y(text, analysis))
                         else ((), ()),
                         asked_slot(text) if intent.recall else None,
                         bool(_SINCE_WHEN.search(text)),
                         _topic_head(text, analysis) if intent.thing_named and not spans
                         else ())


_WHERE = re.compile(r"どこ|何処")
_BARE_WEEKDAY = re.compile(r"[月火水木金土日]曜日?")


_NOUN_CHECKED = re.compile(r"って[^、。？?]+?(?:だ|です|でした|だった)?っけ[？?]?$")


def _is_a_thing_y(text: str, analysis: Analysis) -> bool:
    """「北海道犬って天然記念物だっけ」: whether X is Y, of nouns only (no verb anywhere: not
    「…って行ったっけ」)."""
    return bool(_NOUN_CHECKED.search(text)) and \
        not any(t.weight in _VERB_WEIGHTS for t in analysis.terms)


def _asked_of_the_thing(text: str, analysis: Analysis,
                        ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The topic's content words and the nouns asked after it (see
    :attr:`PreparedQuery.asked_of_the_thing`); nothing when no noun is asked after it."""
    cut = text.find("って")
    topic, rest = text[:cut], text[cut + 2:]
    named = tuple(t.surface for t in analysis.terms if t.surface and t.surface in topic)
    after = [t for t in analysis.terms
             if t.surface and t.surface in rest and t.surface not in topic]
    # (and the unit a 何 asks for: 「霧島って何県だっけ」 asks after 県)
    nouns = tuple(t.surface for t in after if t.weight >= 1.0) + \
        tuple(u for u in _ASKED_UNIT.findall(rest) if u not in topic)
    # (市 of 富山市 says less than 富山市)
    nouns = tuple(dict.fromkeys(n for n in nouns if not any(n != m and n in m for m in nouns)))
    if not named or not nouns or any(t.weight in _VERB_WEIGHTS for t in after):
        return (), ()   # a verb after it (「歯医者ってどこに通ってる」): the person's doing
    return named, nouns


_ASKED_UNIT = re.compile(r"(?:何|(?:どこ|何処)の)"
                         r"((?![日時月年曜分秒])[\u4e00-\u9fff]|[ァ-ヶー]{2,})"
                         r"(?:だ|です|でした|だった)?"
                         r"(?:っけ|か)?$")
"""The unit a 何 (or どこの) asks for when it is what is asked (「何県だっけ」, 「どこの区
だっけ」, 「何型だったっけ」; not 「何回行ったっけ」, a count of the person's doings, nor
何日 / 何時, which a date answers)."""

_VERB_WEIGHTS = frozenset({0.5, 0.6})
"""The weights :mod:`omoide.memory.language.lexicon` gives verbs and adjectives."""


def _topic_head(text: str, analysis: Analysis) -> tuple[tuple[str, ...], ...]:
    """The words naming the topic's head (see :attr:`PreparedQuery.topic_head`): the
    run of content words ending the topic before って, as one word or as all its words
    (信州そば, or 信州 and そば: not そば alone, which names any soba)."""
    cut = text.find("って")
    if cut <= 0:
        return ()
    topic = text[:cut].rstrip()
    content = {t.surface for t in analysis.terms if t.weight >= 1.0 and t.surface}
    run, rest = "", topic
    while word := max((w for w in content if rest.endswith(w)), key=len, default=""):
        run, rest = word + run, rest[:-len(word)]
    if not run:
        return ()
    inside = [w for w in content if w in run]
    words = tuple(sorted((w for w in inside if not any(o != w and o in w for o in inside)),
                         key=run.find))
    return ((run,), words) if len(words) > 1 else ((run,),)


def _beyond_topic(text: str, analysis: Analysis) -> tuple[str, ...]:
    """The content words written after the topic's って."""
    rest = text[text.find("って") + 2:]
    return tuple(t.surface for t in analysis.terms if t.surface and t.surface in rest)


_SINCE_WHEN = re.compile(r"(?:いつ|何年|なんねん)から")


def doings_asked(q: PreparedQuery) -> tuple[str, ...]:
    """The verbs of ``q`` written in kanji, as a memory telling that doing spells them
    (始め of 始めた, 通 of 通ってる; 始ま of 始まった, which 始めた does not spell)."""
    return tuple(w.surface().rstrip("っん") for w in analyzer().morphemes(q.text)
                 if w.part_of_speech()[0] == "動詞" and _KANJI.search(w.surface()))


def tells_a_beginning(text: str, doings: tuple[str, ...]) -> bool:
    """Whether a memory (``text``) can say since when a question asks: it names a point
    in time something runs from (「4月からヨガに通っている」) or spells a doing asked
    (``doings``, :func:`doings_asked`: 「テニスっていつから始めたんだっけ」 and 「テニスを始め
    た」). A memory of going to see a festival tells when the person went, not since when
    the festival is held."""
    return bool(_RUNS_FROM.search(text)) or any(d in text for d in doings)


_KANJI = re.compile(r"[\u3400-\u9fff]")
_RUNS_FROM = re.compile(r"(?:[年月日時週）春夏秋冬]|頃|ごろ)から|以来")
"""A point in time something runs from (4月から, （2026年4月1日）から, 春から, それ以来);
not the から of a place or a person (駅から, 同僚から) nor of an order (出てから)."""


_HOW_MANY = re.compile(r"何([^\sぁ-んー]{1,3})")
_NUMERAL = "[0-9０-９一二三四五六七八九十百千]"


def states_the_quantity_asked(q: PreparedQuery, text: str) -> bool:
    """Whether ``text`` gives a quantity in the unit ``q`` asks for (「一日何回飲むんだっけ」
    and 「朝晩の2回に増やされた」; the unit is some of what follows 何, 回 of 回飲む)."""
    return any(re.search(_NUMERAL + "+" + re.escape(unit[:n]), text)
               for unit in _HOW_MANY.findall(q.text) for n in range(1, len(unit) + 1))
