"""Seeing and editing a person's profile: what ``omoide memory profile`` and the
``/v1/users/{user}/profile`` routes do.

The profile is not a separate store: it is the person's memories whose kind says (or
whose text shows) that they are lasting facts (:mod:`omoide.memory.facts.profile`). Setting a
fact writes a memory of kind ``profile_<category>``; taking one out of the profile
either forgets the memory or keeps it as an episodic memory (kind ``episodic``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from omoide.memory.engine import MemoryEngine
from omoide.memory.facts.profile import (
    EPISODIC_MARK,
    LABELS_JA,
    Category,
    Classification,
    Profile,
    classify,
    is_dated,
    stored_kind,
)
from omoide.memory.language.absolute_dates import absolute_dates
from omoide.memory.language.canonical import canonical
from omoide.memory.memory_json import to_json
from omoide.text_controls import check_no_controls
from omoide.types import Memory


class ProfileEditError(ValueError):
    """A profile edit that cannot be made (the message says why)."""


@dataclass(frozen=True)
class ProfileView:
    """The profile as people see it: what is in the prompt and what is not, and why."""

    profile: Profile
    decisions: list[tuple[Memory, Classification]]

    def to_json(self) -> dict[str, Any]:
        p = self.profile

        def fact(m: Memory, category: Category) -> dict[str, Any]:
            return {**to_json(m), "category": category.value,
                    "label": LABELS_JA[category]}

        return {
            "budget_chars": p.budget_chars, "chars": p.chars,
            "facts": [fact(f.memory, f.category) for f in p.facts],
            "over_budget": [fact(f.memory, f.category) for f in p.overflow],
            "superseded": [fact(f.memory, f.category) for f in p.superseded],
            "episodic": [{"id": m.id, "text": m.text, "reason": c.reason}
                         for m, c in self.decisions if not c.profile],
        }


async def view(engine: MemoryEngine, user: str) -> ProfileView:
    return ProfileView(await engine.profile(user), await engine.profile_candidates(user))


def _category(name: str | None) -> Category | None:
    if name is None:
        return None
    try:
        return Category(name)
    except ValueError:
        raise ProfileEditError(f"unknown category {name!r}; choose from "
                               f"{', '.join(c.value for c in Category)}") from None


async def set_fact(engine: MemoryEngine, user: str, text: str, category: str | None = None,
                   now: datetime | None = None) -> Memory:
    """Add a profile fact in the person's words (「あなたはそばアレルギーがある。」).

    Refuses a dated plan or event (those are episodic) and an empty text; the category
    is the classifier's when not given.
    """
    try:
        check_no_controls(text)
    except ValueError as exc:
        raise ProfileEditError(f"a profile fact {exc}") from None
    text = canonical(text)
    if not text:
        raise ProfileEditError("a profile fact needs text")
    tz = ZoneInfo(engine.timezone)
    now = (now or datetime.now(tz)).astimezone(tz)
    if is_dated(text, now.date()):
        raise ProfileEditError("a dated plan or event is never a profile fact; add it as a"
                               " memory instead")
    cat = _category(category)
    if cat is None:
        guess = classify(Memory("new", user, text, now), now.date())
        cat = guess.category or Category.HABIT
    memory = Memory(id=str(uuid.uuid4()), user=user, text=text, created_at=now,
                    event_dates=absolute_dates(text, now.date()),
                    kind=stored_kind("other", True, cat.value))
    await engine.add_memories(user, [memory])
    return memory


async def mark(engine: MemoryEngine, user: str, memory_id: str, profile: bool,
               category: str | None = None) -> Memory:
    """Put an existing memory into the profile, or keep it out of it (as episodic)."""
    memory = await engine.get(user, memory_id)
    if memory is None:
        raise ProfileEditError(f"no memory {memory_id} for user {user}")
    if profile:
        said = memory.created_at.astimezone(ZoneInfo(engine.timezone)).date()
        if is_dated(memory.text, said):
            raise ProfileEditError("a dated plan or event is never a profile fact")
        cat = _category(category) or classify(memory, said).category or Category.HABIT
        kind = stored_kind(memory.kind, True, cat.value)
    else:
        kind = EPISODIC_MARK
    updated = await engine.set_kind(user, memory_id, kind)
    if updated is None:
        raise ProfileEditError(f"no memory {memory_id} for user {user}")
    return updated


async def forget(engine: MemoryEngine, user: str, memory_id: str, *,
                 keep_memory: bool = False) -> bool:
    """Take a fact out of the profile: forget it, or keep it as an episodic memory."""
    if keep_memory:
        try:
            await mark(engine, user, memory_id, False)
        except ProfileEditError:
            return False
        return True
    return await engine.forget(user, memory_id)
