"""The `qdrant` vector store: users kept apart by collection or by a tenant filter.

Two partitions (``partition:``), chosen by where the data lives unless set:

* ``collection`` (local mode and ``:memory:``): one collection per user, named from a
  hash of the user id. Embedded Qdrant scans filtered searches point by point in Python
  (about 10x slower than its plain vector scan), so a user's search reads only their own
  collection and needs no filter at all; isolation is structural.
* ``payload`` (a server): one shared collection with a tenant-indexed ``user`` field, and
  ``must: user == U`` in every read, count and delete — what Qdrant recommends for
  multitenancy on a server.

Layout of a point (callers never see it):

* id: ``uuid5(NAMESPACE, user + "\\n" + record id)`` — Qdrant accepts only UUIDs and
  integers as ids, and mixing the user into the name keeps two users' records with the
  same id apart (one can never overwrite the other's point);
* payload: ``{"user": U, "id": <record id>, "payload": {<record payload>}}`` — the
  record's own payload is nested, so its keys can never collide with ``user``/``id``;
  ``where`` keys are matched against ``payload.<key>``.

The embedder fingerprint lives in a one-point side collection ``<collection>__meta``.

qdrant-client is synchronous here and every call runs on the component's worker thread
(:meth:`Component.run_blocking`); local mode keeps a SQLite connection that must stay on
the thread that opened it, so the client is opened and closed there too.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np

from omoide.components.store import USER_FIELD, StoreCapabilities, VectorStore
from omoide.errors import ComponentError, InvalidInput
from omoide.types import EmbedderFingerprint, FloatArray, Priority, VectorHit, VectorRecord
from omoide_store_qdrant.config import QdrantStoreConfig

if TYPE_CHECKING:
    from qdrant_client import QdrantClient
    from qdrant_client.http import models as qm

log = logging.getLogger("omoide.store.qdrant")

T = TypeVar("T")

# Fixed namespace so the same (user, id) maps to the same point id in every process.
POINT_ID_NAMESPACE = uuid.UUID("6f6d6f69-6465-5f71-6472-616e745f6964")
ID_FIELD = "id"
PAYLOAD_FIELD = "payload"
META_SUFFIX = "__meta"
USER_COLLECTION_INFIX = "__u_"
FINGERPRINT_POINT = str(uuid.uuid5(POINT_ID_NAMESPACE, "embedder-fingerprint"))
SCROLL_PAGE = 256


def point_id(user: str, record_id: str) -> str:
    """The Qdrant point id of ``user``'s record ``record_id`` (a deterministic UUID)."""
    return str(uuid.uuid5(POINT_ID_NAMESPACE, f"{user}\n{record_id}"))


class QdrantStore(VectorStore):
    """Vectors in Qdrant: embedded local mode (``path``), in memory, or a server (``url``)."""

    name = "qdrant"
    Config = QdrantStoreConfig
    capabilities: ClassVar[StoreCapabilities] = StoreCapabilities(persistent=True, filters=True)

    config: QdrantStoreConfig

    def __init__(self, config: QdrantStoreConfig) -> None:
        super().__init__(config)
        self._client: QdrantClient | None = None
        self._dims: int | None = None

    # -- lifecycle -------------------------------------------------------------------
    async def _start(self) -> None:
        self._client = await self.run_blocking(self._open_client)

    async def _stop(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await self.run_blocking(client.close)

    def _open_client(self) -> QdrantClient:
        from qdrant_client import QdrantClient

        cfg = self.config
        if cfg.path is not None:
            try:
                return QdrantClient(path=cfg.path)
            except RuntimeError as exc:
                if "already accessed" in str(exc):
                    raise ComponentError(
                        f"store qdrant: the local store at {cfg.path} is open in another"
                        " process (or by another store in this one): local mode allows one"
                        " client per path. Stop the other omoide process, or run a Qdrant"
                        " server and use `url:` to share the data."
                    ) from exc
                raise
        if cfg.location is not None:
            return QdrantClient(location=cfg.location)
        api_key = cfg.api_key.get_secret_value() if cfg.api_key is not None else None
        # No version probe at start: it only warns, and a server that is still starting
        # should fail the first real call (retryably), not print at start-up.
        return QdrantClient(url=cfg.url, api_key=api_key, prefer_grpc=cfg.prefer_grpc,
                            timeout=max(1, int(cfg.timeout_s)), check_compatibility=False)

    @property
    def _is_server(self) -> bool:
        return self.config.url is not None

    @property
    def _meta_collection(self) -> str:
        return self.config.collection + META_SUFFIX

    @property
    def _per_user(self) -> bool:
        """One collection per user (see the module docstring)."""
        if self.config.partition == "auto":
            return not self._is_server
        return self.config.partition == "collection"

    def _collection_for(self, user: str) -> str:
        if not self._per_user:
            return self.config.collection
        digest = hashlib.sha256(user.encode("utf-8")).hexdigest()[:24]
        return f"{self.config.collection}{USER_COLLECTION_INFIX}{digest}"

    def _filter(self, user: str, where: dict[str, Any] | None) -> qm.Filter | None:
        """The query filter: ``where`` items, plus ``user == U`` in a shared collection.

        None when there is nothing to filter: embedded Qdrant takes its fast vector scan
        only for unfiltered queries.
        """
        if self._per_user and not where:
            return None
        return _user_filter(user if not self._per_user else None, where)

    async def _run(self, fn: Callable[[QdrantClient], T],
                   priority: Priority = Priority.INTERACTIVE) -> T:
        """Run ``fn(client)`` on the worker thread, turning transport errors into ours."""
        client = self._client
        if client is None:
            raise ComponentError("store qdrant: not started")
        return await self.run_blocking(lambda: _translate_errors(lambda: fn(client)), priority)

    # -- fingerprint -----------------------------------------------------------------
    async def _read_fingerprint(self) -> EmbedderFingerprint | None:
        meta = self._meta_collection

        def read(client: QdrantClient) -> EmbedderFingerprint | None:
            if not client.collection_exists(meta):
                return None
            points = client.retrieve(meta, [FINGERPRINT_POINT], with_payload=True)
            if not points or not points[0].payload:
                return None
            return EmbedderFingerprint.from_json(points[0].payload)

        fingerprint = await self._run(read)
        if fingerprint is not None:
            self._dims = fingerprint.dims  # per-user collections are created with these
        return fingerprint

    async def _write_fingerprint(self, fingerprint: EmbedderFingerprint) -> None:
        from qdrant_client.http import models as qm

        meta = self._meta_collection

        def write(client: QdrantClient) -> None:
            if not client.collection_exists(meta):
                # Qdrant needs a vector per point; the fingerprint point carries a dummy one.
                client.create_collection(meta, vectors_config=qm.VectorParams(
                    size=1, distance=qm.Distance.DOT))
            client.upsert(meta, [qm.PointStruct(id=FINGERPRINT_POINT, vector=[0.0],
                                                payload=fingerprint.to_json())], wait=True)

        await self._run(write)

    # -- collection ------------------------------------------------------------------
    async def _create(self, dims: int) -> None:
        from qdrant_client.http import models as qm

        name, server = self.config.collection, self._is_server
        self._dims = dims
        if self._per_user:
            return  # each user's collection is made on their first write

        def create(client: QdrantClient) -> None:
            if client.collection_exists(name):
                size = _vector_size(client.get_collection(name))
                if size != dims:
                    raise ComponentError(
                        f"store qdrant: collection {name!r} holds {size}-dim vectors but has no"
                        f" embedder fingerprint; the configured embedder makes {dims}-dim"
                        " vectors. Drop it with `omoide memory reembed` or pick another"
                        " `collection:`.")
                return
            client.create_collection(name, vectors_config=qm.VectorParams(
                size=dims, distance=qm.Distance.COSINE))
            if server:
                # The tenant index keeps each user's points together on the server; local
                # mode scans anyway and only warns about payload indexes.
                client.create_payload_index(name, USER_FIELD, qm.KeywordIndexParams(
                    type=qm.KeywordIndexType.KEYWORD, is_tenant=True), wait=True)

        await self._run(create)

    async def _drop(self) -> None:
        base = self.config.collection
        names = (base, self._meta_collection)
        prefix = base + USER_COLLECTION_INFIX

        def drop(client: QdrantClient) -> None:
            for name in names:
                if client.collection_exists(name):
                    client.delete_collection(name)
            for described in client.get_collections().collections:
                if described.name.startswith(prefix):
                    client.delete_collection(described.name)

        await self._run(drop)

    # -- points ----------------------------------------------------------------------
    async def _upsert(self, user: str, records: Sequence[VectorRecord]) -> None:
        from qdrant_client.http import models as qm

        points = [qm.PointStruct(
            id=point_id(user, r.id),
            vector=np.asarray(r.vector, dtype=np.float32).tolist(),
            payload={USER_FIELD: user, ID_FIELD: r.id, PAYLOAD_FIELD: dict(r.payload)})
            for r in records]
        name, dims = self._collection_for(user), self._dims

        def upsert(client: QdrantClient) -> None:
            if self._per_user and not client.collection_exists(name):
                if dims is None:
                    raise ComponentError("store qdrant: open() the store before writing")
                client.create_collection(name, vectors_config=qm.VectorParams(
                    size=dims, distance=qm.Distance.COSINE))
            client.upsert(name, points, wait=True)

        await self._run(upsert, Priority.BATCH)

    async def _search(self, user: str, vector: FloatArray, limit: int,
                      where: dict[str, Any] | None) -> list[VectorHit]:
        query_filter = self._filter(user, where)
        query = np.asarray(vector, dtype=np.float32).tolist()
        name = self._collection_for(user)

        def search(client: QdrantClient) -> list[Any]:
            if self._per_user and not client.collection_exists(name):
                return []
            return list(client.query_points(name, query=query, query_filter=query_filter,
                                            limit=limit, with_payload=True).points)

        points = await self._run(search)
        return [VectorHit(p.payload[ID_FIELD], float(p.score), dict(p.payload[PAYLOAD_FIELD]))
                for p in points if p.payload is not None]

    async def _get(self, user: str, ids: Sequence[str]) -> list[VectorRecord]:
        from qdrant_client.http import models as qm

        wanted = list(dict.fromkeys(ids))
        query_filter = _user_filter(None if self._per_user else user, None)
        query_filter.must.append(qm.HasIdCondition(  # type: ignore[union-attr]
            has_id=[point_id(user, i) for i in wanted]))
        found = {r.id: r for r in await self._scroll_filtered(user, query_filter)}
        return [found[i] for i in wanted if i in found]

    async def _delete(self, user: str, ids: Sequence[str]) -> None:
        from qdrant_client.http import models as qm

        selector = _user_filter(None if self._per_user else user, None)
        selector.must.append(qm.HasIdCondition(  # type: ignore[union-attr]
            has_id=[point_id(user, i) for i in ids]))
        name = self._collection_for(user)

        def delete(client: QdrantClient) -> None:
            if self._per_user and not client.collection_exists(name):
                return
            client.delete(name, qm.FilterSelector(filter=selector), wait=True)

        await self._run(delete)

    async def _scroll(self, user: str) -> list[VectorRecord]:
        return await self._scroll_filtered(user, self._filter(user, None), Priority.BATCH)

    async def _count(self, user: str) -> int:
        query_filter = self._filter(user, None)
        name = self._collection_for(user)

        def count(client: QdrantClient) -> int:
            if self._per_user and not client.collection_exists(name):
                return 0
            return int(client.count(name, count_filter=query_filter, exact=True).count)

        return await self._run(count)

    async def _scroll_filtered(self, user: str, query_filter: qm.Filter | None,
                               priority: Priority = Priority.INTERACTIVE) -> list[VectorRecord]:
        name = self._collection_for(user)

        def scroll_all(client: QdrantClient) -> list[VectorRecord]:
            out: list[VectorRecord] = []
            if self._per_user and not client.collection_exists(name):
                return out
            offset: Any = None
            while True:
                points, offset = client.scroll(name, scroll_filter=query_filter,
                                               limit=SCROLL_PAGE, offset=offset,
                                               with_payload=True, with_vectors=True)
                out.extend(VectorRecord(p.payload[ID_FIELD],
                                        np.asarray(p.vector, dtype=np.float32),
                                        dict(p.payload[PAYLOAD_FIELD]))
                           for p in points if p.payload is not None)
                if offset is None:
                    return out

        return await self._run(scroll_all, priority)


def _user_filter(user: str | None, where: dict[str, Any] | None) -> qm.Filter:
    """``must: user == U`` (unless ``user`` is None) plus an exact match per ``where`` item."""
    from qdrant_client.http import models as qm

    must: list[Any] = ([] if user is None else
                       [qm.FieldCondition(key=USER_FIELD, match=qm.MatchValue(value=user))])
    for key, value in (where or {}).items():
        field = f"{PAYLOAD_FIELD}.{key}"
        if value is None:
            must.append(qm.IsNullCondition(is_null=qm.PayloadField(key=field)))
        elif isinstance(value, bool | int | str):
            must.append(qm.FieldCondition(key=field, match=qm.MatchValue(value=value)))
        elif isinstance(value, float):
            # MatchValue takes no floats; a closed range of one value is an exact match.
            must.append(qm.FieldCondition(key=field, range=qm.Range(gte=value, lte=value)))
        else:
            raise InvalidInput(f"store qdrant: where[{key!r}] must be a str, int, float, bool"
                               f" or None for an exact match, not {type(value).__name__}")
    return qm.Filter(must=must)


def _vector_size(info: Any) -> int | None:
    vectors = info.config.params.vectors
    return getattr(vectors, "size", None)


def _translate_errors(fn: Callable[[], T]) -> T:
    """Call ``fn``; report server/transport failures as :class:`ComponentError`.

    429, 5xx and connection failures are retryable; other HTTP errors are not.
    """
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    try:
        return fn()
    except UnexpectedResponse as exc:
        status = exc.status_code or 0
        raise ComponentError(f"store qdrant: server answered {exc}",
                             retryable=status == 429 or status >= 500) from exc
    except ResponseHandlingException as exc:
        raise ComponentError(f"store qdrant: cannot reach the server ({exc.source})",
                             retryable=True) from exc
    except Exception as exc:
        if type(exc).__module__.startswith("grpc"):
            raise ComponentError(f"store qdrant: gRPC call failed ({exc})",
                                 retryable=True) from exc
        raise
