"""Deciding what each fact of an extraction batch does to the store: the plan.

For each fact, in order, the candidates are the stored memories nearest to it (current
and superseded alike) and the facts planned before it in the same batch; the verdicts of
:func:`omoide.memory.facts.dedup.compare` decide:

- a duplicate of a current memory is skipped;
- a duplicate of a superseded memory is skipped only when both came from the same
  exchanges (extraction of those exchanges ran before, e.g. before a crash);
  otherwise the person said the old thing again, and it is stored as current;
- a fact that says what it replaces (:attr:`~omoide.components.extractor.Fact.replaces`)
  updates the candidates holding what it names, as an update found by comparison does;
- an update of current memories stores the fact and supersedes them — unless the stored
  memory was said after this fact (extraction ran out of order), then the fact is stored
  already superseded by it;
- anything else is stored as new.

Planning reads the store but never writes it: the plan is journaled first and applied
after (:mod:`omoide.memory.journal.extraction_batches`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date
from zoneinfo import ZoneInfo

import numpy as np

from omoide.components import Embedder, VectorStore
from omoide.memory.facts.dedup import (
    FactView,
    Verdict,
    compare,
    kinds_compatible,
    said_to_replace,
    view,
)
from omoide.memory.journal.extraction_batches import ExtractionBatch, PlannedFact, memory_id
from omoide.memory.language.absolute_dates import absolute_dates
from omoide.memory.language.canonical import canonical
from omoide.memory.store_payload import from_payload
from omoide.types import FloatArray, Memory, Priority

CANDIDATES = 10


@dataclass
class _Candidate:
    memory: Memory
    vector: FloatArray | None
    """Set for facts of the batch being planned (store hits come with their cosine)."""
    view: FactView


class BatchPlanner:
    """Plans batches of one store; ``threshold`` is the dedup cosine."""

    def __init__(self, embedder: Embedder, store: VectorStore, timezone: str,
                 threshold: float) -> None:
        self.embedder = embedder
        self.store = store
        self._tz = ZoneInfo(timezone)
        self.threshold = threshold

    def _day(self, memory: Memory) -> date:
        return memory.created_at.astimezone(self._tz).date()

    async def plan(self, batch: ExtractionBatch,
                   ) -> tuple[list[PlannedFact], dict[str, FloatArray]]:
        """The plan for ``batch`` and the vectors of the memories it stores (by id)."""
        if not batch.facts:
            return [], {}
        said_at = batch.said_at
        said_on = said_at.astimezone(self._tz).date()
        vectors = await self.embedder.embed([f.text for f in batch.facts], "document",
                                            Priority.BATCH)
        planned: list[_Candidate] = []      # memories this batch stores, as candidates
        superseded_here: dict[str, str] = {}  # stored memory id -> id superseding it
        plan: list[PlannedFact] = []
        stored_vectors: dict[str, FloatArray] = {}
        for position, (fact, vector) in enumerate(zip(batch.facts, vectors, strict=True)):
            memory = Memory(
                id=memory_id(batch.id, position), user=batch.user, text=fact.text,
                created_at=said_at,
                event_dates=absolute_dates(canonical(fact.text), said_on),
                kind=fact.kind, entities=fact.entities, source_exchange_ids=batch.exchange_ids)
            mine = view(fact.text, fact.kind, fact.entities, said_on)
            candidates = await self._candidates(batch.user, vector, planned, superseded_here)
            decision = self._decide(position, memory, mine, candidates, fact.replaces)
            plan.append(decision)
            if decision.memory is None:
                continue
            kept = decision.memory
            stored_vectors[kept.id] = vector
            planned.append(_Candidate(kept, vector, mine))
            for old_id in decision.supersedes:
                superseded_here[old_id] = kept.id
                for c in planned:
                    if c.memory.id == old_id:
                        c.memory = replace(c.memory, superseded_by=kept.id)
        return plan, stored_vectors

    async def _candidates(self, user: str, vector: FloatArray, planned: list[_Candidate],
                          superseded_here: dict[str, str]) -> list[tuple[_Candidate, float]]:
        out: list[tuple[_Candidate, float]] = []
        for hit in await self.store.search(user, vector, CANDIDATES):
            old = from_payload(hit.id, hit.payload)
            if hit.id in superseded_here:
                old = replace(old, superseded_by=superseded_here[hit.id])
            out.append((_Candidate(old, None, view(old.text, old.kind, old.entities,
                                                   self._day(old))), hit.score))
        query = np.asarray(vector, dtype=np.float32)
        for c in planned:
            assert c.vector is not None
            out.append((c, float(np.dot(np.asarray(c.vector, dtype=np.float32), query))))
        return out

    def _decide(self, position: int, memory: Memory, mine: FactView,
                candidates: list[tuple[_Candidate, float]],
                replaces: str | None) -> PlannedFact:
        supersedes: list[str] = []
        superseded_by: str | None = None
        for c, cosine in candidates:
            old = c.memory
            verdict = compare(mine, c.view, cosine, self.threshold)
            if verdict is Verdict.NEW and replaces and kinds_compatible(mine.kind, c.view.kind) \
                    and said_to_replace(replaces, c.view):
                verdict = Verdict.UPDATE  # the fact says it replaces this one
            if verdict is Verdict.DUPLICATE:
                if not old.superseded_by:
                    return PlannedFact(position, Verdict.DUPLICATE, None, duplicate_of=old.id)
                if set(old.source_exchange_ids) & set(memory.source_exchange_ids):
                    return PlannedFact(position, Verdict.DUPLICATE, None, duplicate_of=old.id)
            elif verdict is Verdict.UPDATE and not old.superseded_by:
                if old.created_at > memory.created_at:
                    superseded_by = superseded_by or old.id  # said later than this fact
                else:
                    supersedes.append(old.id)
        if superseded_by is not None:
            return PlannedFact(position, Verdict.UPDATE,
                               replace(memory, superseded_by=superseded_by), tuple(supersedes))
        verdict = Verdict.UPDATE if supersedes else Verdict.NEW
        return PlannedFact(position, verdict, memory, tuple(supersedes))
