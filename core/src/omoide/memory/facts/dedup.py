"""Is a new fact new, a duplicate, or an update of a stored one?

A duplicate or an update needs **the same subject**: the two facts must share a name or a
topic (:mod:`omoide.memory.facts.shape`), and what one says beyond the other decides:

- the same text after canonicalisation -> duplicate;
- each side says something the other does not (another person, place, activity or
  predicate: 「佐藤さんは札幌に住んでいる」/「鈴木さんは仙台に住んでいる」,
  「猫が好き」/「猫を飼っている」) -> new, two facts;
- the new fact says nothing the old one does not, with the same dates, numbers and
  polarity -> duplicate (when the vectors agree too: cosine at or above the threshold);
- the same words with another value — another date for a plan still ahead, another number,
  the opposite polarity, another value of one slot (好き -> 嫌い) -> update: the new fact
  is stored and the old one marked superseded;
- the new fact restates the old one with more detail (and the vectors agree) -> update;
- the new fact states a change (変えた, やめた, 延期, 引っ越した, …になった) of more than
  half of what the old one was about, of a compatible kind -> update, even though the
  wording differs (「ラーメンより蕎麦派になった」 over 「ラーメンが好きだ」).

Close wording, a close vector or a shared date alone never make two facts one: different
names, places, numbers or activities are different facts. Without Sudachi only exact
duplicates are recognised (nothing is merged on a guess).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from enum import StrEnum
from functools import lru_cache

from omoide.memory.facts.shape import PREFERENCE, FactShape, Word, shape_of
from omoide.memory.language.canonical import dedup_key

# Kinds of fact that can replace one another (a plan becomes an event; a habit and a
# preference describe one liking). Kinds outside these groups (other, fact) fit any.
_KIND_GROUPS = ({"plan", "event"}, {"preference", "habit"}, {"person", "profile"})
CHANGE_COVERAGE = 0.5


class Verdict(StrEnum):
    NEW = "new"
    DUPLICATE = "duplicate"
    UPDATE = "update"


@dataclass(frozen=True)
class FactView:
    """A fact as dedup sees it: its text, kind, shape and the day it was said."""

    text: str
    kind: str
    shape: FactShape
    said_on: date | None = None


def view(text: str, kind: str = "other", entities: Sequence[str] = (),
         said_on: date | None = None) -> FactView:
    """Analyse a fact for :func:`compare` (cached: stored facts are compared often)."""
    return _view(text, kind, tuple(entities), said_on)


@lru_cache(maxsize=8192)
def _view(text: str, kind: str, entities: tuple[str, ...], said_on: date | None) -> FactView:
    return FactView(text, kind, shape_of(text, entities, said_on), said_on)


def kinds_compatible(a: str, b: str) -> bool:
    """Whether facts of kinds ``a`` and ``b`` may replace one another (a plan and the
    event it became; a habit and a preference)."""
    if a == b:
        return True
    group_a = next((g for g in _KIND_GROUPS if a in g), None)
    group_b = next((g for g in _KIND_GROUPS if b in g), None)
    return group_a is None or group_b is None or group_a is group_b


def _unmatched(words: Sequence[Word], others: Sequence[Word]) -> list[Word]:
    return [w for w in words if not any(w.matches(o) for o in others)]


def _weight(words: Sequence[Word]) -> float:
    return sum(w.weight for w in words)


def compare(new: FactView, old: FactView, cosine: float, threshold: float) -> Verdict:
    """Verdict of the fact ``new`` against the stored fact ``old`` (vectors at ``cosine``)."""
    if dedup_key(new.text) == dedup_key(old.text):
        return Verdict.DUPLICATE
    a, b = new.shape, old.shape
    if not (a.analysed and b.analysed):
        return Verdict.NEW
    kinds_ok = kinds_compatible(new.kind, old.kind)
    extra_new = _unmatched(a.words, b.words)
    extra_old = _unmatched(b.words, a.words)
    if _relation_value_changed(a, b, extra_new, extra_old):
        return Verdict.UPDATE if kinds_ok else Verdict.NEW
    if not any(w.matches(o) for w in a.anchors for o in b.anchors):
        return Verdict.NEW  # not about the same person, place, thing or activity
    if a.change:
        return Verdict.UPDATE if kinds_ok and _change_of(a, b) else Verdict.NEW
    # Another preference (好き -> 嫌い) is another value of one slot, not a conflict.
    changed = bool(any(w.slot == PREFERENCE for w in extra_new)
                   and any(w.slot == PREFERENCE for w in extra_old))
    if changed:
        extra_new = [w for w in extra_new if w.slot != PREFERENCE]
        extra_old = [w for w in extra_old if w.slot != PREFERENCE]
    if extra_new and extra_old:
        return Verdict.NEW  # each says something the other does not: two facts
    dates_changed = bool(a.dates) and not set(a.dates) <= set(b.dates)
    if dates_changed and b.dates and new.said_on is not None and max(b.dates) < new.said_on:
        return Verdict.NEW  # the old one had happened when the new one was said
    numbers_changed = bool(a.numbers) and not set(a.numbers) <= set(b.numbers)
    if changed or dates_changed or numbers_changed or a.negative != b.negative:
        return Verdict.UPDATE if kinds_ok else Verdict.NEW
    if cosine < threshold:
        return Verdict.NEW  # the words agree but the vectors do not: keep both
    return Verdict.UPDATE if extra_new else Verdict.DUPLICATE


def _relation_value_changed(a: FactShape, b: FactShape, extra_new: Sequence[Word],
                            extra_old: Sequence[Word]) -> bool:
    """Whether ``a`` gives a relation of ``b`` (where someone lives or works) another
    value: they share the relation, and what differs on both sides is only places or
    organisations (「大阪に引っ越した」 over 「東京に住んでいる」), never a person
    (「鈴木さんは仙台に」 is not 「佐藤さんは札幌に」) or anything else."""
    relations = {w.relation for w in a.words if w.relation} & {
        w.relation for w in b.words if w.relation}
    if not relations or not extra_new or not extra_old:
        return False
    return all(w.role == "name" and not w.person for w in (*extra_new, *extra_old))


def _change_of(a: FactShape, b: FactShape) -> bool:
    """Whether the change stated in ``a`` is about what ``b`` says: more than half of
    b's names and topics (by weight) reappear, and b's predicates are a's, share a
    slot with a's, or a names no predicate of its own (「箱根行きをやめた」)."""
    covered = [w for w in b.anchors if any(w.matches(o) for o in a.words)]
    if _weight(covered) <= CHANGE_COVERAGE * _weight(b.anchors):
        return False
    new_predicates = [w for w in a.words if w.role == "predicate"]
    if not new_predicates:
        return True
    new_slots = {w.slot for w in a.words if w.slot}
    return all(any(p.matches(o) for o in a.words) or (p.slot is not None and p.slot in new_slots)
               for p in b.words if p.role == "predicate")


def said_to_replace(replaces: str, old: FactView) -> bool:
    """Whether ``old`` is what a new fact says it replaces (:attr:`Fact.replaces`, a few
    words such as 「コーヒーを飲む習慣」 or 「箱根旅行の日程」): ``old`` holds at least half
    of what those words are about (their nouns, or their predicates when they name
    nothing), and at least one of their nouns when they have any."""
    said = shape_of(replaces)
    if not (said.analysed and old.shape.analysed):
        return False
    anchors = said.anchors
    covered = [w for w in anchors if any(w.matches(o) for o in old.shape.words)]
    if not covered or _weight(covered) < CHANGE_COVERAGE * _weight(anchors):
        return False
    return not said.nouns or any(w.role != "predicate" for w in covered)
