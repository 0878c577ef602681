"""How words sound: katakana readings as phoneme keys, and fuzzy matching by sound.

Recognisers mis-hear by sound, not by spelling: 週末 comes back as 数末 (スウマツ for
シュウマツ), ゼミ as セミ, TOEIC as どういく. Comparing spellings loses these; comparing
*sound keys* of the readings keeps them:

- :func:`sound_key` turns a katakana reading into a compact phoneme string in which
  the distinctions recognisers most often lose are folded away: voicing (ガ/カ, ザ/サ,
  ダ/タ, バ/パ/ハ), vowel length (シュウ/シュ, ゴール/ゴル), the small ッ, and the
  palatal glide (シュ/ス, チャ/タ). What is left is close to what a listener is sure of.
- :class:`SoundIndex` holds one person's vocabulary (the names, places and things in
  their memories) by sound key and finds the words whose key appears, approximately,
  inside a query's key (RapidFuzz's partial alignment: the best-matching window of the
  query, scored by normalised edit similarity, in C++). Short words must match
  exactly: two morae leave too little to be fuzzy about (ムギ must not match ムリ).

Matching only against the person's own vocabulary is what keeps this precise: a mis-heard
word can only turn into something this person has actually talked about.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rapidfuzz import fuzz, process

# One consonant letter per consonant (sh -> x, ch -> c, ts -> q) so that edit distance
# counts one sound as one edit; the glide of palatal morae is written as "Y" (ヤ is "y").
_BASE: dict[str, str] = {
    "ア": "a", "イ": "i", "ウ": "u", "エ": "e", "オ": "o",
    "カ": "ka", "キ": "ki", "ク": "ku", "ケ": "ke", "コ": "ko",
    "ガ": "ga", "ギ": "gi", "グ": "gu", "ゲ": "ge", "ゴ": "go",
    "サ": "sa", "シ": "xi", "ス": "su", "セ": "se", "ソ": "so",
    "ザ": "za", "ジ": "ji", "ズ": "zu", "ゼ": "ze", "ゾ": "zo",
    "タ": "ta", "チ": "ci", "ツ": "qu", "テ": "te", "ト": "to",
    "ダ": "da", "ヂ": "ji", "ヅ": "zu", "デ": "de", "ド": "do",
    "ナ": "na", "ニ": "ni", "ヌ": "nu", "ネ": "ne", "ノ": "no",
    "ハ": "ha", "ヒ": "hi", "フ": "fu", "ヘ": "he", "ホ": "ho",
    "バ": "ba", "ビ": "bi", "ブ": "bu", "ベ": "be", "ボ": "bo",
    "パ": "pa", "ピ": "pi", "プ": "pu", "ペ": "pe", "ポ": "po",
    "マ": "ma", "ミ": "mi", "ム": "mu", "メ": "me", "モ": "mo",
    "ヤ": "ya", "ユ": "yu", "ヨ": "yo",
    "ラ": "ra", "リ": "ri", "ル": "ru", "レ": "re", "ロ": "ro",
    "ワ": "wa", "ヰ": "i", "ヱ": "e", "ヲ": "o", "ン": "N", "ヴ": "bu",
    "ァ": "a", "ィ": "i", "ゥ": "u", "ェ": "e", "ォ": "o",
    "ャ": "ya", "ュ": "yu", "ョ": "yo", "ヮ": "wa",
}
_SMALL_GLIDE = {"ャ": "a", "ュ": "u", "ョ": "o"}
_SMALL_VOWEL = {"ァ": "a", "ィ": "i", "ゥ": "u", "ェ": "e", "ォ": "o"}
_VOWELS = "aiueo"
# Folding for the sound key: voicing, and the palatal consonants to their plain ones.
_FOLD = str.maketrans({"g": "k", "z": "s", "j": "s", "x": "s", "d": "t", "c": "t",
                       "q": "t", "b": "h", "p": "h", "f": "h", "Y": ""})


def phonemes(katakana: str) -> str:
    """A katakana reading as phonemes: シュウマツ -> ``xYuumaqu``, ゴール -> ``gooru``.

    Characters that are not katakana are dropped; ー repeats the vowel before it and
    ッ is kept as ``Q``.
    """
    out: list[str] = []
    for ch in katakana:
        if ch == "ー":
            if out and out[-1][-1:] in _VOWELS:
                out.append(out[-1][-1])
            continue
        if ch == "ッ":
            out.append("Q")
            continue
        if ch in _SMALL_GLIDE and out and out[-1][-1:] == "i" and len(out[-1]) >= 2:
            out[-1] = out[-1][:-1] + "Y" + _SMALL_GLIDE[ch]   # キャ -> kYa, シュ -> xYu
            continue
        if ch in _SMALL_VOWEL and out and out[-1][-1:] in _VOWELS and len(out[-1]) >= 2:
            out[-1] = out[-1][:-1] + _SMALL_VOWEL[ch]          # ティ -> ti, ファ -> fa
            continue
        p = _BASE.get(ch)
        if p is not None:
            out.append(p)
    return "".join(out)


def fold(ph: str) -> str:
    """What survives mis-hearing: no voicing, no glide, no length, no ッ (see module doc)."""
    s = ph.translate(_FOLD).replace("Q", "")
    out: list[str] = []
    for c in s:
        if out and c in _VOWELS and out[-1] == c:
            continue                                  # long vowel: ウウ -> ウ
        if out and c == "u" and out[-1] == "o":
            continue                                  # オウ -> オー
        if out and c == "i" and out[-1] == "e":
            continue                                  # エイ -> エー
        out.append(c)
    return "".join(out)


def sound_key(katakana: str) -> str:
    """The folded phoneme key of a reading: シュウマツ and スウマツ both give ``sumatu``."""
    return fold(phonemes(katakana))


def min_similarity(key_length: int) -> float:
    """The similarity (0..100) a word of this key length needs to count as heard.

    Two morae (key of four letters or less) must match exactly; longer words may lose
    about one sound in six.
    """
    if key_length <= 4:
        return 100.0
    if key_length <= 6:
        return 83.0
    return 80.0


@dataclass(frozen=True)
class SoundMatch:
    """A vocabulary word heard (approximately) in a query."""

    key: str
    similarity: float
    """0..100: normalised edit similarity of the word's key and the best query window."""


class SoundIndex:
    """One person's vocabulary by sound key, for fuzzy matching of queries.

    Keys are added with the ids of the memories they come from; :meth:`heard` returns
    the keys found in a query's sound key. Cost is one C++ alignment per distinct key.
    """

    def __init__(self, *, whole_words: bool = True) -> None:
        """``whole_words``: a word heard approximately must end where a query word ends
        (within a letter); off for date words, which a recogniser runs into the next
        word (ライスドヨー for 来週土曜)."""
        self._whole_words = whole_words
        self._ids: dict[str, set[str]] = {}
        self._readings: dict[str, set[str]] = {}
        self._keys: list[str] = []
        self._dirty = False

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, key: str, memory_id: str, reading: str = "") -> None:
        """Index ``key`` for ``memory_id`` (keys under four letters are too short to
        tell apart by sound and are left to exact matching). ``reading``: the katakana
        the key was made from (:meth:`spelled_in` tells exact readings apart)."""
        if len(key) < 4:
            return
        ids = self._ids.get(key)
        if ids is None:
            self._ids[key] = {memory_id}
            self._dirty = True
        else:
            ids.add(memory_id)
        if reading:
            self._readings.setdefault(key, set()).add(reading)

    def discard(self, key: str, memory_id: str) -> None:
        ids = self._ids.get(key)
        if ids is None:
            return
        ids.discard(memory_id)
        if not ids:
            del self._ids[key]
            self._readings.pop(key, None)
            self._dirty = True

    def spelled_in(self, key: str, reading: str) -> bool:
        """Whether one of the readings behind ``key`` occurs as it is in ``reading`` (an
        exact match, which exact matching has already counted)."""
        return any(r in reading for r in self._readings.get(key, ()))

    def keys(self) -> list[str]:
        if self._dirty:
            self._keys = sorted(self._ids)
            self._dirty = False
        return self._keys

    def ids(self, key: str) -> set[str]:
        return self._ids.get(key, set())

    def heard(self, query_key: str, word_starts: Sequence[int],
              word_bounds: Sequence[int] = (), exclude: Iterable[str] = (),
              ) -> list[SoundMatch]:
        """Vocabulary keys heard inside ``query_key``, best first.

        A word counts only where the query has a word start (``word_starts``, offsets
        in ``query_key``; one letter of slack for longer words), so a word is never
        assembled from the end of one word and the start of the next; a short word
        (exact match only) must also end where a query word ends (``word_bounds``).
        ``exclude``: keys not to report.

        A query word that is itself one of the person's longer words (働い where a memory
        says 働いていて) was heard right: no other word is heard by sound where it begins
        (アタラシ is not heard in ハタライテ).
        """
        if not query_key or not self._ids:
            return []
        self.keys()
        skip = set(exclude)
        starts = set(word_starts)
        bounds = set(word_bounds) | {len(query_key)}
        known = self._known_words(query_key, starts, bounds)
        fuzzy_starts = starts - set(known)
        found = process.extract(query_key, self._keys, scorer=fuzz.partial_ratio,
                                score_cutoff=80.0, limit=None)
        out: list[SoundMatch] = []
        for key, score, _ in found:
            if key in skip or score < min_similarity(len(key)):
                continue
            if len(key) > len(query_key) + 1:
                continue  # the word is longer than all that was said
            if len(key) <= 4:
                if any(query_key.startswith(key, s) and s + len(key) in bounds for s in starts):
                    out.append(SoundMatch(key, 100.0))
                continue
            best = 100.0 if key in known.values() else \
                _aligned_similarity(key, query_key, fuzzy_starts,
                                    bounds if self._whole_words else None)
            if best >= min_similarity(len(key)):
                out.append(SoundMatch(key, best))
        out.sort(key=lambda m: (-m.similarity, -len(m.key)))
        return out


    def _known_words(self, query_key: str, starts: set[int],
                     bounds: set[int]) -> dict[int, str]:
        """The query's words (by where they start) that are the person's own words of
        at least :data:`KNOWN_WORD_LETTERS` letters, spelled out in full."""
        ends = sorted(bounds)
        known: dict[int, str] = {}
        for s in starts:
            end = next((b for b in ends if b > s), len(query_key))
            word = query_key[s:end]
            if len(word) >= KNOWN_WORD_LETTERS and word in self._ids:
                known[s] = word
        return known


KNOWN_WORD_LETTERS = 5
"""A query word this long that the person's memories contain is taken as heard right."""


def _aligned_similarity(key: str, query_key: str, starts: set[int],
                        bounds: set[int] | None) -> float:
    """The best similarity of ``key`` to a window of the query that begins at a word start
    and, given ``bounds``, ends within a letter of a word's end (早じまい does not hold
    話: ハヤシ is a piece of a word, not a word heard)."""
    best = 0.0
    n = len(key)
    for s in starts:
        for begin in (s, s + 1, s - 1):
            if begin < 0 or begin >= len(query_key):
                continue
            for size in (n - 1, n, n + 1):
                window = query_key[begin:begin + size]
                end = begin + len(window)
                if len(window) < max(3, n - 1) or (bounds is not None and not (
                        end in bounds or end - 1 in bounds or end + 1 in bounds)):
                    continue
                score = fuzz.ratio(key, window)
                if score > best:
                    best = score
    return best



def heard_as_a_name(key: str, query_key: str, noun_runs: Sequence[Sequence[int]]) -> bool:
    """Whether ``key`` is heard in ``query_key`` as whole nouns: a window on word
    boundaries inside one run of adjacent nouns (``noun_runs``, see
    :attr:`omoide.memory.language.lexicon.Analysis.noun_runs`; a longer word may begin
    one letter in, as :meth:`SoundIndex.heard` allows) sounds like it, not one pieced
    from a noun and the verb or particle after it (「人だっけ」 heard as ひとか)."""
    need = min_similarity(len(key))
    slack = (0, 1) if len(key) > 4 else (0,)
    for run in noun_runs:
        for i, start in enumerate(run[:-1]):
            for begin in (start + d for d in slack):
                for end in run[i + 1:]:
                    if abs((end - begin) - len(key)) <= 1 and \
                            fuzz.ratio(key, query_key[begin:end]) >= need:
                        return True
    return False
