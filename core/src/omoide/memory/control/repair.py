"""Rebuilding one person's lost store from the journal (``omoide memory repair``).

Every memory extraction made is journaled before the store is touched (the batch's
plan: each memory in full, and what it supersedes; see
:mod:`omoide.memory.journal.extraction_batches`). So when a person's store is lost
(missing, or damaged), :func:`repair_person` can make it again:

1. collect the memories of that person's planned and finished batches, oldest first,
   each later supersession marked on the memory it replaced;
2. embed their texts with the configured embedder (the vectors are not journaled; more
   than a few hundred are restored first and embedded afterwards, as a large import's
   are: :mod:`.pending_vectors`);
3. hand them to :meth:`omoide.components.VectorStore.rebuild_person`, which sets the
   lost store aside, keeps whatever can still be read of it, and writes only memories
   it had recorded for the person (a memory forgotten since stays forgotten).

What the journal does not hold cannot come back: memories imported from a file, or
written before the journal kept extraction plans, are counted as not restored (import
the person's last export again to get them back); a kind changed by hand is restored
as extraction made it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from omoide.components import Embedder, VectorStore
from omoide.components.store import RebuildReport
from omoide.memory.control.pending_vectors import (
    INLINE_EMBED_MAX,
    PendingVectors,
    placeholder_vector,
)
from omoide.memory.journal.storage import ExchangeJournal
from omoide.memory.store_payload import to_payload
from omoide.types import Memory, Priority, VectorRecord

EMBED_BATCH = 64
"""Texts embedded at a time."""


@dataclass(frozen=True)
class RepairReport:
    """What :func:`repair_person` did for ``user``.

    ``in_journal``: memories the journal's extraction plans hold for them;
    ``restored``: memories in the rebuilt store; ``not_restored``: memories the store
    had recorded that neither the old store nor the journal could give back;
    ``left_out``: journaled memories not written because the store had no record of
    them (forgotten or replaced since); ``set_aside``: where the lost store went.
    """

    user: str
    in_journal: int
    restored: int
    not_restored: int
    left_out: int
    set_aside: str | None

    def summary(self) -> str:
        lines = [f"{self.user}: restored {self.restored} memories, could not restore"
                 f" {self.not_restored}"
                 + (" (not in the journal: imported, or older than its extraction plans;"
                    " import the person's last export to get them back)"
                    if self.not_restored else "")]
        lines.append(f"  {self.in_journal} memories found in the journal's extraction"
                     f" results; {self.left_out} of them left out (forgotten or replaced"
                     " since)")
        if self.set_aside:
            lines.append(f"  the lost store was set aside in {self.set_aside}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, object]:
        return {"user": self.user, "in_journal": self.in_journal, "restored": self.restored,
                "not_restored": self.not_restored, "left_out": self.left_out,
                "set_aside": self.set_aside}


async def journaled_memories(journal: ExchangeJournal, user: str) -> list[Memory]:
    """Every memory ``user``'s extraction plans stored, with later supersessions marked,
    oldest batch first (a later plan of the same memory wins)."""
    memories: dict[str, Memory] = {}
    superseded_by: dict[str, str] = {}
    for batch in await journal.batches(user):
        if batch.plan is None or batch.state == "abandoned":
            continue
        for planned in batch.plan:
            if planned.memory is None:
                continue
            memories[planned.memory.id] = planned.memory
            for old in planned.supersedes:
                superseded_by[old] = planned.memory.id
    return [replace(m, superseded_by=superseded_by[m.id])
            if m.id in superseded_by and not m.superseded_by else m
            for m in memories.values()]


async def repair_person(journal: ExchangeJournal, embedder: Embedder, store: VectorStore,
                        user: str, *, pending: PendingVectors | None = None,
                        ) -> RepairReport:
    """Rebuild ``user``'s store from the journal (see the module docstring). The store
    must be open (:meth:`VectorStore.open`) and no server may be using it.

    With ``pending``, more than :data:`INLINE_EMBED_MAX` memories are restored at once
    with placeholder vectors and noted there (before the store write), to be embedded
    afterwards as a large import's are (:mod:`.pending_vectors`)."""
    memories = await journaled_memories(journal, user)
    if pending is not None and len(memories) > INLINE_EMBED_MAX:
        await pending.add(user, [m.id for m in memories])
        placeholder = placeholder_vector(embedder.dims)
        records = [VectorRecord(m.id, placeholder, to_payload(m)) for m in memories]
    else:
        records = await _embedded(embedder, memories)
    report: RebuildReport = await store.rebuild_person(user, records)
    return RepairReport(user, len(memories), report.restored, report.not_restored,
                        report.left_out, report.set_aside)


async def _embedded(embedder: Embedder, memories: Sequence[Memory]) -> list[VectorRecord]:
    out: list[VectorRecord] = []
    for start in range(0, len(memories), EMBED_BATCH):
        chunk = memories[start:start + EMBED_BATCH]
        vectors = await embedder.embed([m.text for m in chunk], "document", Priority.BATCH)
        out += [VectorRecord(m.id, v, to_payload(m)) for m, v in zip(chunk, vectors,
                                                                      strict=True)]
    return out
