"""The `chroma` vector store: one cosine collection shared by all users, isolated by filter.

Layout of an entry (callers never see it):

* id: ``uuid5(NAMESPACE, user + "\\n" + record id)``, so two users' records with the same
  id are two entries and one user can never overwrite the other's;
* metadata: ``user``, ``id`` (the record id), ``payload_json`` (the whole payload, so it
  round-trips exactly) and ``p.<key>`` for every payload value Chroma can filter on
  (str, int, float, bool, non-empty lists of one of those); ``where`` keys are matched
  against ``p.<key>``.

A search ranks a person's own entries exactly when they are few (at most
``EXACT_SEARCH_MAX`` under the ``where``): Chroma's HNSW walk under a filter that keeps
100 entries of 1,000,000 took 0.58 s against ``chroma run``, and fetching those 100 with
their embeddings 0.065 s (fetching 1,000: 0.16 s). A person found to have more is
remembered (until one of their entries is deleted) and searched through the HNSW index.
Such reads of whole people, and the first page of a scan, are answered several people
to a call when they wait for the worker together (:mod:`.person_reads`).

Searches, counts, deletes and id listings carry ``user == U`` in the Chroma ``where``
itself. Reads by id do not: an entry id is ``uuid5(user, record id)``, so only the
person's own entries can have the ids asked for, and Chroma answers ``get(ids, where)``
slowly (512 ids of a person with 100,000 entries: 13.9 s with the ``where``, 0.08 s
without, measured against ``chroma run``).
The embedder fingerprint is kept in the collection's metadata. Embeddings are always
ours (``embedding_function=None``): Chroma never tries to download a model.

chromadb is synchronous; every call runs on the component's worker thread.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np

from omoide.api import (
    USER_FIELD,
    ComponentError,
    EmbedderFingerprint,
    FloatArray,
    IdSnapshots,
    InvalidInput,
    Priority,
    ScrollPage,
    StoreCapabilities,
    VectorHit,
    VectorRecord,
    VectorStore,
    work_priority,
)
from omoide_store_chroma.config import ChromaStoreConfig
from omoide_store_chroma.person_reads import Entries, PersonReads

if TYPE_CHECKING:
    from pathlib import Path

    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection

    from omoide_store_chroma.local_server import LocalChromaServer

log = logging.getLogger("omoide.store.chroma")

T = TypeVar("T")

ENTRY_ID_NAMESPACE = uuid.UUID("6f6d6f69-6465-5f63-6872-6f6d615f6964")
ID_FIELD = "id"
PAYLOAD_JSON_FIELD = "payload_json"
FILTER_PREFIX = "p."
FINGERPRINT_KEY = "omoide_fingerprint"
_SCALARS = (str, int, float, bool)
EXACT_SEARCH_MAX = 1000
"""Most entries (under a search's ``where``) a search fetches and ranks itself."""


def entry_id(user: str, record_id: str) -> str:
    """The Chroma id of ``user``'s record ``record_id`` (a deterministic UUID string)."""
    return str(uuid.uuid5(ENTRY_ID_NAMESPACE, f"{user}\n{record_id}"))


class ChromaStore(VectorStore):
    """Vectors in Chroma: an embedded persistent store (``path``) or a server (``host``)."""

    name = "chroma"
    Config = ChromaStoreConfig
    capabilities: ClassVar[StoreCapabilities] = StoreCapabilities(persistent=True, filters=True)

    config: ChromaStoreConfig

    def __init__(self, config: ChromaStoreConfig) -> None:
        super().__init__(config)
        self._client: ClientAPI | None = None
        self._snapshots = IdSnapshots()
        # people with more than EXACT_SEARCH_MAX entries: their searches go to the index
        self._many_entries: set[str] = set()
        self._reads = PersonReads()
        self._warming: asyncio.Future[None] | None = None

    @classmethod
    def local_server(cls, data_dir: Path) -> LocalChromaServer:
        """A Chroma server on this machine (``chroma run``, data in ``data_dir``) for
        benchmarks and tests that need a store several processes share: a context manager
        that starts it on a free port (``port``, ``pid``) and stops it; the store reaches
        it with ``{use: chroma, host: 127.0.0.1, port: <port>}``."""
        from omoide_store_chroma.local_server import LocalChromaServer
        return LocalChromaServer(data_dir)

    # -- lifecycle -------------------------------------------------------------------
    async def _start(self) -> None:
        self._client = await self.run_blocking(lambda: _translate_errors(self._open_client))

    async def _stop(self) -> None:
        if self._warming is not None:
            self._warming.cancel()
            await asyncio.gather(self._warming, return_exceptions=True)
            self._warming = None
        client, self._client = self._client, None
        close = getattr(client, "close", None)  # chromadb < 1.1 has no close()
        if close is not None:
            await self.run_blocking(close)

    def _open_client(self) -> ClientAPI:
        import chromadb
        from chromadb.config import Settings

        cfg = self.config
        # No telemetry: omoide runs offline and keeps users' data to itself.
        settings = Settings(anonymized_telemetry=False)
        if cfg.path is not None:
            return chromadb.PersistentClient(path=cfg.path, settings=settings)
        headers = dict(cfg.headers)
        if cfg.token is not None:
            headers["Authorization"] = f"Bearer {cfg.token.get_secret_value()}"
        try:
            return chromadb.HttpClient(host=cfg.host or "localhost", port=cfg.port, ssl=cfg.ssl,
                                       headers=headers, settings=settings)
        except ValueError as exc:
            # chromadb reports an unreachable server as a ValueError raised over the
            # httpx error; the server may just be starting, so that one is retryable.
            import httpx

            unreachable = isinstance(exc.__context__, httpx.TransportError)
            raise ComponentError(
                f"store chroma: cannot use the Chroma server at {cfg.host}:{cfg.port} ({exc})",
                retryable=unreachable) from exc

    async def _run(self, fn: Callable[[ClientAPI], T],
                   priority: Priority | None = None) -> T:
        client = self._client
        if client is None:
            raise ComponentError("store chroma: not started")
        return await self.run_blocking(lambda: _translate_errors(lambda: fn(client)), priority)

    def _collection(self, client: ClientAPI) -> Collection:
        return client.get_collection(self.config.collection, embedding_function=None)

    def _collection_or_none(self, client: ClientAPI) -> Collection | None:
        from chromadb.errors import NotFoundError

        try:
            return self._collection(client)
        except (NotFoundError, ValueError):
            return None

    async def open(self, fingerprint: EmbedderFingerprint) -> None:
        """Prepare the collection (see :meth:`VectorStore.open`), then have Chroma load it
        in the background (:meth:`_warm`)."""
        await super().open(fingerprint)
        if self._warming is None:
            self._warming = asyncio.ensure_future(self._warm())

    async def _warm(self) -> None:
        """One filtered read that matches nothing, at batch priority: a Chroma server
        loads a collection on its first read, which took 2.3-2.7 s for 1,000,000 entries
        (any read: a count, a person's entries); after it, a person's read took 60-80 ms.
        Done after the store opens, so the first turn does not pay for it unless it
        comes within those seconds. A failure is only logged: the first real read tries
        again."""
        # no person has an empty id (omoide.user_ids)
        nobody: dict[str, Any] = {USER_FIELD: {"$eq": ""}}
        started = time.perf_counter()
        try:
            await self._run(lambda c: self._collection(c).get(where=nobody, limit=1,
                                                              include=[]), Priority.BATCH)
        except Exception as exc:  # noqa: BLE001 - the first real read tries again
            log.info("store chroma: loading the collection in the background failed: %s",
                     exc)
            return
        log.debug("store chroma: collection loaded in %.0f ms",
                  (time.perf_counter() - started) * 1000)

    # -- fingerprint -----------------------------------------------------------------
    async def _read_fingerprint(self) -> EmbedderFingerprint | None:
        def read(client: ClientAPI) -> EmbedderFingerprint | None:
            collection = self._collection_or_none(client)
            raw = (collection.metadata or {}).get(FINGERPRINT_KEY) if collection else None
            return EmbedderFingerprint.from_json(json.loads(raw)) if raw else None

        return await self._run(read)

    async def _write_fingerprint(self, fingerprint: EmbedderFingerprint) -> None:
        raw = json.dumps(fingerprint.to_json())

        def write(client: ClientAPI) -> None:
            collection = self._collection(client)
            collection.modify(metadata={**(collection.metadata or {}), FINGERPRINT_KEY: raw})

        await self._run(write)

    # -- collection ------------------------------------------------------------------
    async def _create(self, dims: int) -> None:
        # Chroma fixes a collection's dimension with its first vector; nothing to size here.
        name = self.config.collection
        await self._run(lambda c: c.get_or_create_collection(
            name, configuration={"hnsw": {"space": "cosine"}}, embedding_function=None))

    async def _drop(self) -> None:
        def drop(client: ClientAPI) -> None:
            self._snapshots.clear()
            self._many_entries.clear()
            if self._collection_or_none(client) is not None:
                client.delete_collection(self.config.collection)

        await self._run(drop)

    # -- entries ---------------------------------------------------------------------
    async def _upsert(self, user: str, records: Sequence[VectorRecord]) -> None:
        ids = [entry_id(user, r.id) for r in records]
        embeddings = np.stack([np.asarray(r.vector, dtype=np.float32) for r in records])
        metadatas = [_metadata(user, r) for r in records]

        def upsert(client: ClientAPI) -> None:
            self._snapshots.forget(user)
            collection = self._collection(client)
            step = max(1, min(client.get_max_batch_size(), 5000))
            for i in range(0, len(ids), step):
                collection.upsert(ids=ids[i:i + step], embeddings=embeddings[i:i + step],
                                  metadatas=metadatas[i:i + step])  # type: ignore[arg-type]

        await self._run(upsert, Priority.BATCH)

    async def _search(self, user: str, vector: FloatArray, limit: int,
                      where: dict[str, Any] | None) -> list[VectorHit]:
        chroma_where = _user_where(user, where)
        query = np.asarray(vector, dtype=np.float32)
        if where is None and user not in self._many_entries:
            own = await self._own_entries(user, EXACT_SEARCH_MAX, work_priority())
            if own is not None:
                return _ranked(own, query, limit)
            self._many_entries.add(user)

        def search(client: ClientAPI) -> list[VectorHit]:
            collection = self._collection(client)
            if user not in self._many_entries:
                own = collection.get(where=chroma_where, limit=EXACT_SEARCH_MAX + 1,
                                     include=["metadatas", "embeddings"])
                if len(own["ids"]) <= EXACT_SEARCH_MAX:
                    return _ranked(own, query, limit)
                self._many_entries.add(user)
            result = collection.query(
                query_embeddings=query[None, :], n_results=limit, where=chroma_where,
                include=["metadatas", "distances"])
            metadatas = (result["metadatas"] or [[]])[0]
            distances = (result["distances"] or [[]])[0]
            # Chroma's cosine space returns the distance 1 - cosine.
            return [VectorHit(str(m[ID_FIELD]), 1.0 - float(d), _payload(m))
                    for m, d in zip(metadatas, distances, strict=True)]

        return await self._run(search)

    async def _own_entries(self, user: str, most: int, priority: Priority) -> Entries | None:
        """Every entry of ``user``, with its embedding, when they have at most ``most``
        (else None), read in one call with other people's reads that wait for the
        worker (:mod:`omoide_store_chroma.person_reads`)."""
        read = self._reads.add(user, most, priority)

        def serve(client: ClientAPI) -> None:
            def get(users: list[str], limit: int) -> dict[str, Any]:
                where: dict[str, Any] = (_user_where(users[0], None) if len(users) == 1
                                         else {USER_FIELD: {"$in": users}})
                return _translate_errors(lambda: dict(self._collection(client).get(
                    where=where, limit=limit, include=["metadatas", "embeddings"])))

            self._reads.serve(read, get)

        job: asyncio.Future[None] = asyncio.ensure_future(self._run(serve, priority))
        answered: asyncio.Future[Entries | None] = asyncio.wrap_future(read.done)
        try:
            either: list[asyncio.Future[Any]] = [job, answered]
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            if job.done() and not answered.done():
                job.result()  # what kept the worker from serving it, if anything
            return await answered  # served by this job or by an earlier one
        finally:
            self._reads.drop(read)
            answered.cancel()
            job.cancel()
            if job.done() and not job.cancelled():
                job.exception()  # retrieved: the reader has what it needs

    async def _get(self, user: str, ids: Sequence[str]) -> list[VectorRecord]:
        wanted = list(dict.fromkeys(ids))
        entry_ids = [entry_id(user, i) for i in wanted]  # only this user's (see above)

        def get(client: ClientAPI) -> list[VectorRecord]:
            result = self._collection(client).get(ids=entry_ids,
                                                  include=["metadatas", "embeddings"])
            return _records(result, user)

        found = {r.id: r for r in await self._run(get)}
        return [found[i] for i in wanted if i in found]

    async def _delete(self, user: str, ids: Sequence[str]) -> None:
        entry_ids = [entry_id(user, i) for i in ids]
        chroma_where = _user_where(user, None)

        def delete(client: ClientAPI) -> None:
            self._snapshots.forget(user)
            self._many_entries.discard(user)
            self._collection(client).delete(ids=entry_ids, where=chroma_where)

        await self._run(delete)

    async def _scroll_page(self, user: str, cursor: str | None, limit: int) -> ScrollPage:
        if cursor is None:  # a person who fits one page is read in one call
            own = await self._own_entries(user, limit, Priority.BATCH)
            if own is not None:
                return ScrollPage(_records(own, user), None)
        chroma_where = _user_where(user, None)

        def page(client: ClientAPI) -> ScrollPage:
            collection = self._collection(client)

            # Chroma's `offset` moves when an earlier entry is deleted: list the
            # person's entry ids once per scan and fetch each page by id instead.
            def list_ids() -> list[str]:
                return list(collection.get(where=chroma_where, include=[])["ids"])

            ids, following = self._snapshots.page(user, cursor, limit, list_ids)
            if not ids:
                return ScrollPage([], following)
            # ids listed under the user's where: no where again (see the docstring)
            records = _records(collection.get(ids=ids, include=["metadatas", "embeddings"]),
                               user)
            return ScrollPage(records, following)

        return await self._run(page, Priority.BATCH)

    @property
    def shared(self) -> bool:
        """A Chroma server may be written by other processes too."""
        return self.config.host is not None

    async def _count(self, user: str) -> int:
        chroma_where = _user_where(user, None)
        # Chroma counts only whole collections; fetching ids alone is the cheap filtered
        # count, still 60-210 ms on a server of 1,000,000 entries: at batch priority, as
        # no turn waits for a count (the index refresh checks of a shared store do).
        return await self._run(lambda c: len(self._collection(c).get(
            where=chroma_where, include=[])["ids"]), Priority.BATCH)


def _metadata(user: str, record: VectorRecord) -> dict[str, Any]:
    try:
        payload_json = json.dumps(record.payload, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"store chroma: payload of {record.id!r} is not JSON ({exc})") from exc
    meta: dict[str, Any] = {USER_FIELD: user, ID_FIELD: record.id,
                            PAYLOAD_JSON_FIELD: payload_json}
    for key, value in record.payload.items():
        if _filterable(value):
            meta[FILTER_PREFIX + key] = value
    return meta


def _filterable(value: Any) -> bool:
    if isinstance(value, _SCALARS):
        return True
    if isinstance(value, list) and value:
        kinds = {type(v) for v in value}
        return len(kinds) == 1 and issubclass(kinds.pop(), _SCALARS)
    return False


def _payload(meta: Any) -> dict[str, Any]:
    return dict(json.loads(meta[PAYLOAD_JSON_FIELD]))


def _records(result: Any, user: str) -> list[VectorRecord]:
    """The records of a ``get``, keeping only ``user``'s (a guard: ids already are)."""
    embeddings = result["embeddings"]
    return [VectorRecord(str(meta[ID_FIELD]), np.asarray(embeddings[i], dtype=np.float32),
                         _payload(meta))
            for i, meta in enumerate(result["metadatas"] or []) if meta.get(USER_FIELD) == user]


def _ranked(result: Any, query: FloatArray, limit: int) -> list[VectorHit]:
    """The ``limit`` entries of a ``get`` most similar to ``query`` by cosine, best first."""
    metadatas = result["metadatas"] or []
    if not metadatas:
        return []
    vectors = np.asarray(result["embeddings"], dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1) * float(np.linalg.norm(query))
    scores = (vectors @ query) / np.where(norms > 0, norms, 1.0)
    best = np.argsort(-scores, kind="stable")[:limit]
    return [VectorHit(str(metadatas[i][ID_FIELD]), float(scores[i]), _payload(metadatas[i]))
            for i in best]


def _user_where(user: str, where: dict[str, Any] | None) -> dict[str, Any]:
    """``user == U`` and one exact match per ``where`` item, as a Chroma ``where``."""
    conditions: list[dict[str, Any]] = [{USER_FIELD: {"$eq": user}}]
    for key, value in (where or {}).items():
        if not isinstance(value, _SCALARS):
            raise InvalidInput(f"store chroma: where[{key!r}] must be a str, int, float or bool"
                               f" for an exact match, not {type(value).__name__}")
        conditions.append({FILTER_PREFIX + key: {"$eq": value}})
    return conditions[0] if len(conditions) == 1 else {"$and": conditions}


def _translate_errors(fn: Callable[[], T]) -> T:
    """Call ``fn``; report server/transport failures as :class:`ComponentError`.

    429, 5xx and connection failures are retryable; other errors are not.
    """
    import httpx
    from chromadb.errors import ChromaError

    try:
        return fn()
    except ChromaError as exc:
        code = exc.code()
        raise ComponentError(f"store chroma: {exc.name()} {code}: {exc}",
                             retryable=code == 429 or code >= 500) from exc
    except (httpx.TransportError, ConnectionError) as exc:
        raise ComponentError(f"store chroma: cannot reach the server ({exc})",
                             retryable=True) from exc
