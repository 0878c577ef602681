"""What a robust recall reads from, gathered within its time budget: the person's index
and the query vector.

Both may be late when many people talk at once: the query embedding waits behind
other people's, and a person's index is built on their first turn. A recall never
spends its whole budget waiting for one of them:

1. it waits for the query vector up to ``query_embed_wait_share`` of the budget;
2. then for the index up to ``index.first_turn_wait_share`` (both were started at the
   turn's beginning, so these waits overlap the work), except for an index whose
   records are being analysed (a large person, see :mod:`omoide.memory.index.dense_snapshot`):
   that takes seconds, and their records answer the dense search meanwhile; nor, with
   the vector in hand, for a build that waits for a slot behind others (under load it
   is more than one build away; the dense search already under way answers sooner);
3. if it has neither yet, it takes whichever comes first, up to :data:`READ_SHARE` of
   the budget, leaving the rest for reading; while the person's build still waits for
   a slot, only up to the time a dense search from the store then takes lately before
   the end of the budget (a vector later than that would be of no use).

With the index and no vector, the lexical, temporal and entity channels recall alone;
with the vector and no index, a dense search of the store finds the candidates and the
index channels judge those (when it is likely to end within the budget: see
:mod:`omoide.memory.index.dense_path_timing`). That search is started (``on_vector``) as soon as the
vector is there and the index is not, while the recall still waits for the index: a
person of 100,000 memories has an index that takes a minute to build and a store
search that takes about 100 ms (Qdrant local), so waiting first and searching after
would not fit the budget. While a recall waits, its person's build keeps a turn's
priority; once no recall waits for it, a build that has no slot yet gives way to those
that do (:meth:`IndexCache.awaited`). A late embedding is given up: if its model call has not
started it is dropped (fresh queries go first), else it lands in the query cache. The
query of a person with no index yet is urgent (it goes ahead in the query lane): a
recall with an index still has the lexical channels without it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from omoide.components import Embedder
from omoide.components.memory_types import ReadInputs as ReadInputs  # re-exported
from omoide.memory.config import MemoryConfig
from omoide.memory.index.cache import IndexCache
from omoide.types import FloatArray

READ_SHARE = 0.7
"""Share of the time budget after which a recall stops waiting for its inputs. 0.7
against 0.8, 3 paired runs of 32 clients right after ready: turn p95 353-377 ms against
390-418, first turns with their memory 27-31 % against 25-35 %."""

LATE_EMBEDDING = "late: recalled without the dense channel"


async def gather_inputs(indexes: IndexCache, embedder: Embedder, config: MemoryConfig,
                        user: str, query_text: str, wants_vector: bool,
                        started: float,
                        on_vector: Callable[[FloatArray], None] | None = None,
                        dense_s: float = 0.0) -> ReadInputs:
    """The index and vector of one recall that began at ``started`` (perf_counter).

    Call :meth:`IndexCache.request` for ``user`` first, as early as possible.
    ``on_vector(vector)`` is called once when the vector is there before the index
    (the caller starts the dense search it will need if the index is late).
    ``dense_s``: how long that dense search and its analysis take lately (see
    :mod:`omoide.memory.index.dense_path_timing`): a recall whose index waits for a build slot stops
    waiting for a vector that would come too late to be used.
    """
    if not wants_vector:  # the gate will say "no recall intent": nothing to wait for
        return ReadInputs(indexes.peek(user), None)
    with indexes.awaited(user):  # a build nobody waits for any more gives way (see there)
        return await _gather(indexes, embedder, config, user, query_text, started,
                             on_vector, dense_s)


async def _gather(indexes: IndexCache, embedder: Embedder, config: MemoryConfig,
                  user: str, query_text: str, started: float,
                  on_vector: Callable[[FloatArray], None] | None,
                  dense_s: float) -> ReadInputs:
    budget_s = config.time_budget_ms / 1000
    t = time.perf_counter()
    # without an index the vector is all a recall has to go on: it is embedded first
    embedding = asyncio.ensure_future(
        embedder.embed_query(query_text, urgent=indexes.peek(user) is None))
    vector = await _within(embedding, budget_s * config.query_embed_wait_share)
    embed_ms = (time.perf_counter() - t) * 1000  # the time spent waiting for the vector
    if vector is not None and on_vector is not None and indexes.peek(user) is None:
        on_vector(vector)
    index_wait_s = budget_s * config.index.first_turn_wait_share
    if indexes.analysing_large(user):
        index_wait_s = 0.0  # a large index being analysed: seconds away, not milliseconds
    elif vector is not None and indexes.queued(user):
        index_wait_s = 0.0  # not begun: the dense search already under way answers sooner
    index = await indexes.wait(user, index_wait_s)
    if index is None and vector is None:
        deadline = started + budget_s * READ_SHARE
        if indexes.queued(user):  # no index in time: only a vector still can be of use
            deadline = min(deadline, started + budget_s - dense_s)
        left = deadline - time.perf_counter()
        waiting = asyncio.ensure_future(indexes.wait(user, max(0.0, left)))
        done, _ = await asyncio.wait({embedding, waiting}, timeout=max(0.0, left),
                                     return_when=asyncio.FIRST_COMPLETED)
        if embedding in done:
            vector = embedding.result()
            if on_vector is not None and indexes.peek(user) is None:
                on_vector(vector)
        if waiting.done():
            index = waiting.result()
        else:
            waiting.cancel()
        embed_ms = (time.perf_counter() - t) * 1000
    out = ReadInputs(index, vector, embed_ms)
    if vector is None:
        embedding.cancel()
        out.notes["embedding"] = LATE_EMBEDDING
    return out


async def _within(task: asyncio.Future[Any], seconds: float) -> Any:
    """``task``'s result, or None when it is not done within ``seconds`` (it goes on)."""
    try:
        return await asyncio.wait_for(asyncio.shield(task), seconds)
    except TimeoutError:
        return None

