"""What memory hands the rest of omoide: the types of the memory contracts.

A recall (:class:`Recall`) with the person's profile (:class:`Profile` of
:class:`ProfileFact`), an extraction run's report (:class:`ExtractionReport`), the
inputs a recall waited for (:class:`ReadInputs`), and the memory service as the turn
pipeline, the server and tools call it (:class:`MemoryService`). Memory engines
(:mod:`omoide.components.memory_engine`), tools (:mod:`omoide.components.tool`) and
prompt sections (:mod:`omoide.components.prompt`) are written against these; the
engine that produces them lives in :mod:`omoide.memory`, which this module never
imports (a person's index is named here for type checkers only).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from omoide.types import Exchange, FloatArray, Memory, RetrievedMemory

if TYPE_CHECKING:
    from omoide.memory.index.person_index import UserIndex


class Category(StrEnum):
    """What a profile fact is about, in the order it is kept (most important first)."""

    HEALTH = "health"
    FAMILY = "family"
    PET = "pet"
    BASICS = "basics"
    WORK = "work"
    LIKE = "like"
    HABIT = "habit"
    PERSON = "person"


PRIORITY: dict[Category, int] = {c: i for i, c in enumerate(Category)}
SAFETY = frozenset({Category.HEALTH})
"""Categories never dropped for space."""


@dataclass(frozen=True)
class ProfileFact:
    """One profile line: the memory and its category."""

    memory: Memory
    category: Category

    @property
    def priority(self) -> int:
        return PRIORITY[self.category]

    @property
    def safety(self) -> bool:
        return self.category in SAFETY


@dataclass(frozen=True)
class Profile:
    """What goes into the prompt, and what the budget or a newer fact left out."""

    facts: tuple[ProfileFact, ...] = ()
    overflow: tuple[ProfileFact, ...] = ()
    """Profile facts that did not fit the budget (still retrievable per turn)."""
    superseded: tuple[ProfileFact, ...] = ()
    """Older facts replaced by a newer one about the same thing."""
    budget_chars: int = 0
    chars: int = 0
    ids: frozenset[str] = field(default_factory=frozenset)

    def __bool__(self) -> bool:
        return bool(self.facts)

    @functools.cached_property
    def overflow_ids(self) -> frozenset[str]:
        """The ids of :attr:`overflow` (worked out once per profile)."""
        return frozenset(self.overflow_positions)

    @functools.cached_property
    def overflow_positions(self) -> dict[str, int]:
        """Where each id of :attr:`overflow` is in it (worked out once per profile)."""
        return {f.memory.id: i for i, f in enumerate(self.overflow)}


@dataclass(frozen=True)
class Recall:
    """What retrieval chose for one query, and how long it took.

    ``timed_out`` is set when the time budget ran out (then ``memories`` is empty).
    ``timings_ms`` has at least ``embed`` and ``search``. ``profile`` is the person's
    profile block (durable facts, every turn), empty when there is none or the read
    engine is the reference baseline. ``shortfalls`` says what a recall that did answer
    had to do without (a query embedding too late for the dense channel, an index not
    built yet), so the turn can report it as degraded.
    """

    memories: list[RetrievedMemory]
    engine: str
    timings_ms: dict[str, float] = field(default_factory=dict)
    timed_out: bool = False
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    profile: Profile = field(default_factory=Profile)
    shortfalls: tuple[str, ...] = ()


@dataclass(frozen=True)
class ExtractionReport:
    """Result of one extraction run for one user.

    ``exchanges`` counts the exchanges extracted; ``pending`` is set when some are left
    waiting (a service is down, or an exchange failed and will be tried again), with the
    last ``error``; ``quarantined`` lists exchanges set aside in this run.
    """

    user: str
    exchanges: int
    stored: list[Memory]
    skipped_duplicates: int = 0
    superseded: list[str] = field(default_factory=list)
    pending: bool = False
    error: str | None = None
    quarantined: list[str] = field(default_factory=list)


@dataclass
class ReadInputs:
    """What one recall waited for: the person's index and the query vector (either may
    be None when it was not there in time), how long the vector took, and notes for
    the trace."""

    index: UserIndex | None
    vector: FloatArray | None
    embed_ms: float = 0.0
    """Time spent waiting for the query vector (whether it came or not)."""
    notes: dict[str, Any] = field(default_factory=dict)


class MemoryService(Protocol):
    """Long-term memory for the turn pipeline."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def warm_indexes(self) -> None:
        """A server has started: prepare what its next turns read (in the background;
        returns at once)."""
        ...

    async def recall(self, user: str, query: str, now: datetime) -> Recall:
        """Memories to inject for ``query``; never raises, never exceeds the time budget."""
        ...

    async def record_exchange(self, exchange: Exchange) -> None:
        """Journal an exchange durably. Must complete before anything else uses it."""
        ...

    def note_turn_completed(self, exchange: Exchange) -> None:
        """Schedule extraction if a trigger (count, idle timer) fires. Returns at once."""
        ...

    async def session_ended(self, user: str) -> None:
        """A device disconnected: schedule extraction of what is pending."""
        ...

    async def extract_now(self, user: str) -> ExtractionReport:
        """Extract ``user``'s pending exchanges now (the debug endpoint)."""
        ...

    async def list_memories(self, user: str) -> Sequence[Memory]: ...

    async def recognition_vocabulary(self, user: str, limit: int) -> list[str]:
        """Up to ``limit`` words ``user`` is likely to say — the names, places and
        entities of their live memories, most useful first — for biasing speech
        recognition. Cheap once the user's index exists; callers bound its time."""
        ...
