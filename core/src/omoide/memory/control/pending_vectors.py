"""Memories stored before their vectors: a large import (or a repair) stores first.

Embedding is what a large import costs (multilingual-e5-small on this machine: ~25 ms
of CPU a text, so 10,000 memories are four minutes of CPU whatever the batch size or
thread count). So an import of more than :data:`INLINE_EMBED_MAX` new memories stores
each one at once with a :func:`placeholder_vector` and notes its id here, in one
SQLite file of the data dir, *before* the store write: the import is durable and
idempotent as soon as it returns, and a memory is found by its words and dates (the
person's lexical and temporal index) at once. Its vector is filled in the background
(:func:`fill_pending`) by a running server, or by ``omoide memory vectors --fill``;
a kill at any point loses nothing: a noted id whose memory never reached the store
is dropped, a stored one is embedded on the next run.

The placeholder is one fixed unit vector whose cosine to real text embeddings sits
near zero, so until it is filled a memory is never found *by meaning* (the dense
channel ranks it below any real match) and never found by mistake.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from omoide.components import Embedder, VectorStore
from omoide.private_files import connect_private
from omoide.types import FloatArray, Priority, VectorRecord

log = logging.getLogger("omoide.memory.vectors")

INLINE_EMBED_MAX = 256
"""An import of at most this many new memories is embedded before it returns."""

FILL_BATCH = 32
"""Memories embedded and written back at a time by :func:`fill_pending`."""

FILE_NAME = "vectors_pending.sqlite3"

VECTORS_WAITING = ("some memories wait for their vectors (a large import or a repair):"
                   " found by their words and dates, not yet by meaning")
"""The shortfall a recall reports while the person has such memories."""


def placeholder_vector(dims: int) -> FloatArray:
    """The vector a memory has until its own is computed: unit length, alternating
    signs (a direction no sentence embedding takes: its cosine to them is about 0)."""
    signs = np.where(np.arange(dims) % 2 == 0, 1.0, -1.0).astype(np.float32)
    out: FloatArray = signs / np.float32(np.sqrt(dims))
    return out


class PendingVectors:
    """The ids of stored memories still waiting for their vectors (durable)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._known: int | None = None
        self._waiting: set[str] | None = None
        """People with memories waiting (None: not read yet)."""

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            db = connect_private(self.path, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA synchronous=FULL")
            db.execute("CREATE TABLE IF NOT EXISTS pending (user TEXT NOT NULL, "
                       "id TEXT NOT NULL, PRIMARY KEY (user, id))")
            self._db = db
        return self._db

    def _run(self, sql: str, rows: Sequence[tuple[str, ...]]) -> None:
        with self._lock:
            db = self._connection()
            db.execute("BEGIN")
            try:
                db.executemany(sql, rows)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            self._known = None

    async def add(self, user: str, ids: Sequence[str]) -> None:
        """Note ``ids`` as waiting (committed to disk when this returns)."""
        if ids:
            await asyncio.to_thread(self._run, "INSERT OR IGNORE INTO pending VALUES (?, ?)",
                                    [(user, i) for i in ids])
            if self._waiting is not None:
                self._waiting.add(user)

    async def is_waiting(self, user: str) -> bool:
        """Whether some of ``user``'s memories wait for their vectors (cheap: the
        file is read once, then kept current by this object's own writes)."""
        if self._waiting is None:
            rows = await asyncio.to_thread(self._select,
                                           "SELECT DISTINCT user FROM pending", ())
            self._waiting = {str(r[0]) for r in rows}
        return user in self._waiting

    async def settle(self, user: str, ids: Sequence[str]) -> None:
        """``ids`` have their vectors now (or are gone): no longer waiting."""
        if ids and (self._known is None or self._known > 0) and self.path.exists():
            await asyncio.to_thread(self._run, "DELETE FROM pending WHERE user=? AND id=?",
                                    [(user, i) for i in ids])
            if self._waiting is not None and user in self._waiting \
                    and not await self.count(user):
                self._waiting.discard(user)

    def _select(self, sql: str, args: tuple[object, ...]) -> list[tuple[str, ...]]:
        if not self.path.exists():
            return []
        with self._lock:
            return list(self._connection().execute(sql, args))

    async def take(self, limit: int) -> list[tuple[str, str]]:
        """Up to ``limit`` waiting (user, id) pairs, oldest first, all of one person."""
        rows = await asyncio.to_thread(
            self._select, "SELECT user, id FROM pending WHERE user = (SELECT user FROM "
            "pending ORDER BY rowid LIMIT 1) ORDER BY rowid LIMIT ?", (limit,))
        return [(u, i) for u, i in rows]

    async def count(self, user: str | None = None) -> int:
        """How many memories (of ``user``, or of everyone) wait for their vectors."""
        if user is None:
            rows = await asyncio.to_thread(self._select, "SELECT COUNT(*) FROM pending", ())
        else:
            rows = await asyncio.to_thread(
                self._select, "SELECT COUNT(*) FROM pending WHERE user=?", (user,))
        total = int(rows[0][0]) if rows else 0
        if user is None:
            self._known = total
        return total

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


@dataclass
class FillProgress:
    """What a fill did: vectors written, ids dropped (their memory is gone)."""

    filled: int = 0
    dropped: int = 0


Put = Callable[[str, Sequence[VectorRecord]], Awaitable[None]]
"""Writes records back for a person (the engine's store write: index kept current)."""


async def fill_batch(pending: PendingVectors, store: VectorStore, embedder: Embedder,
                     put: Put, lock_for: Callable[[str], asyncio.Lock],
                     progress: FillProgress) -> bool:
    """Embed and write back one batch of waiting memories; False when none wait.

    The texts are embedded at batch priority (a turn's query goes first). The records
    are read again under the person's write lock just before the write, so a memory
    forgotten meanwhile stays forgotten and one changed meanwhile keeps its change.
    """
    waiting = await pending.take(FILL_BATCH)
    if not waiting:
        return False
    user = waiting[0][0]
    ids = [i for _, i in waiting]
    records = await store.get(user, ids)
    texts = [str(r.payload.get("text", "")) for r in records]
    computed: dict[str, tuple[str, FloatArray]] = {}
    if records:
        vectors = await embedder.embed(texts, "document", Priority.BATCH)
        computed = {r.id: (t, v) for r, t, v in zip(records, texts, vectors, strict=True)}
    async with lock_for(user):
        current = await store.get(user, list(computed)) if computed else []
        # a text changed meanwhile came with its own vector: only unchanged ones here
        fresh = [VectorRecord(r.id, computed[r.id][1], r.payload) for r in current
                 if str(r.payload.get("text", "")) == computed[r.id][0]]
        if fresh:
            await put(user, fresh)
    await pending.settle(user, ids)
    progress.filled += len(fresh)
    progress.dropped += len(ids) - len(current)
    return True


async def fill_pending(pending: PendingVectors, store: VectorStore, embedder: Embedder,
                       put: Put, lock_for: Callable[[str], asyncio.Lock], *,
                       report: Callable[[FillProgress, int], None] | None = None,
                       report_every_s: float = 30.0) -> FillProgress:
    """Fill every waiting vector (until none wait), calling ``report(progress,
    still_waiting)`` at most every ``report_every_s`` seconds and at the end."""
    progress = FillProgress()
    loop = asyncio.get_running_loop()
    last = loop.time()
    while await fill_batch(pending, store, embedder, put, lock_for, progress):
        if report is not None and loop.time() - last >= report_every_s:
            last = loop.time()
            report(progress, await pending.count())
        await asyncio.sleep(0)
    if report is not None:
        report(progress, await pending.count())
    return progress
