"""Vector stores: per-user vectors with payloads, searched by cosine.

Every method takes the ``user`` the data belongs to and the plugin must enforce it
**in the query itself** (a filter on the payload's ``user`` field, a per-user
collection...), never by filtering results afterwards; the store contract checks it.

:meth:`VectorStore.open` guards the vector space: the first embedder to fill a
store writes its fingerprint, and a later embedder that disagrees is refused with
:class:`EmbedderMismatch` (migrate with ``omoide memory reembed``).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import Field

from omoide.components.base import Capabilities, Component, ComponentConfig
from omoide.errors import EmbedderMismatch
from omoide.types import EmbedderFingerprint, FloatArray, VectorHit, VectorRecord

USER_FIELD = "user"


class VectorStoreConfig(ComponentConfig):
    collection: str = Field("memories", min_length=3, pattern=r"^[A-Za-z0-9_\-]+$",
                            description="Collection (table) name inside the store.")
    min_agreement: float = Field(0.99, ge=0, le=1,
                                 description="Probe cosine an embedder needs to reuse a store.")


@dataclass(frozen=True)
class StoreCapabilities(Capabilities):
    persistent: bool = True
    filters: bool = True
    sparse_vectors: bool = False


class VectorStore(Component[VectorStoreConfig]):
    kind: ClassVar[str] = "store"
    Config: ClassVar[type[VectorStoreConfig]] = VectorStoreConfig
    capabilities: ClassVar[StoreCapabilities] = StoreCapabilities()

    async def open(self, fingerprint: EmbedderFingerprint) -> None:
        """Prepare the collection for vectors of ``fingerprint``'s space.

        Raises :class:`EmbedderMismatch` if the store holds another embedder's vectors.
        """
        stored = await self._read_fingerprint()
        if stored is None:
            await self._create(fingerprint.dims)
            await self._write_fingerprint(fingerprint)
            return
        agreement = stored.agreement(fingerprint)
        if (stored.model != fingerprint.model or stored.dims != fingerprint.dims
                or agreement < self.config.min_agreement):
            raise EmbedderMismatch(
                f"store {self.name} collection {self.config.collection!r} was filled by"
                f" embedder {stored.model} ({stored.dims} dims); the configured embedder is"
                f" {fingerprint.model} ({fingerprint.dims} dims), probe agreement"
                f" {agreement:.3f} < {self.config.min_agreement}. Use the embedder that"
                f" filled it, or migrate with `omoide memory reembed --config FILE`.")

    async def fingerprint(self) -> EmbedderFingerprint | None:
        """The fingerprint of the embedder that filled this store, if any."""
        return await self._read_fingerprint()

    async def upsert(self, user: str, records: Sequence[VectorRecord]) -> None:
        if records:
            await self._call("upsert", lambda: self._upsert(user, records))

    async def search(self, user: str, vector: FloatArray, limit: int,
                     where: dict[str, Any] | None = None) -> list[VectorHit]:
        """Top ``limit`` of ``user``'s records by cosine; ``where`` = exact payload matches."""
        return await self._call("search", lambda: self._search(user, vector, limit, where))

    async def get(self, user: str, ids: Sequence[str]) -> list[VectorRecord]:
        return await self._call("get", lambda: self._get(user, ids)) if ids else []

    async def delete(self, user: str, ids: Sequence[str]) -> None:
        if ids:
            await self._call("delete", lambda: self._delete(user, ids))

    async def scroll(self, user: str) -> list[VectorRecord]:
        """Every record of ``user`` (for lexical indexes, export and re-embedding)."""
        return await self._call("scroll", lambda: self._scroll(user))

    async def count(self, user: str) -> int:
        return await self._call("count", lambda: self._count(user))

    async def reset(self) -> None:
        """Drop the collection and its fingerprint (used by ``memory reembed``)."""
        await self._drop()

    # primitives -------------------------------------------------------------------
    @abstractmethod
    async def _read_fingerprint(self) -> EmbedderFingerprint | None: ...

    @abstractmethod
    async def _write_fingerprint(self, fingerprint: EmbedderFingerprint) -> None: ...

    @abstractmethod
    async def _create(self, dims: int) -> None: ...

    @abstractmethod
    async def _drop(self) -> None: ...

    @abstractmethod
    async def _upsert(self, user: str, records: Sequence[VectorRecord]) -> None: ...

    @abstractmethod
    async def _search(self, user: str, vector: FloatArray, limit: int,
                      where: dict[str, Any] | None) -> list[VectorHit]: ...

    @abstractmethod
    async def _get(self, user: str, ids: Sequence[str]) -> list[VectorRecord]: ...

    @abstractmethod
    async def _delete(self, user: str, ids: Sequence[str]) -> None: ...

    @abstractmethod
    async def _scroll(self, user: str) -> list[VectorRecord]: ...

    @abstractmethod
    async def _count(self, user: str) -> int: ...
