"""The reference's read algorithm, kept exactly for comparison (``use: baseline``).

Embed the raw transcript (no canonicalisation, no query instruction), take the top
``candidates`` memories by cosine, add ``recency_weight * exp(-age_days /
recency_days)``, keep those scoring at least ``threshold``, inject at most
``memory.max_results``. The only addition: superseded memories are never injected (the
reference had no supersession, so on its data this changes nothing). No profile: the
reference had none.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import ClassVar

from omoide.components import (
    MemoryEngineCapabilities,
    PersonMemory,
    RecallEngine,
    RecallNotes,
    RecallRequest,
    RecallResult,
)
from omoide.memory.config import BaselineSettings
from omoide.types import FloatArray, Priority, RetrievedMemory


async def baseline_read(memory: PersonMemory, vector: FloatArray, now: datetime,
                        settings: BaselineSettings, max_results: int) -> list[RetrievedMemory]:
    """The reference's choice for the query ``vector`` among ``memory``'s memories."""
    hits = await memory.search(vector, settings.candidates)
    scored: list[RetrievedMemory] = []
    for hit in hits:
        if hit.memory.superseded_by:
            continue
        age_days = max(0.0, (now - hit.memory.created_at).total_seconds() / 86400.0)
        bonus = settings.recency_weight * math.exp(-age_days / settings.recency_days)
        score = hit.score + bonus
        if score >= settings.threshold:
            scored.append(RetrievedMemory(hit.memory, score,
                                          {"dense": hit.score, "recency": bonus}))
    scored.sort(key=lambda r: -r.score)
    return scored[:max_results]


class BaselineEngine(RecallEngine):
    """The reference's algorithm as a memory engine."""

    name = "baseline"
    Config = BaselineSettings
    config: BaselineSettings
    capabilities: ClassVar[MemoryEngineCapabilities] = MemoryEngineCapabilities()

    async def _recall(self, memory: PersonMemory, request: RecallRequest,
                      notes: RecallNotes) -> RecallResult:
        with notes.timed("embed"):
            # as the reference did: the transcript as it came, embedded as a document
            vector = (await memory.embedder.embed([request.query], "document",
                                                  Priority.INTERACTIVE))[0]
        with notes.timed("search"):
            chosen = await baseline_read(memory, vector, request.now, self.config,
                                         request.max_results)
        return RecallResult(chosen)
