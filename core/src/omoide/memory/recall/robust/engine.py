"""The ``robust`` memory engine: the robust read over the core's per-person index, with
the person's profile (lasting facts, every turn)."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import ClassVar

from omoide.components import (
    MemoryEngineCapabilities,
    PersonMemory,
    Profile,
    RecallEngine,
    RecallNotes,
    RecallRequest,
    RecallResult,
)
from omoide.memory.config import RobustSettings
from omoide.memory.facts.profile import with_relevant
from omoide.memory.index.cache import dense_only_index
from omoide.memory.index.person_index import UserIndex
from omoide.memory.recall.robust.gate import wants_embedding
from omoide.memory.recall.robust.profile_view import about_the_person, relevant_overflow
from omoide.memory.recall.robust.query import prepare
from omoide.memory.recall.robust.read import RobustResult, robust_read
from omoide.types import FloatArray

WARM_UP_QUERY = "来週の海の日は箱根に行くんだっけ?"
"""A query that goes through every analysis step once at start."""


class RobustEngine(RecallEngine):
    """The default memory engine: channels, rank fusion, an evidence gate, contextual
    recall and the profile block (see :mod:`omoide.memory.recall.robust`)."""

    name = "robust"
    Config = RobustSettings
    config: RobustSettings
    capabilities: ClassVar[MemoryEngineCapabilities] = MemoryEngineCapabilities(
        profile=True, contextual=True, uses_index=True)

    async def _start(self) -> None:
        # A first query imports the holiday calendar, computes this year's and compiles
        # the day's date patterns (about 0.1 s): done now, not on the event loop while
        # the first people talk.
        await asyncio.to_thread(prepare, WARM_UP_QUERY, datetime.now().astimezone())

    async def _recall(self, memory: PersonMemory, request: RecallRequest,
                      notes: RecallNotes) -> RecallResult:
        started = time.perf_counter()
        memory.prepare_index()  # built while the query is embedded, if not ready
        with notes.timed("analyse"):
            prepared = prepare(request.query, request.now)
        wanted = wants_embedding(prepared, self.config)
        inputs = await memory.index_and_vector(prepared.text, wanted, started)
        notes.timings_ms["embed"] = inputs.embed_ms
        notes.details.update(inputs.notes)
        if "embedding" in inputs.notes:
            notes.shortfalls.append(f"query embedding {inputs.notes['embedding']}")
        budget = request.profile_budget_chars
        with notes.timed("search"):
            settings, index = self.config, inputs.index
            profile = (index.profile(budget) if index is not None and budget is not None
                       else Profile())
            if index is None and inputs.vector is not None:
                index, settings, profile = await self._index_of_nearest(
                    memory, inputs.vector, settings, budget, profile, notes)
            elif index is None and wanted:
                notes.shortfalls.append(inputs.notes.get(
                    "dense", "index not ready and no query vector in time: nothing to recall"
                    " from"))
            result: RobustResult = await robust_read(
                memory, index if index is not None else dense_only_index(memory.user,
                                                                         memory.timezone),
                prepared, inputs.vector, request.now, settings, request.max_results,
                profile.ids)
        notes.details.update(result.details)
        memories = result.memories
        if inputs.index is None and budget is not None:
            # the index may have become ready meanwhile: the profile is never held back
            profile = self._ready_profile(memory, budget)
        elif index is not None and inputs.vector is not None and profile.overflow and \
                about_the_person(prepared):
            relevant = relevant_overflow(index, profile, inputs.vector, result.dense)
            if relevant:
                profile = with_relevant(profile, relevant)
                notes.details["profile_brought_in"] = sorted(relevant)
                # (said once: in the block, not again among the recalled memories)
                memories = [m for m in memories if m.memory.id not in profile.ids]
        return RecallResult(memories, profile)

    async def _index_of_nearest(self, memory: PersonMemory, vector: FloatArray,
                                settings: RobustSettings, budget: int | None, profile: Profile,
                                notes: RecallNotes,
                                ) -> tuple[UserIndex, RobustSettings, Profile]:
        """The index to read while the person's own is not built yet (or over the memory
        budget): the dense search of the store finds the candidates this turn, the index
        channels judge only those, unless the index loads from its saved copy before the
        store answers."""
        index = await memory.index_of_nearest(vector, settings.dense_candidates)
        if index is memory.ready_index():
            notes.details["index"] = "loaded during the dense search of the store"
            if budget is not None:
                profile = index.profile(budget)
        else:
            settings = settings.model_copy(update={"dense_from_index": False})
            notes.details["index"] = "not ready: dense recall from the store"
            notes.shortfalls.append("index not ready: dense recall from the store only")
        return index, settings, profile

    def _ready_profile(self, memory: PersonMemory, budget_chars: int) -> Profile:
        index = memory.ready_index()
        return index.profile(budget_chars) if index is not None else Profile()
