"""The memory service as the turn pipeline and the server see it.

The pipeline only needs these calls; the engine behind them (journal, extraction,
read engines) lives in the rest of :mod:`omoide.memory`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from omoide.memory.recall.profile import Profile
from omoide.types import Exchange, Memory, RetrievedMemory


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
