"""Japanese lexical analysis for recall: content-word keys and temporal rewriting.

Sudachi (``sudachipy`` + ``sudachidict-core``) splits text into words; every content
word (nouns, proper nouns, verbs, adjectives; no particles, pronouns, numbers or
temporal words) becomes a *term* with alternative keys: its normalised form
(ムギ/むぎ/麦 -> 麦, TOEIC/toeic -> TOEIC), its katakana reading (トーイック) and its
surface. A query term matches a memory when any key is shared, so spelling, script
and ASR homophones (はいしゃ/歯医者, 彩/あや) still meet. Query terms also include
runs of two or three adjacent words, which catches words the analyser split
(は|いしゃ).

The same readings rewrite spoken temporal words to their kanji form before date
resolution (しゅうまつ / 終末 -> 週末, あさって -> 明後日).

Without Sudachi installed the analyser falls back to character bigrams (worse, but
it keeps the engine working) and logs a warning once.
"""

from __future__ import annotations

import itertools
import logging
import re
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from omoide.memory.language.canonical import canonical, to_katakana
from omoide.memory.language.phonetic import sound_key
from omoide.memory.language.word_classes import (
    FIRST_PERSON_LEMMAS,
    KIN_BY_READING,
    PLACE_KINDS,
)

log = logging.getLogger("omoide.memory.lexicon")

TEMPORAL_READINGS: dict[str, str] = {
    "シュウマツ": "週末", "コンシュウマツ": "今週末", "ライシュウマツ": "来週末",
    "センシュウマツ": "先週末", "サライシュウ": "再来週", "センセンシュウ": "先々週",
    "ライシュウ": "来週",
    "センシュウ": "先週", "コンシュウ": "今週", "アシタ": "明日", "アス": "明日",
    "アサッテ": "明後日", "シアサッテ": "明々後日", "キノウ": "昨日", "キョウ": "今日",
    "オトトイ": "一昨日", "オトツイ": "一昨日", "ライゲツ": "来月", "コンゲツ": "今月",
    "センゲツ": "先月", "サライゲツ": "再来月", "ゲツマツ": "月末", "ネンマツ": "年末",
    "ネンシ": "年始", "レンキュウ": "連休", "オボン": "お盆", "ドニチ": "土日",
    "コンド": "今度", "ツギ": "次", "オオミソカ": "大晦日", "ガンジツ": "元日",
    "ゲツヨウ": "月曜", "カヨウ": "火曜", "スイヨウ": "水曜", "モクヨウ": "木曜",
    "キンヨウ": "金曜", "ドヨウ": "土曜", "ニチヨウ": "日曜",
    "ゲツヨウビ": "月曜日", "カヨウビ": "火曜日", "スイヨウビ": "水曜日",
    "モクヨウビ": "木曜日", "キンヨウビ": "金曜日", "ドヨウビ": "土曜日",
    "ニチヨウビ": "日曜日",
}

# Temporal readings too ambiguous to look for inside a reading string
# (キョウ in トウキョウ, キノウ as 機能, アス in アスパラ).
_RISKY_READINGS = frozenset({"キョウ", "アス", "ツギ", "コンド", "キノウ", "カヨウ", "ドヨウ",
                             "アシタ", "ネンシ"})


def rewrite_temporal_reading(reading: str) -> str:
    """Temporal words found anywhere in a katakana reading, rewritten to kanji.

    The fallback when the analyser split a spoken date word (ねん|まつっ, ど|に|ちっ).
    """
    for key in sorted(TEMPORAL_READINGS, key=len, reverse=True):
        if len(key) >= 3 and key not in _RISKY_READINGS and key in reading:
            reading = reading.replace(key, TEMPORAL_READINGS[key])
    return reading


# Words that never count as lexical evidence: the subject, light nouns and verbs,
# question words, recall verbs and time words (the temporal channel owns those).
STOP_LEMMAS = frozenset(["貴方", "あなた", *FIRST_PERSON_LEMMAS, "事", "こと", "物", "もの", "為る", "する", "有る", "ある", "居る", "いる", "成る", "なる", "言う", "思う", "行く", "来る", "見る", "出来る", "遣る", "やる", "覚える", "忘れる", "予定", "感じ", "方", "人", "時", "日", "年", "月", "週", "今", "中", "前", "後", "何", "なに", "なん", "いつ", "何時", "どこ", "何処", "誰", "どれ", "どう", "どんな", "何曜日", "何日", "今日", "明日", "昨日", "明後日", "一昨日", "今度", "次", "最近", "毎日", "毎朝", "毎週", "毎晩", "週末", "来週", "今週", "先週", "再来週", "来月", "今月", "先月", "今年", "来年", "去年", "月末", "年末", "土曜日", "日曜日", "月曜日", "火曜日", "水曜日", "木曜日", "金曜日", "土曜", "日曜", "月曜", "火曜", "水曜", "木曜", "金曜", "曜日", "午前", "午後", "朝", "夜", "昼", "夕方", "頃", "ころ", "くらい", "ぐらい", "辺り", "様", "よう", "所", "ところ", "為", "ため", "訳", "はず", "積もり", "つもり", "話", "感じる", "今度", "この前", "この間", "一緒", "皆", "みんな", "気", "好き", "予約", "約束", "楽しみ"])
_WEEKDAY_LEMMAS = frozenset("月火水木金土日")


@dataclass(frozen=True)
class Term:
    """A content word (or a run of words) with its alternative keys.

    ``proper`` marks names (people, places, products): the entity channel.
    """

    keys: frozenset[str]
    weight: float
    proper: bool = False
    surface: str = ""


@dataclass(frozen=True)
class Analysis:
    """What recall needs of one text."""

    terms: tuple[Term, ...]
    temporal_text: str
    """The text with spoken temporal words rewritten to kanji, for date resolution."""
    reading: str = ""
    """Katakana reading of the whole text (names split by the analyser still meet)."""
    reading_starts: tuple[int, ...] = ()
    """Offsets in ``reading`` where a content word starts."""
    sound: str = ""
    """Sound key of the whole text (:func:`omoide.memory.language.phonetic.sound_key`), word by word."""
    sound_starts: tuple[int, ...] = ()
    """Offsets in ``sound`` where a content word (not a particle) starts."""
    sound_bounds: tuple[int, ...] = ()
    """Offsets in ``sound`` where any word starts or ends."""
    date_reading: str = ""
    """``reading`` for finding date words the analyser split (しゅう|まつ): verbs and
    adjectives written in kanji keep their spelling (通う is not 火曜)."""
    not_date_sound_starts: tuple[int, ...] = ()
    """Offsets in ``sound`` where a verb or adjective written in kanji starts: no date
    word is heard there (通う日 is not 火曜日)."""
    reading_bounds: tuple[int, ...] = ()
    """Offsets in ``reading`` where any word starts (particles too): a word of a memory
    found in the reading must begin at one of them, not inside a word (休み is not in
    おやすみ, 表 not in 代表)."""
    noun_runs: tuple[tuple[int, ...], ...] = ()
    """Runs of adjacent nouns (a thing's name, perhaps split by the analyser; numbers
    end a run): per run, the offsets in ``sound`` where its words begin, and its end."""

    def begins_a_word(self, reading: str) -> bool:
        """``reading`` occurs in :attr:`reading` where one of its words begins (anywhere
        when the analysis has no word offsets)."""
        if not self.reading_bounds:
            return reading in self.reading
        at = self.reading.find(reading)
        while at != -1:
            if at in self.reading_bounds:
                return True
            at = self.reading.find(reading, at + 1)
        return False


def _content_weight(pos: tuple[str, ...]) -> tuple[float, bool] | None:
    """(weight, is_proper) for a content part of speech, None for the rest."""
    if pos[0] == "名詞":
        if pos[1] == "固有名詞":
            return 1.5, True
        if pos[1] == "普通名詞" and pos[2] != "副詞可能":
            return 1.0, False
        return None
    if pos[0] == "動詞" and pos[1] == "一般":
        return 0.5, False
    if pos[0] == "形容詞" and pos[1] == "一般":
        return 0.6, False
    return None


_ASCII_WORD = re.compile(r"^[A-Za-z][A-Za-z0-9]+$")
_QUOTED = re.compile(r"[「『]([^」』]{2,20})[」』]")
_KANA_WORD = re.compile(r"^[\u3041-\u3096\u30a1-\u30faー]{2,}$")
_KANJI = re.compile(r"[\u3400-\u9fff]")
_INFLECTING = ("動詞", "形容詞", "助動詞")
KATAKANA = re.compile(r"^[\u30a1-\u30faー]{2,}$")


class Analyzer:
    """Sudachi-backed analysis (thread-safe: one tokenizer per thread)."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._available: bool | None = None
        self._dictionary: Any = None
        self._dictionary_lock = threading.Lock()

    @property
    def available(self) -> bool:
        if self._available is None:
            try:
                self._tokenizer()
                self._available = True
            except Exception as exc:  # noqa: BLE001  # pragma: no cover - depends on the install
                log.warning("Sudachi unavailable (%s); lexical channel uses bigrams", exc)
                self._available = False
        return self._available

    def _tokenizer(self) -> Any:
        # One dictionary per process (about 75 MB each), one tokenizer per thread (a
        # tokenizer is not thread-safe; the dictionary is shared safely).
        tok = getattr(self._local, "tok", None)
        if tok is None:
            with self._dictionary_lock:
                if self._dictionary is None:
                    from sudachipy import Dictionary
                    self._dictionary = Dictionary(dict="core")
            tok = self._dictionary.tokenizer()
            self._local.tok = tok
        return tok

    def _morphemes(self, text: str, mode: str) -> list[Any]:
        from sudachipy import SplitMode
        return list(self._tokenizer().tokenize(text, getattr(SplitMode, mode)))

    def analyse(self, text: str, *, query: bool) -> Analysis:
        """What recall needs of ``text``: its content words (:class:`Term`) and the text
        with spoken date words in kanji; for a ``query`` also adjacent runs of words and
        the readings and sound keys the sound and date channels search."""
        text = canonical(text)
        if not _JAPANESE.search(text):
            return Analysis(english_terms(text), text)
        if not self.available:
            return Analysis(_bigram_terms(text), text, to_katakana(text))
        words_c, words_a = self._morphemes(text, "C"), self._morphemes(text, "A")
        terms = _Terms()
        # split compounds too: 日本酒 -> 日本 + 酒, チーズケーキ -> チーズ + ケーキ
        for words in (words_c, words_a):
            for i, w in enumerate(words):
                if query and _unit_of_a_number(words, i):
                    continue
                term = _word_term(w, query)
                if term is not None:
                    terms.add(*term)
        _add_prefixed_words(terms, words_c)
        _add_clipped_compounds(terms, words_c, words_a, 0.8 if query else 1.0)
        if not query:
            self._add_quoted_names(terms, text)
            return Analysis(terms.all(), text)
        _add_word_runs(terms, words_c)
        return _query_analysis(terms.all(), self._rewrite_temporal(words_c), words_c)

    def _add_quoted_names(self, terms: _Terms, text: str) -> None:
        """A name in 「」 or 『』 (how memories write shops, books and places) is one name
        whatever the analyser made of it: its spelling and reading are keys, and so are
        those of its head when it ends in the kind of place it is (:data:`PLACE_KINDS`:
        「まるよし食堂」 is まるよし too, as said or recognised: 丸吉 reads マルヨシ)."""
        for quoted in _QUOTED.findall(text):
            words = [w for w in self._morphemes(quoted, "C")
                     if w.part_of_speech()[0] not in ("補助記号", "空白")]
            if not words:
                continue
            reading = "".join(to_katakana(w.reading_form()) for w in words)
            terms.add({quoted.lower(), to_katakana(quoted).lower(), reading}, 1.5, True,
                      quoted)
            last = words[-1]
            head = quoted[:len(quoted) - len(last.surface())]
            if len(words) >= 2 and last.surface() in PLACE_KINDS and len(head) >= 2 and \
                    not head.endswith("の"):
                head_reading = "".join(to_katakana(w.reading_form()) for w in words[:-1])
                terms.add({head.lower(), to_katakana(head).lower(), head_reading}, 1.5, True,
                          head)

    def reading_of(self, text: str) -> str:
        """Katakana reading of ``text`` (the text itself without Sudachi)."""
        if not self.available:
            return to_katakana(text)
        return "".join(to_katakana(w.reading_form()) for w in self._morphemes(canonical(text), "C")
                       if w.part_of_speech()[0] not in ("補助記号", "空白"))

    def morphemes(self, text: str, mode: str = "C") -> list[Any]:
        """Sudachi's words of the canonical ``text`` (mode C: whole names and compounds),
        with ``surface()``, ``part_of_speech()``, ``normalized_form()`` and
        ``reading_form()``; an empty list without Sudachi."""
        if not self.available:
            return []
        return self._morphemes(canonical(text), mode)

    def _rewrite_temporal(self, words: list[Any]) -> str:
        out: list[str] = []
        i = 0
        while i < len(words):
            for n in (3, 2, 1):
                run = words[i:i + n]
                if len(run) < n:
                    continue
                reading = "".join(to_katakana(w.reading_form()) for w in run)
                if reading in TEMPORAL_READINGS and not any(_never_a_date(w) for w in run) \
                        and not any(_particle_after_kanji(w, b)
                                    for b, w in itertools.pairwise(run)):
                    out.append(TEMPORAL_READINGS[reading])
                    i += n
                    break
            else:
                out.append(words[i].surface())
                i += 1
        return "".join(out)


class _Terms:
    """The terms of one text by their keys, the heaviest kept of those with the same keys."""

    def __init__(self) -> None:
        self._by_keys: dict[frozenset[str], Term] = {}

    def add(self, keys: set[str], weight: float, proper: bool, surface: str) -> None:
        """Add a term, unless it is a question word (何曜, 何点) or a stop word."""
        if any(k.startswith("何") for k in keys):
            return  # question words: 何曜, 何点
        keys = {k for k in keys if _usable_key(k)}
        if not keys or keys & STOP_LEMMAS:
            return
        fk = frozenset(keys)
        old = self._by_keys.get(fk)
        if old is None or old.weight < weight:
            self._by_keys[fk] = Term(fk, weight, proper, surface)

    def all(self) -> tuple[Term, ...]:
        return tuple(self._by_keys.values())


def _word_term(w: Any, query: bool) -> tuple[set[str], float, bool, str] | None:
    """The keys, weight, name flag and surface of one Sudachi word as a term; None for a
    word that is no content word, a stop word or a date word."""
    pos = tuple(w.part_of_speech())
    surface = w.surface()
    if _ASCII_WORD.match(surface):
        cw: tuple[float, bool] | None = (1.5, True)
    else:
        cw = _content_weight(pos)
    if cw is None and query and _KANA_WORD.match(surface) and \
            pos[0] not in ("助詞", "助動詞", "感動詞"):
        cw = (0.8, False)  # a kana word the analyser misread (じゅく as an adverb)
    if cw is None:
        return None
    norm = w.normalized_form()
    if norm in STOP_LEMMAS or surface in STOP_LEMMAS:
        return None
    reading = to_katakana(w.reading_form())
    if reading in TEMPORAL_READINGS:
        return None
    keys = {norm.lower(), surface.lower(), to_katakana(surface).lower()}
    if query and _ASCII_WORD.match(surface):
        kana = romaji_to_katakana(surface)
        if kana and len(kana) >= 2:
            keys.add(kana)  # ASR sometimes spells Japanese in latin letters
    if len(reading) >= 2 and reading != "キゴウ":
        keys.add(reading)
    kin = KIN_BY_READING.get(reading)
    if kin is not None:
        keys.add(kin)   # お袋, 母さん and 母 are one mother
    keys |= _sided_part(surface, reading, pos)
    return keys, cw[0], cw[1], surface


_SIDES = {"右": "ミギ", "左": "ヒダリ"}


def _sided_part(surface: str, reading: str, pos: tuple[str, ...]) -> set[str]:
    """The part a sided word names (右膝 is a knee, 左肩 a shoulder: 膝, ヒザ), read off
    by its side's reading (not 右折, read ウセツ), for the words a side is put before."""
    side = _SIDES.get(surface[:1])
    if pos[0] != "名詞" or len(surface) != 2 or side is None or \
            not reading.startswith(side) or not _KANJI.match(surface[1]):
        return set()
    rest = reading[len(side):]
    return {surface[1], rest} if len(rest) >= 2 else {surface[1]}


def _unit_of_a_number(words: list[Any], i: int) -> bool:
    """The word at ``i`` is a counter or unit after a number (15分, 4年に1回, 何秒,
    何リットル): a quantity, which alone says nothing of what a memory is about (a timer
    of 15分 is not the 15分 walk). The number and its unit still meet as a run (15分)."""
    pos = words[i].part_of_speech()
    return i > 0 and pos[0] == "名詞" and pos[2] == "助数詞可能" and \
        words[i - 1].part_of_speech()[1] == "数詞"


def _add_word_runs(terms: _Terms, words: list[Any]) -> None:
    """Runs of two and three adjacent words, for words the analyser split (は|いしゃ,
    しゅう|まつ)."""
    for n in (2, 3):
        for i in range(len(words) - n + 1):
            run = words[i:i + n]
            if any(w.part_of_speech()[0] in ("補助記号", "空白") for w in run) or \
                    all(_light(w) for w in run):
                continue   # し|た, の|に: nothing a memory could be about
            reading = "".join(to_katakana(w.reading_form()) for w in run)
            surface = "".join(w.surface() for w in run)
            if reading in TEMPORAL_READINGS:
                continue
            terms.add({reading, surface.lower(), to_katakana(surface).lower()}, 0.8,
                      False, surface)


def _add_prefixed_words(terms: _Terms, words: list[Any]) -> None:
    """A prefix and the noun after it as one word (まる|八 of 「うどん処まる八」, 新|商品;
    the analyser splits names it does not know so), as neither part alone is a content
    word a memory and a question would share."""
    for w, after in itertools.pairwise(words):
        # (not the polite お / ご: おせんべい is せんべい)
        if w.part_of_speech()[0] == "接頭辞" and after.part_of_speech()[0] == "名詞" and \
                w.normalized_form() != "御":
            surface = w.surface() + after.surface()
            reading = to_katakana(w.reading_form()) + to_katakana(after.reading_form())
            terms.add({surface.lower(), to_katakana(surface).lower(), reading}, 1.0, True,
                      surface)


_TWO_KANJI = re.compile(r"[\u3400-\u9fff]{2}")


def _add_clipped_compounds(terms: _Terms, words_c: list[Any], words_a: list[Any],
                           weight: float) -> None:
    """A compound noun that opens with two two-kanji words also as the word people clip
    it to, the first kanji of each (卒業論文 as 卒論, 健康診断 as 健診, 定期演奏会 as 定演),
    so that what is written out in full and what is said short meet."""
    compounds = {w.surface() for w in words_c if w.part_of_speech()[0] == "名詞"}
    for i in range(len(words_a) - 1):
        head, tail = words_a[i].surface(), words_a[i + 1].surface()
        if not (_TWO_KANJI.fullmatch(head) and _TWO_KANJI.fullmatch(tail)):
            continue
        rest = "".join(w.surface() for w in words_a[i + 2:i + 3])
        if head + tail in compounds or (rest and head + tail + rest in compounds):
            clipped = head[0] + tail[0]
            terms.add({clipped}, weight, False, clipped)


def _light(word: Any) -> bool:
    """A particle, an auxiliary or a stop word (する, こと): no content of its own."""
    return word.part_of_speech()[0] in ("助詞", "助動詞") or \
        word.normalized_form() in STOP_LEMMAS


@dataclass
class _QueryOffsets:
    """Where a query's words begin, in its reading and in its sound key, gathered word by
    word (the offset fields of :class:`Analysis`)."""

    reading_starts: list[int] = field(default_factory=list)
    word_starts: list[int] = field(default_factory=list)
    sound_starts: list[int] = field(default_factory=list)
    sound_bounds: list[int] = field(default_factory=lambda: [0])
    not_date_starts: list[int] = field(default_factory=list)
    runs: list[tuple[int, ...]] = field(default_factory=list)
    run: list[int] = field(default_factory=list)
    reading_at: int = 0
    sound_at: int = 0
    previous: Any = None

    def add(self, word: Any, part: str, key: str) -> None:
        """Record ``word`` (reading ``part``, sound key ``key``) at the current offsets."""
        self._extend_run(word, key)
        if word.part_of_speech()[0] not in ("助詞", "助動詞"):
            self.reading_starts.append(self.reading_at)
            if not _surely_spelled(word) and word.part_of_speech()[0] != "代名詞":
                self.sound_starts.append(self.sound_at)
        if _never_a_date(word):
            self.not_date_starts.append(self.sound_at)
        self.word_starts.append(self.reading_at)
        self.reading_at += len(part)
        self.sound_at += len(key)
        self.sound_bounds.append(self.sound_at)

    def _extend_run(self, word: Any, key: str) -> None:
        if _in_a_name(word):
            self.run.append(self.sound_at)
        elif self.run and not _stray_mora(word, key, self.previous):
            self.close_run()
        elif self.run:
            self.run.append(self.sound_at)
        self.previous = word

    def close_run(self) -> None:
        """End the run of nouns being gathered, if any, at the current offset."""
        if self.run:
            self.runs.append((*self.run, self.sound_at))
            self.run = []


def _query_analysis(terms: tuple[Term, ...], temporal_text: str,
                    words: list[Any]) -> Analysis:
    """A query's analysis: its terms, and its readings and sound keys with the offsets
    where its words start (marks and spaces left out)."""
    kept = [w for w in words if w.part_of_speech()[0] not in ("補助記号", "空白")]
    parts = [to_katakana(w.reading_form()) for w in kept]
    keys = [sound_key(part) for part in parts]
    at = _QueryOffsets()
    for w, part, key in zip(kept, parts, keys, strict=True):
        at.add(w, part, key)
    at.close_run()
    date_reading = "".join(
        w.surface() if _never_a_date(w) or _particle_after_kanji(w, before) else part
        for w, part, before in zip(kept, parts, [None, *kept[:-1]], strict=True))
    return Analysis(terms, temporal_text, "".join(parts), tuple(at.reading_starts),
                    "".join(keys), tuple(at.sound_starts), tuple(at.sound_bounds),
                    date_reading, tuple(at.not_date_starts), tuple(at.word_starts),
                    tuple(at.runs))


def _surely_spelled(word: Any) -> bool:
    """A common word written in kanji (最近, 何時, 今日): whoever wrote or recognised it
    chose it, so no other word is heard by sound where it begins (最近 is not サイゴ).
    The same word in kana (どう, いく) may still be a piece of a misheard one."""
    return word.normalized_form() in STOP_LEMMAS and bool(_KANJI.search(word.surface()))


def _stray_mora(word: Any, key: str, previous: Any) -> bool:
    """A short particle right after a word the analyser guessed: often a piece of a
    misheard word (きっこ|し for ひっこし, けん|たい|会 for 県大会), so it stays in the
    name's run."""
    return previous is not None and _guessed(previous) and \
        word.part_of_speech()[0] in ("助詞", "助動詞") and len(word.surface()) <= 2 and \
        len(key) <= 3


def _guessed(word: Any) -> bool:
    """A word the analyser guessed rather than knew: a name (it tags many misheard words
    as names) or a word in kana only read as a noun or an adverb (いかめ for 胃カメラ,
    ばあ|べ|きゅう for バーベキュー)."""
    pos = word.part_of_speech()
    return pos[1] == "固有名詞" or \
        (pos[0] in ("名詞", "形状詞", "副詞") and bool(_KANA_WORD.match(word.surface())))


def _in_a_name(word: Any) -> bool:
    """A word that may be part of a thing's name: a noun other than a number or a light
    noun (人, 月, 事), a prefix or suffix to one, or a word the analyser did not know."""
    pos = word.part_of_speech()
    if word.normalized_form() in STOP_LEMMAS:
        return False
    return (pos[0] == "名詞" and pos[1] != "数詞") or pos[0] in ("接頭辞", "接尾辞") or \
        _guessed(word) or (pos[0] != "助詞" and bool(KATAKANA.match(word.surface())))


def _particle_after_kanji(word: Any, before: Any) -> bool:
    """A particle or auxiliary right after a word written in kanji: its sound does not
    join that word's into a date word (「朝って」 is not あさって; a recogniser that heard
    明後日 writes it so or in kana)."""
    return before is not None and word.part_of_speech()[0] in ("助詞", "助動詞") and \
        bool(_KANJI.search(before.surface()))


def _never_a_date(word: Any) -> bool:
    """A word whose sound is never taken for a date word: a verb or adjective written in
    kanji (通う reads カヨウ like 火曜, but whoever wrote or recognised it chose the verb).
    A date word the recogniser spelled in kana (かようび) or with wrong kanji (数末 for
    週末) is still read as one, and so is a name: the analyser tags some date words
    (お盆) and many mis-heard ones as names."""
    return word.part_of_speech()[0] in _INFLECTING and bool(_KANJI.search(word.surface()))


_ROMAJI = {
    "kya": "キャ", "kyu": "キュ", "kyo": "キョ", "sha": "シャ", "shu": "シュ", "sho": "ショ",
    "cha": "チャ", "chu": "チュ", "cho": "チョ", "nya": "ニャ", "nyu": "ニュ", "nyo": "ニョ",
    "hya": "ヒャ", "hyu": "ヒュ", "hyo": "ヒョ", "mya": "ミャ", "myu": "ミュ", "myo": "ミョ",
    "rya": "リャ", "ryu": "リュ", "ryo": "リョ", "gya": "ギャ", "gyu": "ギュ", "gyo": "ギョ",
    "ja": "ジャ", "ju": "ジュ", "jo": "ジョ", "bya": "ビャ", "byu": "ビュ", "byo": "ビョ",
    "pya": "ピャ", "pyu": "ピュ", "pyo": "ピョ", "shi": "シ", "chi": "チ", "tsu": "ツ",
    "fu": "フ", "ji": "ジ", "ka": "カ", "ki": "キ", "ku": "ク", "ke": "ケ", "ko": "コ",
    "sa": "サ", "su": "ス", "se": "セ", "so": "ソ", "ta": "タ", "te": "テ", "to": "ト",
    "na": "ナ", "ni": "ニ", "nu": "ヌ", "ne": "ネ", "no": "ノ", "ha": "ハ", "hi": "ヒ",
    "he": "ヘ", "ho": "ホ", "ma": "マ", "mi": "ミ", "mu": "ム", "me": "メ", "mo": "モ",
    "ya": "ヤ", "yu": "ユ", "yo": "ヨ", "ra": "ラ", "ri": "リ", "ru": "ル", "re": "レ",
    "ro": "ロ", "wa": "ワ", "wo": "ヲ", "ga": "ガ", "gi": "ギ", "gu": "グ", "ge": "ゲ",
    "go": "ゴ", "za": "ザ", "zu": "ズ", "ze": "ゼ", "zo": "ゾ", "da": "ダ", "de": "デ",
    "do": "ド", "ba": "バ", "bi": "ビ", "bu": "ブ", "be": "ベ", "bo": "ボ", "pa": "パ",
    "pi": "ピ", "pu": "プ", "pe": "ペ", "po": "ポ", "a": "ア", "i": "イ", "u": "ウ",
    "e": "エ", "o": "オ", "n": "ン",
}


def romaji_to_katakana(word: str) -> str | None:
    """'yoga' -> 'ヨガ' (Hepburn); None when the word is not romanised Japanese."""
    word = word.lower()
    out: list[str] = []
    i = 0
    while i < len(word):
        if i + 1 < len(word) and word[i] == word[i + 1] and word[i] not in "aeioun":
            out.append("ッ")
            i += 1
            continue
        for size in (3, 2, 1):
            kana = _ROMAJI.get(word[i:i + size])
            if kana and not (size == 1 and word[i] == "n" and i + 1 < len(word)
                             and word[i + 1] in "aeiouy"):
                out.append(kana)
                i += size
                break
        else:
            return None
    return "".join(out)


_JAPANESE = re.compile(r"[\u3041-\u30ff\u4e00-\u9fff]")
_EN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'’-]*")
EN_STOP = frozenset(["a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "aren't", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "didn't", "do", "does", "doing", "don't", "down", "during", "each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "let", "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself", "yourselves", "also", "get", "got", "go", "going", "gone", "went", "like", "really", "yeah", "yes", "oh", "hey", "hi", "thanks", "thank", "well", "much", "many", "lot", "lots", "one", "ones", "thing", "things", "something", "anything", "kind", "sort", "way", "time", "times", "day", "days", "today", "yesterday", "tomorrow", "week", "weeks", "month", "months", "year", "years", "ago", "last", "next", "since", "still", "even", "remember", "recall", "know", "think", "told", "tell", "said", "say", "likely", "might", "may", "must"])


def _stem(word: str) -> str:
    """A light English stemmer: plurals and -ing/-ed (runs, running -> run)."""
    for suffix in ("'s", "’s", "ies", "ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: len(word) - len(suffix)]
            return base + ("y" if suffix == "ies" else "")
    return word


def english_key(word: str) -> str:
    """The index key of one English word (lower case, lightly stemmed)."""
    return _stem(word.lower())


def english_terms(text: str) -> tuple[Term, ...]:
    """Content words of English text; capitalised words (names) are proper."""
    terms: dict[str, Term] = {}
    for m in _EN_WORD.finditer(text):
        word = m.group(0).strip("'’-")
        low = word.lower()
        if len(low) < 2 or low in EN_STOP:
            continue
        key = _stem(low)
        if key in EN_STOP:
            continue
        proper = word[0].isupper() and m.start() > 0
        weight = 1.5 if proper else 1.0
        old = terms.get(key)
        if old is None or old.weight < weight:
            terms[key] = Term(frozenset({key}), weight, proper, word)
    return tuple(terms.values())


def _usable_key(key: str) -> bool:
    if not key or key.isdigit() or (key[0] in "何な" and key[:2] in ("何", "なに", "なん")) or \
            key.startswith("何"):
        return False  # question words: 何曜, 何点, なにか
    if len(key) == 1:
        # one kanji carries meaning (酒, 薬, 猫); one kana or latin letter does not
        return "\u4e00" <= key <= "\u9fff" and key not in _WEEKDAY_LEMMAS
    return True


def _bigram_terms(text: str) -> tuple[Term, ...]:
    kata = to_katakana(text.lower())
    grams = {kata[i:i + 2] for i in range(len(kata) - 1)}
    return tuple(Term(frozenset({g}), 0.5, False, g) for g in sorted(grams)
                 if not re.search(r"[\s、。,.!?]", g))


@lru_cache(maxsize=1)
def analyzer() -> Analyzer:
    """The process-wide analyser (Sudachi's dictionary loads once)."""
    return Analyzer()
