"""Household-shared memories: what every member of a household may recall (a family trip).

A household's shared memories are kept as the memories of one more owner id,
``household-<first member>`` (:func:`shared_owner`: the household's first member is the
person its robot was first paired to). Nothing is shared by itself: extraction keeps what
a person says under that person. Memories are shared by importing them for that owner
(``omoide memory import``, ``POST /v1/users/household-alice/memories/import``), listed
and forgotten the same way (``omoide memory list|forget``).

On a robot of a household of two or more, a turn of an identified member or of the
default person recalls their own memories and, beside them (concurrently), the
household's shared ones; the shared ones that are not already among their own are
added after them, at most :data:`SHARED_LIMIT`. A guest recalls neither. A household of
one has nothing to share with: its turns recall as before.
"""

from __future__ import annotations

from dataclasses import replace

from omoide.components.device import Household
from omoide.components.memory_types import Recall

HOUSEHOLD_PREFIX = "household-"
SHARED_LIMIT = 3
"""Most shared memories added to a turn's own."""


def shared_owner(household: Household | None) -> str | None:
    """The owner id of ``household``'s shared memories, or None for no household or a
    household of one."""
    if household is None or len(household.members) < 2:
        return None
    return f"{HOUSEHOLD_PREFIX}{household.members[0]}"[:64]


def with_shared(own: Recall, shared: Recall | None) -> tuple[Recall, int]:
    """``own`` with the household's ``shared`` memories after its own (none when the
    shared recall failed or ran out of time), and how many were added."""
    if shared is None or shared.timed_out or shared.error or own.timed_out:
        return own, 0
    seen = {m.memory.id for m in own.memories}
    added = [m for m in shared.memories if m.memory.id not in seen][:SHARED_LIMIT]
    if not added:
        return own, 0
    return replace(own, memories=[*own.memories, *added]), len(added)
