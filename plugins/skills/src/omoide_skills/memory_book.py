"""What the memory skill needs from omoide's memory, behind one small interface.

:class:`MemoryBook` is the skill's whole view of memory: store a fact now, find facts
for a phrase, forget some, and summarise what is known about a person. Today
:class:`EngineMemoryBook` implements it with the memory engine's public methods
(``add_memories``, ``search``, ``forget``, ``list_memories``); a per-person profile can
replace ``about`` later without the skill changing.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from omoide.api import ComponentError, Memory


@dataclass(frozen=True)
class Found:
    """A memory matching a phrase, with the engine's relevance score."""

    memory: Memory
    score: float


class MemoryBook(Protocol):
    async def remember(self, user: str, text: str, now: datetime) -> Memory:
        """Store ``text`` as a memory of ``user`` now (no waiting for extraction)."""
        ...

    async def find(self, user: str, phrase: str, limit: int) -> list[Found]:
        """``user``'s memories best matching ``phrase``, best first."""
        ...

    async def forget(self, user: str, memory_ids: Sequence[str]) -> int:
        """Forget these memories of ``user``; how many existed."""
        ...

    async def about(self, user: str, limit: int) -> list[str]:
        """What is known about ``user``, newest first, at most ``limit`` sentences."""
        ...


REQUIRED = ("add_memories", "search", "forget", "list_memories")


class EngineMemoryBook:
    """:class:`MemoryBook` over omoide's memory engine (or anything with its methods)."""

    def __init__(self, engine: Any) -> None:
        missing = [m for m in REQUIRED if not callable(getattr(engine, m, None))]
        if missing:
            raise ComponentError(f"the memory service lacks {', '.join(missing)}; "
                                 "the memory skill needs omoide's memory engine")
        self._engine = engine

    async def remember(self, user: str, text: str, now: datetime) -> Memory:
        memory = Memory(id=str(uuid.uuid4()), user=user, text=text, created_at=now,
                        kind="fact")
        stored = await self._engine.add_memories(user, [memory])
        return stored[0] if stored else memory

    async def find(self, user: str, phrase: str, limit: int) -> list[Found]:
        hits = await self._engine.search(user, phrase, limit)
        return [Found(h.memory, float(h.score)) for h in hits
                if h.memory.superseded_by is None]

    async def forget(self, user: str, memory_ids: Sequence[str]) -> int:
        done = 0
        for memory_id in memory_ids:
            if await self._engine.forget(user, memory_id):
                done += 1
        return done

    async def about(self, user: str, limit: int) -> list[str]:
        memories = [m for m in await self._engine.list_memories(user)
                    if m.superseded_by is None]
        memories.sort(key=lambda m: m.created_at, reverse=True)
        return [m.text for m in memories[:limit]]
