"""Extraction batches: what the chat model answered for some exchanges, and what was
decided for each fact — the records that make extraction exactly-once.

A batch's memories get ids derived from the batch id and the fact's position
(:func:`memory_id`), and its plan (:class:`PlannedFact` per fact: store this memory,
supersede those, or skip it as a duplicate of that one) is journaled before the store
is touched. Replaying a batch after a crash therefore writes the very same records —
an upsert of a record that is already there changes nothing — and never asks the chat
model or dedup again.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from omoide.components.extractor import Fact
from omoide.memory.facts.dedup import Verdict
from omoide.memory.memory_json import from_json, to_json
from omoide.types import Memory

# Fixed, so a batch's memory ids are the same in every process that replays it.
MEMORY_ID_NAMESPACE = uuid.UUID("0b1e4d2c-9a57-5f43-8c1e-6f6d6f696465")


def memory_id(batch_id: str, position: int) -> str:
    """The id of the memory made from fact ``position`` of batch ``batch_id``."""
    return str(uuid.uuid5(MEMORY_ID_NAMESPACE, f"{batch_id}/{position}"))


@dataclass(frozen=True)
class PlannedFact:
    """The decision for one fact of a batch.

    ``memory`` is what to store (None for a duplicate, then ``duplicate_of`` names the
    memory it repeats); ``supersedes`` lists stored memories the new one replaces.
    """

    position: int
    verdict: Verdict
    memory: Memory | None
    supersedes: tuple[str, ...] = ()
    duplicate_of: str | None = None


@dataclass(frozen=True)
class ExtractionBatch:
    """Some exchanges of one user and the facts the chat model found in them.

    ``state``: ``answered`` (facts journaled), ``planned`` (decisions journaled),
    ``done`` (stored, exchanges consumed) or ``abandoned`` (gave up; exchanges released).
    """

    id: str
    user: str
    exchange_ids: tuple[str, ...]
    said_at: datetime
    facts: tuple[Fact, ...]
    state: str
    plan: tuple[PlannedFact, ...] | None = None
    attempts: int = 0
    last_error: str | None = None

    def planned(self, plan: tuple[PlannedFact, ...]) -> ExtractionBatch:
        return replace(self, plan=plan, state="planned")


def facts_to_json(facts: Sequence[Fact]) -> str:
    return json.dumps([{"text": f.text, "kind": f.kind, "entities": list(f.entities),
                        **({"replaces": f.replaces} if f.replaces else {})}
                       for f in facts], ensure_ascii=False)


def facts_from_json(text: str) -> tuple[Fact, ...]:
    return tuple(Fact(str(d["text"]), str(d["kind"]), tuple(str(e) for e in d["entities"]),
                      str(d["replaces"]) if d.get("replaces") else None)
                 for d in json.loads(text))


def plan_to_json(plan: Sequence[PlannedFact]) -> str:
    items: list[dict[str, Any]] = [
        {"position": p.position, "verdict": p.verdict.value,
         "memory": to_json(p.memory) if p.memory is not None else None,
         "supersedes": list(p.supersedes), "duplicate_of": p.duplicate_of}
        for p in plan]
    return json.dumps(items, ensure_ascii=False)


def plan_from_json(text: str, user: str) -> tuple[PlannedFact, ...]:
    return tuple(PlannedFact(
        position=int(d["position"]), verdict=Verdict(d["verdict"]),
        memory=from_json(d["memory"], user) if d["memory"] is not None else None,
        supersedes=tuple(d["supersedes"]), duplicate_of=d["duplicate_of"])
        for d in json.loads(text))
