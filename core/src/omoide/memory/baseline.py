"""The reference's read algorithm, kept exactly for comparison.

Embed the raw transcript (no canonicalisation, no query instruction), take the top
``candidates`` memories by cosine, add ``recency_weight * exp(-age_days /
recency_days)``, keep those scoring at least ``threshold``, inject at most
``max_results``. The only addition: superseded memories are never injected (the
reference had no supersession, so on its data this changes nothing).
"""

from __future__ import annotations

import math
from datetime import datetime

from omoide.components import VectorStore
from omoide.memory.config import BaselineSettings
from omoide.memory.records import from_payload
from omoide.types import FloatArray, RetrievedMemory


async def baseline_read(store: VectorStore, user: str, vector: FloatArray, now: datetime,
                        settings: BaselineSettings) -> list[RetrievedMemory]:
    hits = await store.search(user, vector, settings.candidates)
    scored: list[RetrievedMemory] = []
    for hit in hits:
        memory = from_payload(hit.id, hit.payload)
        if memory.superseded_by:
            continue
        age_days = max(0.0, (now - memory.created_at).total_seconds() / 86400.0)
        bonus = settings.recency_weight * math.exp(-age_days / settings.recency_days)
        score = hit.score + bonus
        if score >= settings.threshold:
            scored.append(RetrievedMemory(memory, score, {"dense": hit.score, "recency": bonus}))
    scored.sort(key=lambda r: -r.score)
    return scored[:settings.max_results]
