"""Vector stores: per-user vectors with payloads, searched by cosine.

Every method takes the ``user`` the data belongs to and the plugin must enforce it
**in the query itself** (a filter on the payload's ``user`` field, a per-user
collection...), never by filtering results afterwards; the store contract checks it.

:meth:`VectorStore.open` guards the vector space: the first embedder to fill a
store writes its fingerprint, and a later embedder that disagrees is refused with
:class:`EmbedderMismatch` (migrate with ``omoide memory reembed``).

Reading a person's whole memory goes page by page (:meth:`VectorStore.scroll_page`):
every page is its own store call under the call timeout, and a plugin must make
the next page cost about as much as the first (a cursor that resumes, never a scan
from the start), so reading 100,000 memories is 200 cheap calls, not one long one.

A store that keeps each person's memories apart on disk can vouch for them
(:meth:`VectorStore.check_people`): at start it names each person whose memories went
missing or were damaged (:class:`PersonDamage`), and a store that finds it later says so
through :meth:`VectorStore.person_damaged`. From then on every call for that person is
refused with :class:`PersonMemoryUnavailable` (the rest go on) until
:meth:`VectorStore.rebuild_person` (``omoide memory repair``) gives them a new store.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import Field

from omoide.components.base import Capabilities, Component, ComponentConfig
from omoide.errors import ComponentError, EmbedderMismatch, InvalidInput
from omoide.types import EmbedderFingerprint, FloatArray, VectorHit, VectorRecord

USER_FIELD = "user"
DEFAULT_PAGE = 512
"""Records per page when :meth:`VectorStore.scroll` reads a whole person."""


@dataclass(frozen=True)
class ScrollPage:
    """One page of a person's records and where the next one starts.

    ``cursor`` is opaque (pass it back to :meth:`VectorStore.scroll_page`); ``None``
    means this was the last page.
    """

    records: list[VectorRecord]
    cursor: str | None


@dataclass(frozen=True)
class PersonDamage:
    """One person's stored memories that went missing or were damaged.

    ``where`` is the file or directory, ``what`` what is wrong with it, ``memories`` how
    many memories the store had recorded for them (0 when unknown).
    """

    user: str
    where: str
    what: str
    memories: int = 0

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


def repair_hint(user: str) -> str:
    """What to do about a person's lost store (said wherever the loss is reported)."""
    return (f"rebuild it from the journal with `omoide memory repair --config FILE --user"
            f" {user}` (with the server stopped), or put the directory back from a backup")


class PersonMemoryUnavailable(ComponentError):
    """A person's memories cannot be read or written: their store is missing or damaged.

    Not retryable: nothing changes until the store is repaired."""

    def __init__(self, damage: PersonDamage) -> None:
        self.damage = damage
        super().__init__(f"the memories of {damage.user!r} are unavailable: their store"
                         f" {damage}; {repair_hint(damage.user)}", retryable=False)


@dataclass(frozen=True)
class RebuildReport:
    """What :meth:`VectorStore.rebuild_person` did.

    ``restored``: records written; ``not_restored``: memories the store had recorded for
    the person that none of the given records replaced; ``left_out``: given records the
    store had no record of (forgotten or replaced since), not written; ``set_aside``:
    where the damaged store was moved, if anything was there.
    """

    restored: int
    not_restored: int
    left_out: int = 0
    set_aside: str | None = None


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

    def __init__(self, config: VectorStoreConfig) -> None:
        super().__init__(config)
        self._damaged: dict[str, PersonDamage] = {}

    @property
    def damaged_people(self) -> dict[str, PersonDamage]:
        """People whose memories are unavailable (their store missing or damaged)."""
        return dict(self._damaged)

    async def check_people(self) -> list[PersonDamage]:
        """Check every person's stored memories against what the store recorded of them
        (cheap: no store is read whole); each problem found makes that person's calls
        refused until :meth:`rebuild_person`. A store that keeps no such record finds
        nothing."""
        found = await self._check_people()
        for damage in found:
            self.person_damaged(damage)
        return found

    def person_damaged(self, damage: PersonDamage) -> PersonMemoryUnavailable:
        """Note that ``damage.user``'s memories are unavailable; returns the error to raise
        (a plugin that finds the damage while serving a call raises it)."""
        self._damaged.setdefault(damage.user, damage)
        return PersonMemoryUnavailable(self._damaged[damage.user])

    def _refuse_damaged(self, user: str) -> None:
        damage = self._damaged.get(user)
        if damage is not None:
            raise PersonMemoryUnavailable(damage)

    async def rebuild_person(self, user: str, records: Sequence[VectorRecord]) -> RebuildReport:
        """Give ``user`` a new store holding ``records`` (those the store recorded for them:
        a record forgotten since is left out), setting a damaged one aside. Runs without
        the call time budget (a person may have many memories)."""
        report = await self._rebuild_person(user, records)
        self._damaged.pop(user, None)
        return report

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
        self._refuse_damaged(user)
        if records:
            await self._call("upsert", lambda: self._upsert(user, records))

    async def search(self, user: str, vector: FloatArray, limit: int,
                     where: dict[str, Any] | None = None) -> list[VectorHit]:
        """Top ``limit`` of ``user``'s records by cosine; ``where`` = exact payload matches."""
        self._refuse_damaged(user)
        return await self._call("search", lambda: self._search(user, vector, limit, where))

    async def get(self, user: str, ids: Sequence[str]) -> list[VectorRecord]:
        self._refuse_damaged(user)
        return await self._call("get", lambda: self._get(user, ids)) if ids else []

    async def delete(self, user: str, ids: Sequence[str]) -> None:
        self._refuse_damaged(user)
        if ids:
            await self._call("delete", lambda: self._delete(user, ids))

    async def scroll_page(self, user: str, cursor: str | None = None,
                          limit: int = DEFAULT_PAGE) -> ScrollPage:
        """Up to ``limit`` of ``user``'s records, from ``cursor`` (``None``: the start).

        Pages come in a stable order; a scan from ``None`` to the last page returns every
        record present for the whole scan exactly once (a record written or deleted
        during the scan may or may not appear). Each page is one call under the time
        budget, and costs about the same wherever it starts.
        """
        if limit < 1:
            raise InvalidInput(f"store {self.name}: page limit must be at least 1, not {limit}")
        self._refuse_damaged(user)
        return await self._call("scroll_page", lambda: self._scroll_page(user, cursor, limit))

    async def scroll(self, user: str, page: int = DEFAULT_PAGE) -> list[VectorRecord]:
        """Every record of ``user`` (export, re-embedding), read page by page."""
        out: list[VectorRecord] = []
        cursor: str | None = None
        while True:
            got = await self.scroll_page(user, cursor, page)
            out.extend(got.records)
            if got.cursor is None:
                return out
            cursor = got.cursor

    @property
    def shared(self) -> bool:
        """True when other processes may write to this store (a server), so whatever a
        process caches about a person's records must be refreshed from time to time.
        A store that only this process can open says False."""
        return True

    async def count(self, user: str) -> int:
        self._refuse_damaged(user)
        return await self._call("count", lambda: self._count(user))

    async def reset(self) -> None:
        """Drop the collection and its fingerprint (used by ``memory reembed``)."""
        await self._drop()

    # primitives -------------------------------------------------------------------
    async def _check_people(self) -> list[PersonDamage]:
        """Override when the store records what each person's store holds."""
        return []

    async def _rebuild_person(self, user: str, records: Sequence[VectorRecord],
                              ) -> RebuildReport:
        """Override to rebuild one person's store; the default writes ``records`` over
        what is there (a store that records nothing per person cannot tell more)."""
        await self.upsert(user, records)
        return RebuildReport(restored=len(records), not_restored=0)

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
    async def _scroll_page(self, user: str, cursor: str | None, limit: int) -> ScrollPage:
        """One page of ``user``'s records (see :meth:`scroll_page`); enforce the user in
        the query and resume from ``cursor`` without re-reading what came before."""

    @abstractmethod
    async def _count(self, user: str) -> int: ...
