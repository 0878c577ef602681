"""Query embeddings for many people at once: micro-batched, shared, cached.

When 32 people ask something at the same moment, embedding their queries one model
call at a time makes the last one wait for 31 calls. A :class:`QueryLane` sits in
front of an embedder's query calls:

* **micro-batching** — the first query starts a model call at once; queries that
  arrive while it runs wait for it to end and then go together, up to ``max_batch``
  in one call (no timer: an idle server adds no delay);
* **shared results** — a query identical to one waiting or being embedded waits for
  that result instead of being embedded again;
* **a cache** of the ``cache_size`` most recent query vectors.

A query asked as **urgent** goes ahead of the others waiting: the memory engine asks
so for a person whose index is not ready, whose recall has nothing to go on without
the vector, while a person with an index still recalls by words when their vector is
late. Under load the few model calls there are go where they matter.

Among the queries waiting, the **newest goes first** (urgent ones, then the others).
Each caller waits only part of its recall's time budget, so under load a queue served
in arrival order embeds mostly queries whose callers are about to give up, and their
vectors come too late to be used; served newest first, the vectors that are made come
while their recall still waits (measured with 32 people at once: 97-106 of 128 settled
recalls went without their vector against 116-119 in arrival order, and people with no
index yet had their memory in 27-36 % of first turns against 12-21 %). An older query
is served as soon as the newer ones are.

A query whose callers all gave up (cancelled their wait: their recall went on without
the vector) is dropped if its model call has not started — under load, stale queries
must not delay fresh ones; once started, the call finishes and the vector lands in the
cache for the next turn. Query calls are interactive, so they go ahead of any queued
batch (document) work of the same embedder.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import numpy as np

from omoide.types import FloatArray

log = logging.getLogger("omoide.embed")

EmbedMany = Callable[[Sequence[str]], Awaitable[FloatArray]]


@dataclass(frozen=True)
class QueryLaneStats:
    """Counts since start: queries asked, answered from the cache, shared with an
    identical query in flight, and model calls made (``batches``) for ``embedded`` texts."""

    asked: int
    cached: int
    shared: int
    batches: int
    embedded: int
    dropped: int = 0
    """Queries nobody waited for any more, dropped before their model call."""


class QueryLane:
    """See the module docstring. Use from one event loop."""

    def __init__(self, embed_many: EmbedMany, max_batch: int, cache_size: int) -> None:
        self._embed_many = embed_many
        self.max_batch = max_batch
        self.cache_size = cache_size
        self._cache: OrderedDict[str, FloatArray] = OrderedDict()
        self._waiting: OrderedDict[str, asyncio.Future[FloatArray]] = OrderedDict()
        self._running: dict[str, asyncio.Future[FloatArray]] = {}
        self._worker: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiters: dict[str, int] = {}
        self._urgent: set[str] = set()
        """Waiting texts asked as urgent (they go into the next model call first)."""
        self._dropped = 0
        self._asked = self._cached = self._shared = self._batches = self._embedded = 0

    async def embed(self, text: str, *, urgent: bool = False) -> FloatArray:
        """The query vector of ``text`` (a fresh copy the caller may keep); ``urgent``:
        ahead of every query waiting that is not."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new event loop (a test, a command): start afresh
            self._waiting.clear()
            self._urgent.clear()
            self._running.clear()
            self._waiters.clear()
            self._worker, self._loop = None, loop
        self._asked += 1
        hit = self._cache.get(text)
        if hit is not None:
            self._cache.move_to_end(text)
            self._cached += 1
            return hit.copy()
        future = self._waiting.get(text) or self._running.get(text)
        if future is not None:
            self._shared += 1
            if text in self._waiting:
                self._waiting.move_to_end(text)  # asked again now: as new as its newest ask
        else:
            future = loop.create_future()
            self._waiting[text] = future
            if self._worker is None or self._worker.done():
                self._worker = loop.create_task(self._drain())
        if urgent and text in self._waiting:
            self._urgent.add(text)
        self._waiters[text] = self._waiters.get(text, 0) + 1
        try:
            vector = await asyncio.shield(future)
        finally:
            self._waiters[text] -= 1
            if not self._waiters[text]:
                del self._waiters[text]
                if self._waiting.get(text) is future and not future.done():
                    del self._waiting[text]  # nobody waits and it has not started: drop it
                    self._urgent.discard(text)
                    future.cancel()
                    self._dropped += 1
        return vector.copy()

    def stats(self) -> QueryLaneStats:
        return QueryLaneStats(self._asked, self._cached, self._shared, self._batches,
                              self._embedded, self._dropped)

    def close(self) -> None:
        """Stop the worker; queries still waiting or running are cancelled (the worker
        cancels the running ones as it stops)."""
        if self._worker is not None:
            self._worker.cancel()
        for future in self._waiting.values():
            if not future.done():
                future.cancel()
        self._waiting.clear()
        self._urgent.clear()

    def _next_batch(self) -> list[str]:
        """Up to ``max_batch`` waiting texts, urgent ones first, each the newest first;
        moved to running."""
        newest_first = list(reversed(self._waiting))
        urgent = [t for t in newest_first if t in self._urgent][:self.max_batch]
        rest = [t for t in newest_first if t not in self._urgent] \
            if len(urgent) < self.max_batch else []
        texts = urgent + rest[:self.max_batch - len(urgent)]
        for text in texts:
            self._running[text] = self._waiting.pop(text)
            self._urgent.discard(text)
        return texts

    async def _drain(self) -> None:
        while self._waiting:
            texts = self._next_batch()
            self._batches += 1
            self._embedded += len(texts)
            try:
                vectors = await self._embed_many(texts)
            except BaseException as exc:
                for text in texts:
                    failed = self._running.pop(text) if text in self._running else None
                    if failed is not None and not failed.done():
                        if isinstance(exc, asyncio.CancelledError):
                            failed.cancel()
                        else:
                            failed.set_exception(exc)
                            failed.exception()  # retrieved: nobody else may be waiting
                if isinstance(exc, asyncio.CancelledError):
                    raise
                continue
            for text, vector in zip(texts, np.asarray(vectors, dtype=np.float32),
                                    strict=True):
                done = self._running.pop(text) if text in self._running else None
                self._remember(text, vector)
                if done is not None and not done.done():
                    done.set_result(vector)

    def _remember(self, text: str, vector: FloatArray) -> None:
        if self.cache_size <= 0:
            return
        self._cache[text] = vector
        self._cache.move_to_end(text)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
