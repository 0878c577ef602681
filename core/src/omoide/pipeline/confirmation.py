"""Did the person say yes? A deterministic reading of a spoken Japanese answer.

A tool call that changes something (forget a memory, switch a light) runs only after the
person confirms it in their next utterance. That decision is not left to the chat model:
a model that misreads 「いや、いいよ」 must not delete anything. So the core reads the
answer itself, and anything that is not a clear yes is not a yes:

- a refusal anywhere wins (「いや」「だめ」「やめて」「待って」「違う」「しないで」...);
- a clear consent (「はい」「うん」「お願い」「いいよ」「OK」「消して」...) is a yes;
- everything else — including 「大丈夫」 and 「いいです」, which often mean "no, thanks" —
  is ``UNCLEAR`` and the action is dropped.
"""

from __future__ import annotations

import enum
import re
import unicodedata


class Answer(enum.StrEnum):
    YES = "yes"
    NO = "no"
    UNCLEAR = "unclear"


_NO = re.compile(
    r"(?:いいえ|いえ、|^いえ|^いや|いやいや|いや[、,]|だめ|ダメ|駄目|やめ|止めて|待って|まって|"
    r"ちょっと待|キャンセル|取り消|違う|ちがう|しないで|ないで|やっぱり|ノー|\bno\b|"
    r"まだ|今はいい|結構です|けっこうです|じゃない)")
_YES = re.compile(
    r"(?:^はい|^うん|^ええ|^そう|^おう|いいよ|いいね|お願い|おねがい|頼む|たのむ|オーケー|"
    r"おっけー|オッケー|\bok\b|\byes\b|もちろん|どうぞ|やって|消して|忘れて|"
    r"つけて|して(?:ください|くれ|ね)?$)")


def read_answer(utterance: str) -> Answer:
    """YES, NO or UNCLEAR for the person's reply to a confirmation question."""
    text = unicodedata.normalize("NFKC", utterance).strip().lower()
    text = re.sub(r"[。!！?？…〜ー\s]+$", "", text)
    if not text:
        return Answer.UNCLEAR
    if _NO.search(text):
        return Answer.NO
    if _YES.search(text):
        return Answer.YES
    return Answer.UNCLEAR
