"""Which remembered line answers a recall question, for the chat stand-in.

A chat model reads the whole prompt and answers from what fits the question; the stand-in
imitates that with rules over three sources, each a list of あなた-sentences:

- what the person said earlier in this conversation (the user messages before the last
  one, read into あなた-sentences by the extraction rules, so a plan told a minute ago is
  there before any extraction ran);
- the retrieved memories (``<retrieved_memory>``), with their event dates;
- the profile (``<profile>``), which is in every prompt whatever was asked.

The question is read with Sudachi into what it is about (its content words, by lemma and
by reading), what kind of fact it asks for (plans, likes, habits), what it asks of it
(when, where, who) and the days its time words name (週末, 来週, 明日, 土曜日, resolved
against the turn's date). A line answers when it shares a content word with the question
(or, for a question about no particular thing, such as 「週末の予定覚えてる？」, its kind
or its day) and no day of it contradicts the question's; the line with the most evidence
wins. When no line answers, there is no answer: the stand-in then says it does not know.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any, Literal

from omoide.api import CLOSE_FAMILY, FAMILY, FRIENDS, PARTNERS, WORKMATES, ChatMessage
from omoide_standins.relative_dates import ResolvedDate, resolve_relative_dates

Source = Literal["history", "memory", "profile"]

_MEMORY_BLOCK = re.compile(r"<retrieved_memory>(.*?)</retrieved_memory>", re.S)
_PROFILE_BLOCK = re.compile(r"<profile>(.*?)</profile>", re.S)
# A bullet or a number, then any bracketed notes such as 「[記録日: …]」.
_DECORATION = re.compile(r"^(?:[-・*•]|\d+\s*[.)．、:])?\s*"
                         r"((?:(?:\[[^\]]*\]|［[^］]*］|【[^】]*】)\s*)*)")
_EVENT_DATES_NOTE = re.compile(r"(?:予定・出来事の日付|出来事の日付|日付)\s*[:：]([^\]］】]*)")
_ABSOLUTE_DATE = re.compile(r"(\d{4})年(\d{1,2})月(\d{1,2})日")
_TODAY = re.compile(r"今日は\s*(\d{4})年(\d{1,2})月(\d{1,2})日")

# Words that ask rather than say what about: remembering, saying, knowing, doing, being.
_ASKING_LEMMAS = frozenset({
    "覚える", "知る", "言う", "話す", "教える", "聞く", "思う", "為る", "居る", "有る", "在る",
    "成る", "出来る", "てる", "呉れる", "貰う", "仕舞う", "分かる", "忘れる", "思い出す"})
_EMPTY_NOUNS = frozenset({
    "こと", "事", "もの", "物", "方", "時", "前", "今", "話", "感じ", "ところ", "所", "年", "月",
    "日", "曜日", "頃", "ごろ", "奴", "やつ", "の", "ん", "何", "なん", "全部", "一番"})
# Words that say which kind of fact is asked for rather than which thing.
_KIND_WORDS: dict[str, frozenset[str]] = {
    "plan": frozenset({"予定", "計画", "積もり", "つもり", "約束"}),
    "likes": frozenset({"好き", "好物", "大好き", "大好物", "美味しい", "お気に入り", "推し"}),
    "dislikes": frozenset({"嫌い", "苦手", "大嫌い"}),
    "habit": frozenset({"趣味", "最近", "毎日", "毎朝", "毎晩", "毎週", "いつも", "習慣",
                        "嵌まる", "はまる", "続ける", "日課"}),
}
# What a fact says of its kind, in its own words (lemmas).
_FACT_KIND_WORDS: dict[str, frozenset[str]] = {
    "plan": frozenset({"予定", "計画", "積もり", "つもり", "約束", "予約"}),
    "likes": _KIND_WORDS["likes"] | frozenset({"気に入る", "派", "最高", "嵌まる"}),
    "dislikes": _KIND_WORDS["dislikes"] | frozenset({"不味い", "駄目"}),
    "habit": _KIND_WORDS["habit"] | frozenset({"練習", "通う", "習う"}),
}
_WHEN = ("いつ", "何日", "何曜", "何時", "何月", "なんにち", "なんようび")
_WHERE = ("どこ", "何処", "どちら")
_WHO = ("誰", "だれ", "どなた")
_PEOPLE = frozenset((*CLOSE_FAMILY, *FAMILY, *FRIENDS, *PARTNERS, *WORKMATES))
_PLACE_ENDINGS = ("屋", "店", "駅", "館", "園", "山", "島", "県", "市", "町", "村", "公園")
# Spoken time words, by reading, so a mis-heard one (数末 for 週末) still names its days.
_TIME_WORD_READINGS = {"シュウマツ": "週末", "ライシュウ": "来週", "コンシュウ": "今週",
                       "センシュウ": "先週", "アシタ": "明日", "アサッテ": "明後日",
                       "キノウ": "昨日", "オトトイ": "一昨日", "ライゲツ": "来月",
                       "コンゲツ": "今月", "センゲツ": "先月", "ライシュウマツ": "来週末"}
_SOFT_DAY_WINDOW = 14
"""A weekend or a weekday the question names also matches that day within two weeks."""


@dataclass(frozen=True)
class Word:
    """A content word: its lemma (Sudachi's normalised form), reading, and whether it is a
    noun (nouns say what a sentence is about more surely than verbs)."""

    lemma: str
    surface: str
    reading: str
    noun: bool


@dataclass(frozen=True)
class Line:
    """A remembered あなた-sentence, where it comes from and the days it is about."""

    text: str
    source: Source
    dates: tuple[date, ...] = ()


@dataclass(frozen=True)
class Question:
    """What a recall question is about, and what it asks of it."""

    topics: tuple[Word, ...]
    kinds: frozenset[str]
    kind_lemmas: frozenset[str]
    asks: frozenset[str]
    days: tuple[ResolvedDate, ...]
    today: date
    past: bool


@dataclass
class _Reading:
    """A line as the matcher sees it: its words, their lemmas and the whole reading."""

    line: Line
    words: list[Word] = field(default_factory=list)
    lemmas: set[str] = field(default_factory=set)
    reading: str = ""
    text: str = ""
    places: bool = False
    people: bool = False


def turn_date(system_prompt: str) -> date:
    """The turn's date from the prompt's date block (「今日は2026年9月27日…」), else today."""
    m = _TODAY.search(unicodedata.normalize("NFKC", system_prompt))
    if m is not None:
        try:
            return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            pass
    return datetime.now().date()


def prompt_lines(system_prompt: str) -> list[Line]:
    """The retrieved memories, then the profile facts, of a system prompt.

    A line is a memory when, after its decoration (a bullet or number, then bracketed notes
    such as 「[記録日: …]」), it starts with 「あなた」; rule lines that merely mention あなた
    do not. The sentence is cut at its first 「。」; its days are the event dates of its
    note and the dates written in it.
    """
    lines: list[Line] = []
    blocks: tuple[tuple[re.Pattern[str], Source], ...] = ((_MEMORY_BLOCK, "memory"),
                                                          (_PROFILE_BLOCK, "profile"))
    for pattern, source in blocks:
        block = pattern.search(system_prompt)
        if block is None:
            continue
        for raw in block.group(1).splitlines():
            m = _DECORATION.match(raw.strip())
            notes = m.group(1) if m else ""
            sentence = raw.strip()[m.end():] if m else raw.strip()
            if not sentence.startswith("あなた"):
                continue
            end = sentence.find("。")
            sentence = sentence[:end + 1] if end >= 0 else sentence.strip()
            event_note = _EVENT_DATES_NOTE.search(notes)
            dates = _dates_in(sentence) + (_dates_in(event_note.group(1)) if event_note else ())
            lines.append(Line(sentence, source, tuple(dict.fromkeys(dates))))
    return lines


def history_lines(messages: Sequence[ChatMessage], today: date, tokenizer: Any) -> list[Line]:
    """What the person said earlier in this conversation, as あなた-sentences (the
    extraction rules read the statements and leave questions and greetings out), the
    latest first."""
    from omoide_standins.extraction import Utterance, extract_facts

    users = [m.content for m in messages if m.role == "user"][:-1]
    said_at = datetime.combine(today, time(12))
    facts = extract_facts([Utterance(said_at, text) for text in users], tokenizer)
    return [Line(f.text, "history", _dates_in(f.text)) for f in reversed(facts)]


def _dates_in(text: str) -> tuple[date, ...]:
    found: list[date] = []
    for m in _ABSOLUTE_DATE.finditer(unicodedata.normalize("NFKC", text)):
        try:
            found.append(date(int(m.group(1)), int(m.group(2)), int(m.group(3))))
        except ValueError:
            continue
    return tuple(found)


def _pos(m: Any) -> tuple[str, ...]:
    return tuple(m.part_of_speech())


def _content_word(m: Any) -> Word | None:
    pos = _pos(m)
    lemma = m.normalized_form()
    if pos[0] in ("名詞", "形状詞") and pos[1] != "数詞":
        noun = True
    elif pos[0] in ("動詞", "形容詞"):
        noun = False
    else:
        return None
    if lemma in _ASKING_LEMMAS or lemma in _EMPTY_NOUNS or m.surface() in _EMPTY_NOUNS:
        return None
    return Word(lemma, m.surface(), _katakana(m.reading_form()), noun)


def _katakana(text: str) -> str:
    return "".join(chr(ord(c) + 0x60) if "ぁ" <= c <= "ゖ" else c for c in text)


def _repair_time_words(text: str, tokenizer: Any) -> str:
    """``text`` with what sounds like a time word but is no word (数末, split by Sudachi
    into 数 + 末, for 週末) written as that time word. Only pieces that are not one known
    word are repaired, so a real word that sounds alike (就活) stays."""
    ms = list(tokenizer.tokenize(text))
    out: list[str] = []
    i = 0
    while i < len(ms):
        for width in (2, 1):
            piece = ms[i:i + width]
            if (len(piece) < width or (width == 1 and not piece[0].is_oov())
                    or any(_pos(m)[0] not in ("名詞", "接尾辞", "接頭辞") for m in piece)):
                continue
            reading = _katakana("".join(m.reading_form() for m in piece))
            word = _near_time_word(reading, "".join(m.surface() for m in piece))
            if word is not None:
                out.append(word)
                i += width
                break
        else:
            out.append(ms[i].surface())
            i += 1
    return "".join(out)


def _near_time_word(reading: str, surface: str) -> str | None:
    if len(reading) < 4 or surface in _TIME_WORD_READINGS.values():
        return None
    for key, word in _TIME_WORD_READINGS.items():
        if difflib.SequenceMatcher(None, reading, key).ratio() >= 0.65:
            return word
    return None


def read_question(text: str, today: date, tokenizer: Any) -> Question:
    """What ``text`` asks (see the module doc), its time words resolved against ``today``."""
    said = _repair_time_words(unicodedata.normalize("NFKC", text), tokenizer)
    ms = list(tokenizer.tokenize(said))
    past = any(_pos(m)[0] == "助動詞" and m.normalized_form() == "た" for m in ms)
    days = tuple(resolve_relative_dates(said, today, past=past))
    in_time_words = {i for d in days for i in range(d.start, d.end)}
    topics: list[Word] = []
    kind_lemmas: set[str] = set()
    for m in ms:
        word = _content_word(m)
        if word is None or m.begin() in in_time_words:
            continue
        kinds = [k for k, lemmas in _KIND_WORDS.items() if word.lemma in lemmas]
        if kinds:
            kind_lemmas.add(word.lemma)
        else:
            topics.append(word)
    kinds_asked = {k for k, lemmas in _KIND_WORDS.items() if lemmas & kind_lemmas}
    if days and not past:
        kinds_asked.add("plan")
    asks = {name for name, words in (("when", _WHEN), ("where", _WHERE), ("who", _WHO))
            if any(w in said for w in words)}
    return Question(tuple(topics), frozenset(kinds_asked), frozenset(kind_lemmas),
                    frozenset(asks), days, today, past)


def _read_line(line: Line, tokenizer: Any) -> _Reading:
    text = unicodedata.normalize("NFKC", line.text)
    reading = _Reading(line, text=text)
    for m in tokenizer.tokenize(re.sub(r"^あなた(?:の|は|が)?", "", text)):
        reading.reading += _katakana(m.reading_form())
        pos = _pos(m)
        reading.lemmas.add(m.normalized_form())
        if pos[1] == "固有名詞":
            reading.places |= len(pos) > 2 and pos[2] == "地名"
            reading.people |= len(pos) > 2 and pos[2] == "人名"
        word = _content_word(m)
        if word is not None:
            reading.words.append(word)
            reading.places |= word.noun and word.lemma.endswith(_PLACE_ENDINGS)
            reading.people |= word.lemma in _PEOPLE or word.surface in _PEOPLE
    return reading


def _topic_match(word: Word, reading: _Reading) -> float:
    """1 for the same word (by lemma, spelling or reading), less for a near one."""
    if word.lemma in reading.lemmas or (len(word.surface) >= 2 and word.surface in reading.text):
        return 1.0
    if len(word.reading) >= 3 and word.reading in reading.reading:
        return 1.0
    if len(word.reading) >= 3:
        for other in reading.words:
            if len(other.reading) >= 3 and difflib.SequenceMatcher(
                    None, word.reading, other.reading).ratio() >= 0.75:
                return 0.5
    return 0.0


def _kinds_of(reading: _Reading, today: date) -> set[str]:
    kinds = {k for k, lemmas in _FACT_KIND_WORDS.items() if lemmas & reading.lemmas}
    if any(d >= today for d in reading.line.dates):
        kinds.add("plan")
    return kinds


def _day_match(question: Question, dates: Iterable[date]) -> float | None:
    """2 when a day of the line lies in a day range the question names, 1 when it is the
    same kind of day near it (a weekend day for 週末, the same weekday), 0 when either has
    no day, None when the line's days contradict the question's."""
    dates = tuple(dates)
    if not question.days or not dates:
        return 0.0
    best: float | None = None
    for named in question.days:
        for d in dates:
            if named.first <= d <= named.last:
                return 2.0
            if _same_kind_of_day(named, d, question.today, question.past):
                best = 1.0
    return best


def _same_kind_of_day(named: ResolvedDate, d: date, today: date, past: bool) -> bool:
    ahead = (today - d) if past else (d - today)
    if not timedelta(0) <= ahead <= timedelta(days=_SOFT_DAY_WINDOW):
        return False
    if "週末" in named.expression:
        return d.weekday() >= 5
    if named.first == named.last and "曜" in named.expression:
        return d.weekday() == named.first.weekday()
    return False


def _evidence(question: Question, reading: _Reading) -> float | None:
    """How surely the line answers the question, or None when it does not."""
    days = _day_match(question, reading.line.dates)
    if days is None:
        return None
    topics = sum(_topic_match(w, reading) * (2.0 if w.noun else 1.0) for w in question.topics)
    if question.topics and topics == 0:
        return None
    said_kind = len(question.kind_lemmas & reading.lemmas) * 2.0
    same_kind = 1.0 if question.kinds & _kinds_of(reading, question.today) else 0.0
    if not question.topics and not (said_kind or same_kind or days):
        return None
    asked = sum(1.0 for ask, has in (("when", bool(reading.line.dates)),
                                     ("where", reading.places), ("who", reading.people))
                if ask in question.asks and has)
    return 2.0 * topics + said_kind + same_kind + 1.5 * days + asked


def answering_line(question: Question, lines: Sequence[Line], tokenizer: Any) -> Line | None:
    """The line that answers ``question`` best (the first of equals), or None."""
    best: tuple[float, Line] | None = None
    for line in lines:
        score = _evidence(question, _read_line(line, tokenizer))
        if score is not None and (best is None or score > best[0]):
            best = (score, line)
    return best[1] if best else None
