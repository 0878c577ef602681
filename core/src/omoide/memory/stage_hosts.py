"""What the memory engine hands its stages: one person's memory for a read engine, and
the host of an extractor.

A read engine never gets the vector store itself: :class:`PersonView` is bound to one
person, so every search, read and index it reaches is theirs (the store enforces the
person in the query itself; see :mod:`omoide.components.store`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from omoide.components import ChatModel, Embedder, MemoryHit, VectorStore
from omoide.memory.index_cache import IndexCache, dense_only_index, index_of_hits
from omoide.memory.read_inputs import ReadInputs, gather_inputs
from omoide.memory.records import from_payload
from omoide.types import FloatArray, Memory

if TYPE_CHECKING:
    from omoide.memory.config import MemoryConfig
    from omoide.memory.index import UserIndex


class PersonView:
    """:class:`omoide.components.PersonMemory` over the store, the embedder and the
    per-person index cache, for one person (built per recall: it reads the memory
    engine's current config)."""

    def __init__(self, user: str, *, store: VectorStore, embedder: Embedder, timezone: str,
                 indexes: IndexCache, config: MemoryConfig) -> None:
        self._user = user
        self._store = store
        self._embedder = embedder
        self._timezone = timezone
        self._indexes = indexes
        self._config = config

    @property
    def user(self) -> str:
        return self._user

    @property
    def timezone(self) -> str:
        return self._timezone

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    async def search(self, vector: FloatArray, limit: int) -> list[MemoryHit]:
        hits = await self._store.search(self._user, vector, limit)
        return [MemoryHit(from_payload(h.id, h.payload), h.score) for h in hits]

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
        return await gather_inputs(self._indexes, self._embedder, self._config, self._user,
                                   query_text, wants_vector, started)

    async def index_of_nearest(self, vector: FloatArray, limit: int) -> UserIndex:
        return await index_of_hits(self._store, self._user, vector, limit, self._timezone)


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
