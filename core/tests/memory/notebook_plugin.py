"""A third-party memory plugin, test-only: the shape of a mem0 or Graphiti adapter.

``notebook`` keeps its own copy of each person's memories (as an adapter would keep
them in its service), filled from the core's store on a person's first recall and
kept current through the write notices; it recalls by shared character pairs.
``said`` extracts without any chat model: one fact per thing the person said.
``stalled`` and ``broken`` are engines that hang or fail (for the core's guarantees).

Registered through the same hooks as omoide's own (``registry.load_module``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import Field

from omoide.components import (
    ExtractionRequest,
    Extractor,
    ExtractorConfig,
    Fact,
    MemoryEngineConfig,
    PersonMemory,
    RecallEngine,
    RecallNotes,
    RecallRequest,
    RecallResult,
)
from omoide.hookspecs import hookimpl
from omoide.types import Memory, RetrievedMemory


def _pairs(text: str) -> set[str]:
    return {text[i:i + 2] for i in range(len(text) - 1)}


class NotebookConfig(MemoryEngineConfig):
    min_shared: int = Field(3, ge=1, description="Character pairs a memory must share with"
                            " what was said to be recalled.")


class NotebookEngine(RecallEngine):
    """Recalls from its own copy of each person's memories."""

    name = "notebook"
    Config = NotebookConfig
    config: NotebookConfig

    def __init__(self, config: NotebookConfig) -> None:
        super().__init__(config)
        self.notebooks: dict[str, dict[str, Memory]] = {}

    async def _recall(self, memory: PersonMemory, request: RecallRequest,
                      notes: RecallNotes) -> RecallResult:
        with notes.timed("search"):
            book = await self._book(memory)
            said = _pairs(request.query)
            scored = [(len(said & _pairs(m.text)), m) for m in book.values()
                      if not m.superseded_by]
            chosen = sorted((s, m.created_at, m) for s, m in scored
                            if s >= self.config.min_shared)[::-1]
        notes.details["notebook"] = len(book)
        return RecallResult([RetrievedMemory(m, float(s)) for s, _, m in chosen])

    async def _book(self, memory: PersonMemory) -> dict[str, Memory]:
        book = self.notebooks.get(memory.user)
        if book is None:
            book = {m.id: m for m in await memory.memories()}
            self.notebooks[memory.user] = book
        return book

    async def _stored(self, memory: PersonMemory, memories: Sequence[Memory]) -> None:
        book = self.notebooks.setdefault(memory.user, {})
        book.update({m.id: m for m in memories})

    async def _forgotten(self, memory: PersonMemory, ids: Sequence[str]) -> None:
        for i in ids:
            self.notebooks.get(memory.user, {}).pop(i, None)


class StalledEngine(RecallEngine):
    """Never answers (a service that stopped responding)."""

    name = "stalled"

    async def _recall(self, memory: PersonMemory, request: RecallRequest,
                      notes: RecallNotes) -> RecallResult:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


class BrokenEngine(RecallEngine):
    """Fails every recall (its service is down)."""

    name = "broken"

    async def _recall(self, memory: PersonMemory, request: RecallRequest,
                      notes: RecallNotes) -> RecallResult:
        raise ConnectionError("store down")


class LeakyEngine(RecallEngine):
    """Returns a memory of someone else with the person's own (a buggy adapter)."""

    name = "leaky"

    async def _recall(self, memory: PersonMemory, request: RecallRequest,
                      notes: RecallNotes) -> RecallResult:
        own = await memory.memories()
        stranger = Memory("stranger-1", "someone-else", "あなたの暗証番号は1234だ。",
                          request.now)
        return RecallResult([RetrievedMemory(stranger, 9.0),
                             *(RetrievedMemory(m, 1.0) for m in own)])


class SaidConfig(ExtractorConfig):
    prefix: str = Field("あなたは「", description="What each fact begins with.")


class SaidExtractor(Extractor):
    """One fact per statement, as said (no model)."""

    name = "said"
    Config = SaidConfig
    config: SaidConfig

    async def _extract(self, request: ExtractionRequest) -> Sequence[Fact]:
        return [Fact(f"{self.config.prefix}{ex.user_text[:150]}」と言った。", "other", ())
                for ex in request.exchanges if ex.user_text.strip()]


@hookimpl
def register_memory_engines(register: Callable[[Any], None]) -> None:
    for cls in (NotebookEngine, StalledEngine, BrokenEngine, LeakyEngine):
        register(cls)


@hookimpl
def register_extractors(register: Callable[[Any], None]) -> None:
    register(SaidExtractor)
