"""What a sentence does: states something, asks, asks for something, or greets.

Only statements can become facts about the person. A question (「おすすめの映画ある？」),
a request to the assistant (「音楽かけて」) or a greeting (「おはようございます」) says
nothing lasting about them, and a recogniser often drops the question mark, so the
decision is read from the grammar of the sentence, not from its punctuation or its
words. With a Sudachi tokenizer (word classes and conjugation forms):

- **a question**: a final particle か／かな／かしら／っけ (かな after a volitional form,
  「行こうかな」, is an intention, so a statement); an interrogative word (何 いつ どこ
  誰 どう なぜ どんな どれ どっち いくら…) that is not indefinite (何か, 誰でも, どこにも)
  and not inside an embedded question (「何を食べたか忘れた」); or a bare verb of
  existence, knowledge or ability (ある いる わかる 知る できる) ending the sentence
  right after its particle-less noun (「時間ある」「作り方わかる」: casual questions drop
  が, statements keep it or add よ／んだ);
- **a request**: an imperative, 〜てください／ちょうだい, or, with no one else named
  as the doer (a noun marked が／は, or a person marked に), a sentence ending in a
  verb's て-form (「音楽かけて」「教えてね」), 〜てくれる／もらえる (and their
  negatives) or 〜てほしい;
- **a greeting**: interjections only (おはよう, こんばんは, ありがとうございます); a greeting
  or filler that opens a longer sentence (「おはよう、今日は…」) is stripped by
  :func:`strip_opening_interjections`.

Without a tokenizer the caller's punctuation rules decide (:func:`speech_act` returns
``None``).
"""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any, Literal

SpeechAct = Literal["statement", "question", "request", "greeting"]

_INTERROGATIVES = frozenset({"何", "なに", "なん", "いつ", "どこ", "誰", "だれ", "どう", "なぜ",
                             "どうして", "なんで", "どんな", "どれ", "どっち", "どちら", "いくら",
                             "いくつ", "幾つ", "どの", "どなた"})
_INDEFINITE_AFTER = re.compile(r"(?:か|も|でも|だって|(?:と|に|へ|から|まで|より)(?:でも|も))")
"""What makes an interrogative indefinite (何か, 何も, 誰でも, 誰とでも, どこにも)."""
_QUESTION_PARTICLES = frozenset({"か", "かしら", "っけ", "け"})
_ASKING_VERBS = frozenset({"ある", "有る", "在る", "いる", "居る", "分かる", "判る", "知る",
                           "出来る"})
"""Lemmas (Sudachi's normalised forms) of existence, knowledge and ability."""
_BENEFACTIVES = frozenset({"呉れる", "貰う"})
_REQUEST_ENDS = frozenset({"ください", "下さい", "ちょうだい", "頂戴"})
_SOFTENERS = frozenset({"ね", "よ", "な", "ねえ", "ねぇ", "ー", "〜"})
_TAIL_MARKS = frozenset({"補助記号", "空白"})


def _pos(m: Any) -> tuple[str, ...]:
    return tuple(m.part_of_speech())


def _words(sentence: str, tokenizer: Any) -> list[Any]:
    """The morphemes of ``sentence`` without trailing punctuation or spaces."""
    ms = list(tokenizer.tokenize(sentence))
    while ms and _pos(ms[-1])[0] in _TAIL_MARKS:
        ms.pop()
    return ms


def strip_opening_interjections(sentence: str, tokenizer: Any) -> str:
    """``sentence`` without the interjections (greetings, fillers) that open it when a
    comma or space follows them (「おはよう、今日は箱根に行くんだ」 → 「今日は箱根に行くんだ」)."""
    if tokenizer is None:
        return sentence
    ms = list(tokenizer.tokenize(sentence))
    i = 0
    cut = 0
    while i < len(ms) and _pos(ms[i])[0] == "感動詞":
        j = i + 1
        while j < len(ms) and _pos(ms[j])[0] in _TAIL_MARKS:
            j += 1
        if j == i + 1 or j >= len(ms):
            break
        cut = ms[j].begin()
        i = j
    return sentence[cut:] if cut else sentence


def speech_act(sentence: str, tokenizer: Any) -> SpeechAct | None:
    """What ``sentence`` does (see the module doc); None without a tokenizer."""
    if tokenizer is None:
        return None
    if sentence.rstrip().endswith(("?", "？")):
        return "question"
    ms = _words(sentence, tokenizer)
    if not ms:
        return "greeting"
    if _is_greeting(ms):
        return "greeting"
    if _is_request(ms):
        return "request"
    if _is_question(ms):
        return "question"
    return "statement"


def _is_greeting(ms: list[Any]) -> bool:
    """Interjections, with at most a polite auxiliary (ございます, です)."""
    if _pos(ms[0])[0] != "感動詞":
        return False
    return all(_pos(m)[0] in ("感動詞", "助動詞", *_TAIL_MARKS)
               or m.normalized_form() in ("ござる", "御座る") for m in ms)


def _strip_softeners(ms: list[Any]) -> list[Any]:
    out = list(ms)
    while len(out) > 1 and _pos(out[-1])[1] == "終助詞" and out[-1].surface() in _SOFTENERS:
        out.pop()
    return out


def _is_request(ms: list[Any]) -> bool:
    ms = _strip_softeners(ms)
    last = ms[-1]
    pos = _pos(last)
    before = ms[-2] if len(ms) > 1 else None
    after_te = before is not None and _pos(before)[1] == "接続助詞" and \
        before.surface() in ("て", "で")
    others = _someone_else_named(ms)
    if pos[1] == "接続助詞" and last.surface() in ("て", "で") and before is not None:
        # 「音楽かけて」; not 「疲れちゃって」 (an auxiliary before て explains, not asks)
        # nor 「息子が熱を出して」 (someone else does it: the story goes on)
        return _pos(before)[0] == "動詞" and not others
    if len(pos) > 5 and pos[5].startswith("命令形"):
        return True
    if last.surface() in _REQUEST_ENDS or last.normalized_form() in _REQUEST_ENDS:
        return True
    if after_te and last.normalized_form() in _BENEFACTIVES and not others:
        return True   # 「起こしてくれる」「調べてもらえる」 (「母が送ってくれる」 states)
    negated_benefactive = (before is not None and len(ms) > 2
                           and _pos(ms[-3])[1] == "接続助詞"
                           and before.normalized_form() in _BENEFACTIVES
                           and last.normalized_form() in ("無い", "ない", "ぬ"))
    if negated_benefactive and not others:
        return True   # 「教えてくれない」
    return after_te and last.normalized_form() == "欲しい" and not others


def _someone_else_named(ms: list[Any]) -> bool:
    """Whether a doer other than the listener is named: a noun marked が or は, or a
    plain noun or a name marked に (「夫に」, not 「7時に」「一緒に」)."""
    for prev, m in pairwise(ms):
        if _pos(m)[1] not in ("格助詞", "係助詞") or _pos(prev)[0] not in ("名詞", "代名詞"):
            continue
        if m.surface() in ("が", "は"):
            return True
        if m.surface() == "に" and (_pos(prev)[0] == "代名詞"
                                   or _pos(prev)[1:3] in (("普通名詞", "一般"),)
                                   or _pos(prev)[1] == "固有名詞"):
            return True
    return False


def _is_question(ms: list[Any]) -> bool:
    last = ms[-1]
    if _pos(last)[1] == "終助詞" and last.surface() in ("な", "なあ", "ね") and len(ms) > 1 \
            and ms[-2].surface() == "か":
        # 「晴れるかな」 wonders; 「行こうかな」 (volitional before か) intends
        return not _is_volitional(ms[-3]) if len(ms) > 2 else True
    if _pos(last)[1] == "終助詞" and last.surface() in _QUESTION_PARTICLES:
        return not (last.surface() == "か" and len(ms) > 1 and _is_volitional(ms[-2]))
    if _asks_with_an_interrogative(ms):
        return True
    return _bare_asking_verb(ms)


def _is_volitional(m: Any) -> bool:
    pos = _pos(m)
    return len(pos) > 5 and pos[5].startswith("意志推量形")


def _asks_with_an_interrogative(ms: list[Any]) -> bool:
    for i, m in enumerate(ms):
        surface = m.surface()
        interrogative = surface in _INTERROGATIVES or (
            surface.startswith("何") and _pos(m)[0] == "名詞")   # 何歳 何時 何回
        if not interrogative:
            continue
        if _INDEFINITE_AFTER.match("".join(n.surface() for n in ms[i + 1:i + 4])):
            continue   # 何か, 誰でも, 誰とでも, どこにも
        embedded = any(n.surface() == "か" and _pos(n)[1] in ("副助詞", "終助詞")
                       for n in ms[i + 1:-1])
        if not embedded:
            return True
    return False


def _bare_asking_verb(ms: list[Any]) -> bool:
    """「時間ある」「作り方わかる」「この曲知ってる」: a verb of existence, knowledge or
    ability in its plain form ends the sentence right after a noun with no particle."""
    last = ms[-1]
    verb = last
    noun_at = len(ms) - 2
    if _pos(last)[0] == "助動詞" and last.surface() in ("てる", "ている") and len(ms) > 1:
        verb, noun_at = ms[-2], len(ms) - 3
    if _pos(verb)[0] != "動詞" or verb.normalized_form() not in _ASKING_VERBS:
        return False
    pos = _pos(last)
    if len(pos) > 5 and not pos[5].startswith("終止形"):
        return False
    return noun_at >= 0 and _pos(ms[noun_at])[0] in ("名詞", "代名詞") and \
        _pos(ms[noun_at])[2] != "副詞可能"
