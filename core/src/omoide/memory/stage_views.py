"""What the memory engine hands its stages: one person's memory for a read engine, and
the host of an extractor.

A read engine never gets the vector store itself: :class:`PersonView` is bound to one
person, so every search, read and index it reaches is theirs (the store enforces the
person in the query itself; see :mod:`omoide.components.store`).

A recall whose person's index is not ready makes one dense search, not two: it starts
when the query vector is there (see :mod:`omoide.memory.recall.budgeted_inputs`), and the
nearest memories it finds serve both :meth:`PersonView.index_of_nearest` and the read
engine's own :meth:`PersonView.search` for that vector. It reads the records the index
cache has read (or is reading, or loading from disk) for the person's index being
built, else the store.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from omoide.components import ChatModel, Embedder, MemoryHit, VectorStore
from omoide.memory.config import RobustSettings
from omoide.memory.index.cache import IndexCache, dense_only_index, index_of_hits
from omoide.memory.index.dense_path_timing import DensePathTimes
from omoide.memory.recall.budgeted_inputs import ReadInputs, gather_inputs
from omoide.memory.store_payload import from_payload
from omoide.types import FloatArray, Memory, VectorHit

if TYPE_CHECKING:
    from omoide.memory.config import MemoryConfig
    from omoide.memory.index.person_index import UserIndex

DENSE_WOULD_NOT_FIT = ("index not ready, and a dense search of the store would not end"
                       " within the time budget now: nothing to recall from")
"""The shortfall of a recall that had its vector but no time for dense recall from the
store (see :mod:`omoide.memory.index.dense_path_timing`)."""

EARLY_CANDIDATES: int = RobustSettings.model_fields["dense_candidates"].default
"""Memories the early search of a recall without its index asks for (the robust
engine's default; a read engine asking for more searches again)."""


class PersonView:
    """:class:`omoide.components.PersonMemory` over the store, the embedder and the
    per-person index cache, for one person (built per recall: it reads the memory
    engine's current config)."""

    def __init__(self, user: str, *, store: VectorStore, embedder: Embedder, timezone: str,
                 indexes: IndexCache, config: MemoryConfig,
                 dense_paths: DensePathTimes | None = None) -> None:
        """``dense_paths``: the recent dense recalls from the store, shared by every
        recall of the engine (see :mod:`omoide.memory.index.dense_path_timing`)."""
        self._user = user
        self._store = store
        self._embedder = embedder
        self._timezone = timezone
        self._indexes = indexes
        self._config = config
        self._dense_paths = dense_paths if dense_paths is not None else DensePathTimes()
        self._nearest: tuple[FloatArray, int, asyncio.Future[list[VectorHit]]] | None = None
        """The last store search: its vector, limit and hits (shared by this recall)."""
        self._started: float | None = None
        """When this recall began (perf_counter), once it gathers its inputs."""
        self._dense_began: float | None = None
        """When its dense recall from the store began, until it ends."""

    @property
    def user(self) -> str:
        return self._user

    def close(self) -> None:
        """The recall is over: a store search it started and no longer waits for (it ran
        out of time, or its index came first) is cancelled, so it does not hold up other
        people's (the store serves one call at a time; under load 50 searches of recalls
        already over kept the next ones waiting 150-900 ms). One already running ends."""
        if self._nearest is not None:
            self._nearest[2].cancel()
            self._nearest = None
        if self._dense_began is not None:  # cut short by the budget: it took this long
            self._dense_paths.record(time.perf_counter() - self._dense_began)
            self._dense_began = None

    def _dense_fits(self) -> bool:
        """Whether dense recall from the store begun now likely ends within the budget."""
        if self._started is None:
            return True
        left = self._started + self._config.time_budget_ms / 1000 - time.perf_counter()
        return self._dense_paths.fits(left)

    @property
    def timezone(self) -> str:
        return self._timezone

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    async def search(self, vector: FloatArray, limit: int) -> list[MemoryHit]:
        hits = await self._hits(vector, limit)
        return [MemoryHit(from_payload(h.id, h.payload), h.score) for h in hits]

    def _search_early(self, vector: FloatArray) -> None:
        if not self._dense_fits():
            return  # it would end after the recall gave up (see index_and_vector)
        if self._dense_began is None:
            self._dense_began = time.perf_counter()
        if self._nearest is None or self._nearest[0] is not vector:
            search = asyncio.ensure_future(self._nearest_of(vector, EARLY_CANDIDATES))
            # a recall that ran out of time never awaits it: its failure is not news
            search.add_done_callback(lambda t: t.cancelled() or t.exception())
            self._nearest = (vector, EARLY_CANDIDATES, search)

    async def _hits(self, vector: FloatArray, limit: int) -> list[VectorHit]:
        """The store's ``limit`` nearest memories, from this recall's last search when it
        was for the same vector and at least as many."""
        last = self._nearest
        if last is not None and last[0] is vector and limit <= last[1]:
            hits = await asyncio.shield(last[2])
            return sorted(hits, key=lambda h: -h.score)[:limit]
        search = asyncio.ensure_future(self._nearest_of(vector, limit))
        self._nearest = (vector, limit, search)
        return await search

    async def _nearest_of(self, vector: FloatArray, limit: int) -> list[VectorHit]:
        """From the records read for an index being analysed when there are (a matrix
        product off the event loop), else from the store."""
        dense = await self._indexes.dense_loaded(self._user)
        if dense is not None:
            return await asyncio.to_thread(dense.nearest, vector, limit)
        return await self._store.search(self._user, vector, limit)

    async def get(self, ids: Sequence[str]) -> list[Memory]:
        return [from_payload(r.id, r.payload) for r in await self._store.get(self._user, ids)]

    async def memories(self) -> list[Memory]:
        return [from_payload(r.id, r.payload) for r in await self._store.scroll(self._user)]

    def prepare_index(self) -> None:
        self._indexes.request(self._user)

    def ready_index(self) -> UserIndex | None:
        return self._indexes.peek(self._user)

    async def index(self) -> UserIndex:
        idx = await self._indexes.wait(self._user, None)
        return idx if idx is not None else dense_only_index(self._user, self._timezone)

    async def index_and_vector(self, query_text: str, wants_vector: bool,
                               started: float) -> ReadInputs:
        self._started = started
        inputs = await gather_inputs(self._indexes, self._embedder, self._config, self._user,
                                     query_text, wants_vector, started, self._search_early,
                                     self._dense_paths.expected_s())
        if inputs.index is not None and self._nearest is not None:
            self._nearest[2].cancel()  # the index came in time: its search is not needed
            self._nearest = None
            self._dense_began = None
        elif inputs.index is None and inputs.vector is not None and self._nearest is None \
                and not self._dense_fits():
            inputs.vector = None  # no search began: none would have ended in time
            inputs.notes["dense"] = DENSE_WOULD_NOT_FIT
        return inputs

    async def index_of_nearest(self, vector: FloatArray, limit: int) -> UserIndex:
        """The throwaway index of the store's nearest memories, or the person's own index
        if its saved copy, being loaded, comes first (:meth:`IndexCache.built`): the
        store serves one call at a time, and under load right after a restart a search
        queued behind others (a Chroma server's count checks, 130-210 ms each) outlasted
        a load that ended 40-115 ms into it, and its recall ran out of time."""
        if self._dense_began is None:
            self._dense_began = time.perf_counter()
        hits = asyncio.ensure_future(self._hits(vector, limit))
        built = asyncio.ensure_future(self._indexes.built(self._user))
        try:
            await asyncio.wait([hits, built], return_when=asyncio.FIRST_COMPLETED)
            own = built.result() if built.done() else None
            if own is None:
                own_or_nearest = await index_of_hits(await hits, self._user, self._timezone)
            else:
                own_or_nearest = own  # a path cut short: its time so far is recorded
        finally:
            built.cancel()
            hits.cancel()  # a search begun early is shared (see _hits): close() ends it
        self._dense_paths.record(time.perf_counter() - self._dense_began)
        self._dense_began = None
        return own_or_nearest


class ExtractorHostView:
    """:class:`omoide.components.ExtractorHost`: the memory engine's chat model (read at
    each call: it may be configured later) and the time zone."""

    def __init__(self, chat: Callable[[], ChatModel | None], timezone: str) -> None:
        self._chat = chat
        self._timezone = timezone

    @property
    def chat(self) -> ChatModel | None:
        return self._chat()

    @property
    def timezone(self) -> str:
        return self._timezone
