"""The profile block as a view: which lasting facts left out by the budget this turn is
about, so that they take the place of less important ones (:func:`with_relevant`).

A year of use leaves more lasting facts (habits, likes, the plant's name) than the block
holds; the ones that fit are the most important in general, not for this utterance. A
fact the budget left out comes in when it is as close to the utterance by meaning as
anything the dense channel found (「最近何時ごろに寝るようにしてる?」 and 「夜は12時前に寝る
ようにしている」), and the utterance is about the person (not a command, not a question
about a thing).
"""

from __future__ import annotations

from omoide.components import Profile
from omoide.memory.index.person_index import LARGE_INDEX, UserIndex
from omoide.memory.recall.robust.query import PreparedQuery
from omoide.types import FloatArray

CLOSE_TO_THE_BEST = 0.02
"""Cosine below the best match within which an overflow fact counts as as close."""

MOST_BROUGHT_IN = 2
"""Overflow facts brought in per turn at most."""


def about_the_person(q: PreparedQuery) -> bool:
    """Whether the utterance is about the person's own life (their memories or their
    situation), so their lasting facts may answer it."""
    i = q.intent
    return not i.command and not i.impersonal and not i.calendar and \
        (i.recall or (i.personal and not i.general))


def relevant_overflow(index: UserIndex, profile: Profile, vector: FloatArray,
                      dense: dict[str, float]) -> list[str]:
    """The overflow facts (at most :data:`MOST_BROUGHT_IN`, the closest first) whose
    cosine with ``vector`` is within :data:`CLOSE_TO_THE_BEST` of the best of ``dense``
    (what the dense channel saw) and of the overflow facts themselves; in an index over
    :data:`LARGE_INDEX` memories, only among the overflow facts in ``dense``."""
    if len(index) <= LARGE_INDEX:
        cos = index.cosine(profile.overflow_positions, vector)
    else:
        # tens of thousands of lasting facts: a product over all of them would cost more
        # than the whole read, so only those the dense channel saw are weighed
        overflow = profile.overflow_ids
        cos = {k: v for k, v in dense.items() if k in overflow}
    if not cos:
        return []
    best = max(max(cos.values()), max(dense.values(), default=-1.0))
    close = sorted((k for k, v in cos.items() if v >= best - CLOSE_TO_THE_BEST),
                   key=lambda k: -cos[k])
    return close[:MOST_BROUGHT_IN]
