"""Tense and anchors of an utterance: does it speak of the past, of a plan, or of neither?

A named period (お盆, 年末, GW, 夏休み...) means its *last* occurrence when the utterance
speaks of the past (「お盆何してたっけ」 in September: this August) and its *next* one
when it speaks of a plan (「お盆どうするの」 in September: next August);
:func:`omoide.memory.language.temporal.resolve` takes the :class:`Tense` from here.

Tense is read on Sudachi's words, so spelling does not matter (してた, した, 行ったっけ,
どうだった are past; する, 行く, するつもり, 予定 are plans):

- the last action verb decides (verbs about remembering — 覚えてる, 忘れた — and
  stative ones — ある, いる — do not): followed by the auxiliary た it is past, else a plan;
- without one, a plan noun (予定, つもり, 計画) makes it a plan;
- else the last adjective, stative verb or copula: past with た (どうだった, 何があった).

:func:`anchor` reads the relative anchors that pick one of repeated events: この前,
こないだ, 前回, 最後に (the latest before now) and 初めて, 最初に (the first).
"""

from __future__ import annotations

import re
from enum import Enum
from typing import Any

from omoide.memory.language.canonical import canonical, to_katakana
from omoide.memory.language.lexicon import analyzer


class Tense(Enum):
    """What an utterance speaks of, for placing a named period in time."""

    PAST = "past"
    """Something done or that happened (した, してた, だった): the last occurrence."""
    FUTURE = "future"
    """A plan (する, 行く, するつもり, 予定): the current or next occurrence."""
    NEUTRAL = "neutral"
    """Neither (「GWって何日から」): the nearest occurrence."""


class Anchor(Enum):
    """Which of repeated events a relative anchor picks."""

    LATEST = "latest"
    """この前, こないだ, この間, 前回, 最後に: the latest before now."""
    FIRST = "first"
    """初めて, 最初に: the first."""


_ABOUT_MEMORY = frozenset({"覚える", "憶える", "忘れる", "思う", "思い出す", "知る", "教える",
                           "言う", "話す"})
"""Verbs about remembering or telling: 「何してたか覚えてる」 is past by its してた."""
_STATIVE = frozenset({"有る", "ある", "居る", "いる", "成る", "なる", "出来る"})
_PLAN_NOUNS = frozenset({"予定", "積もり", "つもり", "計画", "予約"})
_PAST_READING = re.compile(r"(?:タ|ダ)(?:ッケ|ケ|カナ|カシラ|カ|ノ|ンダ|ンダッケ|ヨネ|ネ|ヨ)?$|"
                           r"(?:タ|ダ)(?:ンダ|ノ)?(?:ッケ|カナ)")
"""Without Sudachi: a reading ending in the past auxiliary, with a question tail."""


def tense(text: str) -> Tense:
    """The tense of an utterance (see the module docstring)."""
    words = [w for w in analyzer().morphemes(canonical(text))
             if w.part_of_speech()[0] not in ("補助記号", "空白")]
    if not words:
        return Tense.PAST if _PAST_READING.search(to_katakana(canonical(text))) else \
            Tense.NEUTRAL
    for i in range(len(words) - 1, -1, -1):
        if _is_action(words[i]):
            return Tense.PAST if _past_after(words, i) else Tense.FUTURE
    if any(w.normalized_form() in _PLAN_NOUNS for w in words):
        return Tense.FUTURE
    for i in range(len(words) - 1, -1, -1):
        pos = words[i].part_of_speech()[0]
        if pos in ("動詞", "形容詞") or _is_copula(words[i]):
            return Tense.PAST if _past_after(words, i) else Tense.NEUTRAL
    return Tense.NEUTRAL


def _is_action(word: Any) -> bool:
    if word.part_of_speech()[0] != "動詞":
        return False
    lemmas = {word.normalized_form(), word.dictionary_form()}
    return not lemmas & (_ABOUT_MEMORY | _STATIVE)


def _is_copula(word: Any) -> bool:
    return word.part_of_speech()[0] == "助動詞" and word.normalized_form() in ("だ", "です")


def _past_after(words: list[Any], i: int) -> bool:
    """Whether the predicate at ``i`` is followed by た before anything else asserts:
    auxiliaries and the て of てる may come between (して|た, して|て|た, やっ|ちゃっ|た)."""
    for w in words[i + 1:i + 4]:
        pos = w.part_of_speech()
        if pos[0] == "助動詞" and w.normalized_form() == "た":
            return True
        if pos[0] == "助動詞" or (pos[0] == "助詞" and pos[1] == "接続助詞") or \
                (pos[0] == "動詞" and pos[1] == "非自立可能"):
            continue
        return False
    return False


_LATEST = re.compile(r"この前|このまえ|こないだ|この間|このあいだ|前回|ぜんかい|最後に|さいごに")
_FIRST = re.compile(r"初めて|はじめて|最初に|さいしょに")


def anchor(text: str) -> Anchor | None:
    """The relative anchor of an utterance, if any (この前 → latest, 初めて → first).

    Only for the utterance's own question: 「この前の土曜」 names a day, which
    :func:`omoide.memory.language.temporal.resolve` reads first.
    """
    text = canonical(text)
    if _LATEST.search(text):
        return Anchor.LATEST
    if _FIRST.search(text):
        return Anchor.FIRST
    return None


def anchor_words(text: str) -> tuple[str, ...]:
    """The words that set the utterance's anchor (最後に, この前): a time, like a date's
    words, not something a memory is about (「卒論の最後の仕上げ」 is no visit)."""
    text = canonical(text)
    return tuple(m.group(0) for pattern in (_LATEST, _FIRST) for m in pattern.finditer(text))
