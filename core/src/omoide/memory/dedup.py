"""Is a new fact new, a duplicate, or an update of a stored one?

- same text after canonicalisation -> duplicate;
- cosine >= the threshold and the same dates and numbers -> duplicate;
- a near-duplicate whose dates, numbers or status changed (the plan moved, was
  cancelled) -> update: the new fact is stored and the old one marked superseded.

"Near" is the same cosine threshold, or a slightly lower one when the new fact
says that something changed (変え, やめ, 延期 ...) and shares a name with the old —
and, either way, the two sentences must share a good part of their wording
(:func:`lexical_overlap`), unless the new fact is a change naming the same thing.
Cosine alone is not enough: embedders differ in scale
(multilingual-e5 puts two different facts about one ramen shop at 0.922, over the
reference's 0.92), while two statements of one fact always share their content words.
"""

from __future__ import annotations

import re
from datetime import date
from enum import StrEnum

from omoide.memory.dates import absolute_dates
from omoide.memory.text import canonical, dedup_key

CHANGE_MARKERS = re.compile(r"変え|変更|やめ|止め|中止|延期|早まり|早め|遅らせ|遅れ|キャンセル|"
                            r"取りやめ|取り止め|ずれ|ずらし|なくなっ|になった")
_NUMBER = re.compile(r"\d+")
CHANGE_MARGIN = 0.05
LEXICAL_FLOOR = 0.4
_SUBJECT = re.compile(r"^あなた(は|が|の)?")
_PUNCT = re.compile(r"[\s、。，．,.!?！？「」『』（）()・]")


class Verdict(StrEnum):
    NEW = "new"
    DUPLICATE = "duplicate"
    UPDATE = "update"


def _numbers(text: str) -> set[str]:
    return set(_NUMBER.findall(canonical(text)))


def _bigrams(text: str) -> set[str]:
    body = _PUNCT.sub("", _SUBJECT.sub("", canonical(text)))
    return {body[i:i + 2] for i in range(len(body) - 1)} or {body}


def lexical_overlap(a: str, b: str) -> float:
    """Share of the shorter sentence's character bigrams found in the other (0..1),
    ignoring the subject あなたは and punctuation."""
    x, y = _bigrams(a), _bigrams(b)
    return len(x & y) / max(1, min(len(x), len(y)))


def compare(new_text: str, old_text: str, cosine: float, threshold: float, *,
            new_said_on: date | None = None, old_said_on: date | None = None,
            shared_names: bool = False) -> Verdict:
    """Verdict of a new fact against one stored fact with cosine ``cosine``."""
    if dedup_key(new_text) == dedup_key(old_text):
        return Verdict.DUPLICATE
    changed = CHANGE_MARKERS.search(new_text) is not None
    related = (lexical_overlap(new_text, old_text) >= LEXICAL_FLOOR
               or (changed and shared_names))
    if not related:
        return Verdict.NEW
    if cosine >= threshold:
        same_dates = (set(absolute_dates(canonical(new_text), new_said_on))
                      == set(absolute_dates(canonical(old_text), old_said_on)))
        if same_dates and _numbers(new_text) == _numbers(old_text) and not changed:
            return Verdict.DUPLICATE
        return Verdict.UPDATE
    if changed and shared_names and cosine >= threshold - CHANGE_MARGIN:
        return Verdict.UPDATE
    return Verdict.NEW
