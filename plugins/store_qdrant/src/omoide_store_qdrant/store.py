"""The `qdrant` vector store: users kept apart by their own store, collection or a filter.

Three layouts, chosen by where the data lives (``partition:`` can override):

* a local directory (``path``): one small local-mode store per person, opened on
  their first read or write and kept in a bounded pool (:mod:`.shards`); nothing is
  read at start, and a person's search scans only their own points with no filter.
  A manifest beside the stores records what each holds (:mod:`.shard_manifest`): a
  person's store missing or damaged is found at start (:meth:`QdrantStore.check_people`)
  or when it is opened, and that person's calls are refused until
  ``omoide memory repair`` rebuilds it.
  A directory in the earlier layout (every person's collection in one local-mode
  store) is moved into this one at start.
* ``:memory:`` (tests, demos): one collection per person in one in-process client.
* a server (``url``): one shared collection with a tenant-indexed ``user`` field and
  ``must: user == U`` in every read, count and delete — what Qdrant recommends for
  multitenancy, and the way past one machine (a cluster shards by that tenant key).

``partition: payload`` puts everyone in one shared, filtered collection in any place
(for a local directory this is measured to be slow: see the README).

Layout of a point (callers never see it):

* id: ``uuid5(NAMESPACE, user + "\\n" + record id)`` — Qdrant accepts only UUIDs and
  integers as ids, and mixing the user into the name keeps two users' records with the
  same id apart (one can never overwrite the other's point);
* payload: ``{"user": U, "id": <record id>, "payload": {<record payload>}}`` — the
  record's own payload is nested, so its keys can never collide with ``user``/``id``;
  ``where`` keys are matched against ``payload.<key>``.

The embedder fingerprint lives in ``fingerprint.json`` beside the per-person stores,
or in a one-point side collection ``<collection>__meta`` in the other layouts.

qdrant-client is synchronous here and every call runs on the component's worker thread
(:meth:`Component.run_blocking`); local mode keeps a SQLite connection that must stay on
the thread that opened it, so clients are opened and closed there too.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np

from omoide.api import (
    USER_FIELD,
    ComponentError,
    EmbedderFingerprint,
    FloatArray,
    IdSnapshots,
    InvalidInput,
    PersonDamage,
    Priority,
    RebuildReport,
    ScrollPage,
    StoreCapabilities,
    VectorHit,
    VectorRecord,
    VectorStore,
)
from omoide_store_qdrant.batched_writes import one_transaction
from omoide_store_qdrant.config import QdrantStoreConfig
from omoide_store_qdrant.shards import (
    META_SUFFIX,
    USER_COLLECTION_INFIX,
    ShardDamaged,
    ShardPool,
    migrate_single_directory,
    user_digest,
)

if TYPE_CHECKING:
    from qdrant_client import QdrantClient
    from qdrant_client.client_base import QdrantBase
    from qdrant_client.http import models as qm

log = logging.getLogger("omoide.store.qdrant")

T = TypeVar("T")

# Fixed namespace so the same (user, id) maps to the same point id in every process.
POINT_ID_NAMESPACE = uuid.UUID("6f6d6f69-6465-5f71-6472-616e745f6964")
ID_FIELD = "id"
PAYLOAD_FIELD = "payload"
FINGERPRINT_POINT = str(uuid.uuid5(POINT_ID_NAMESPACE, "embedder-fingerprint"))


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
        self._shards: ShardPool | None = None
        self._dims: int | None = None
        self._snapshots = IdSnapshots()

    # -- lifecycle -------------------------------------------------------------------
    async def _start(self) -> None:
        if self._sharded:
            self._shards = await self.run_blocking(self._open_shards)
        else:
            self._client = await self.run_blocking(self._open_client)

    async def _stop(self) -> None:
        client, self._client = self._client, None
        shards, self._shards = self._shards, None
        if client is not None:
            await self.run_blocking(client.close)
        if shards is not None:
            await self.run_blocking(shards.close)

    def _open_shards(self) -> ShardPool:
        assert self.config.path is not None
        pool = ShardPool(Path(self.config.path), self.config.collection,
                         self.config.max_open_people)
        pool.lock()
        try:
            migrate_single_directory(pool)
        except Exception:
            pool.close()
            raise
        return pool

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
    def shared(self) -> bool:
        """Only a server is written by other processes; local mode locks its directory."""
        return self._is_server

    @property
    def _is_server(self) -> bool:
        return self.config.url is not None

    @property
    def _partition(self) -> str:
        if self.config.partition != "auto":
            return self.config.partition
        return "payload" if self._is_server else "collection"

    @property
    def _sharded(self) -> bool:
        """One local-mode store per person (a local directory, not partitioned by payload)."""
        return self.config.path is not None and self._partition == "collection"

    @property
    def _per_user(self) -> bool:
        """Nobody else's points in the collection a user's calls go to (no user filter)."""
        return self._partition == "collection"

    @property
    def _meta_collection(self) -> str:
        return self.config.collection + META_SUFFIX

    def _collection_for(self, user: str) -> str:
        if self._sharded or not self._per_user:
            return self.config.collection
        return f"{self.config.collection}{USER_COLLECTION_INFIX}{user_digest(user)}"

    def _filter(self, user: str, where: dict[str, Any] | None) -> qm.Filter | None:
        """The query filter: ``where`` items, plus ``user == U`` in a shared collection.

        None when there is nothing to filter: embedded Qdrant takes its fast vector scan
        only for unfiltered queries.
        """
        if self._per_user and not where:
            return None
        return _user_filter(None if self._per_user else user, where)

    def _target(self, client: QdrantClient | None, user: str,
                create: bool) -> tuple[QdrantBase, str] | None:
        """Where ``user``'s points live: a client and a collection name, or ``None`` when
        they have nothing stored and ``create`` is False. Runs on the worker thread."""
        name = self._collection_for(user)
        if self._shards is not None:
            if create and self._dims is None:
                raise ComponentError("store qdrant: open() the store before writing")
            shard = self._shards.client(user, self._dims if create else None)
            return None if shard is None else (shard, name)
        if client is None:
            raise ComponentError("store qdrant: not started")
        if self._per_user and not client.collection_exists(name):
            if not create:
                return None
            if self._dims is None:
                raise ComponentError("store qdrant: open() the store before writing")
            from qdrant_client.http import models as qm

            client.create_collection(name, vectors_config=qm.VectorParams(
                size=self._dims, distance=qm.Distance.COSINE))
        return client, name

    async def _run(self, fn: Callable[[QdrantClient | None], T],
                   priority: Priority | None = None) -> T:
        """Run ``fn(client)`` on the worker thread, turning transport errors into ours.

        ``client`` is the single client (``None`` with per-person stores)."""
        if self._client is None and self._shards is None:
            raise ComponentError("store qdrant: not started")
        client = self._client
        try:
            return await self.run_blocking(lambda: _translate_errors(lambda: fn(client)),
                                           priority)
        except ShardDamaged as exc:
            log.error("store qdrant: the memories of %s are unavailable: %s",
                      exc.damage.user, exc.damage)
            raise self.person_damaged(exc.damage) from exc

    def _recorded(self, user: str, added: Sequence[str], removed: Sequence[str],
                  fn: Callable[[], T]) -> T:
        """Run the write ``fn``, recorded in the manifest when there is one."""
        if self._shards is None:
            return fn()
        return self._shards.write(user, added, removed, fn)

    async def _on_user(self, user: str, create: bool, fn: Callable[[QdrantBase, str], T],
                       absent: T, priority: Priority | None = None) -> T:
        """Run ``fn(client, collection)`` where ``user``'s points live, or return
        ``absent`` when there are none (and ``create`` is False)."""
        def call(client: QdrantClient | None) -> T:
            target = self._target(client, user, create)
            return absent if target is None else fn(*target)

        return await self._run(call, priority)

    # -- fingerprint -----------------------------------------------------------------
    async def _read_fingerprint(self) -> EmbedderFingerprint | None:
        meta = self._meta_collection

        def read(client: QdrantClient | None) -> EmbedderFingerprint | None:
            if self._shards is not None:
                return self._shards.read_fingerprint()
            assert client is not None
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

        def write(client: QdrantClient | None) -> None:
            if self._shards is not None:
                self._shards.write_fingerprint(fingerprint)
                return
            assert client is not None
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
            return  # each user's store or collection is made on their first write

        def create(client: QdrantClient | None) -> None:
            assert client is not None
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

        def drop(client: QdrantClient | None) -> None:
            self._snapshots.clear()
            if self._shards is not None:
                self._shards.drop()
                return
            assert client is not None
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

        def upsert(client: QdrantBase, name: str) -> None:
            self._snapshots.forget((name, user))
            def write() -> None:
                with one_transaction(client, name):  # one commit, not one per point
                    client.upsert(name, points, wait=True)
            self._recorded(user, [str(p.id) for p in points], (), write)

        await self._on_user(user, True, upsert, None, Priority.BATCH)

    async def _search(self, user: str, vector: FloatArray, limit: int,
                      where: dict[str, Any] | None) -> list[VectorHit]:
        query_filter = self._filter(user, where)
        query = np.asarray(vector, dtype=np.float32).tolist()

        def search(client: QdrantBase, name: str) -> list[Any]:
            return list(client.query_points(name, query=query, query_filter=query_filter,
                                            limit=limit, with_payload=True).points)

        none: list[Any] = []
        points = await self._on_user(user, False, search, none)
        return [VectorHit(p.payload[ID_FIELD], float(p.score), dict(p.payload[PAYLOAD_FIELD]))
                for p in points if p.payload is not None]

    async def _get(self, user: str, ids: Sequence[str]) -> list[VectorRecord]:
        from qdrant_client.http import models as qm

        wanted = list(dict.fromkeys(ids))
        point_ids = [point_id(user, i) for i in wanted]
        per_user = self._per_user

        def get(client: QdrantBase, name: str) -> list[VectorRecord]:
            if per_user:
                # Nobody else's points are here, and a lookup by id reads only those
                # points (a filter would be a scan of the whole collection in local mode).
                found = client.retrieve(name, point_ids, with_payload=True, with_vectors=True)
            else:
                query_filter = _user_filter(user, None)
                query_filter.must.append(qm.HasIdCondition(  # type: ignore[union-attr]
                    has_id=point_ids))
                found, _ = client.scroll(name, scroll_filter=query_filter,
                                         limit=len(point_ids) + 1, with_payload=True,
                                         with_vectors=True)
            return [_record(p) for p in found if p.payload is not None]

        none: list[VectorRecord] = []
        found = {r.id: r for r in await self._on_user(user, False, get, none)}
        return [found[i] for i in wanted if i in found]

    async def _delete(self, user: str, ids: Sequence[str]) -> None:
        from qdrant_client.http import models as qm

        point_ids = [point_id(user, i) for i in ids]
        selector: Any
        if self._per_user:
            selector = qm.PointIdsList(points=list(point_ids))
        else:
            selector_filter = _user_filter(user, None)
            selector_filter.must.append(qm.HasIdCondition(  # type: ignore[union-attr]
                has_id=point_ids))
            selector = qm.FilterSelector(filter=selector_filter)

        def delete(client: QdrantBase, name: str) -> None:
            self._snapshots.forget((name, user))
            self._recorded(user, (), point_ids,
                           lambda: client.delete(name, selector, wait=True))

        await self._on_user(user, False, delete, None)

    async def _count(self, user: str) -> int:
        query_filter = self._filter(user, None)

        def count(client: QdrantBase, name: str) -> int:
            return int(client.count(name, count_filter=query_filter, exact=True).count)

        return await self._on_user(user, False, count, 0)

    async def _scroll_page(self, user: str, cursor: str | None, limit: int) -> ScrollPage:
        query_filter = self._filter(user, None)
        server = self._is_server

        def page(client: QdrantBase, name: str) -> ScrollPage:
            if server:
                # A server resumes a scroll from the offset id through its own index.
                points, following = client.scroll(
                    name, scroll_filter=query_filter, limit=limit, offset=cursor,
                    with_payload=True, with_vectors=True)
                return ScrollPage([_record(p) for p in points if p.payload is not None],
                                  None if following is None else str(following))

            # Local mode sorts every point on every scroll page: list the ids once per
            # scan and fetch each page by id (see omoide.components.store_paging).
            def list_ids() -> list[str]:
                total = client.count(name, count_filter=query_filter, exact=True).count
                points, _ = client.scroll(name, scroll_filter=query_filter, limit=total + 1,
                                          with_payload=False, with_vectors=False)
                return [str(p.id) for p in points]

            ids, following = self._snapshots.page((name, user), cursor, limit, list_ids)
            points = client.retrieve(name, ids, with_payload=True, with_vectors=True)
            return ScrollPage([_record(p) for p in points if p.payload is not None], following)

        return await self._on_user(user, False, page, ScrollPage([], None), Priority.BATCH)

    # -- people's stores: checks and rebuilds --------------------------------------------
    async def _check_people(self) -> list[PersonDamage]:
        shards = self._shards
        if shards is None:
            return []
        return await self.run_blocking(shards.missing_or_damaged)

    async def _rebuild_person(self, user: str, records: Sequence[VectorRecord],
                              ) -> RebuildReport:
        """Set ``user``'s store aside, keep what can still be read of it, and write the
        given records the manifest recorded (all of them when it has no record)."""
        shards = self._shards
        if shards is None:
            return await super()._rebuild_person(user, records)
        if self._dims is None:
            raise ComponentError("store qdrant: open() the store before rebuilding")
        return await self.run_blocking(lambda: self._rebuild_shard(shards, user, records),
                                       Priority.BATCH)

    def _rebuild_shard(self, shards: ShardPool, user: str,
                       records: Sequence[VectorRecord]) -> RebuildReport:
        from qdrant_client.http import models as qm

        recorded = shards.recorded_ids(user)
        moved = shards.set_aside(user)
        kept = {str(p.id): p for p in (shards.readable_points(moved) if moved else [])
                if p.payload is not None and (recorded is None or str(p.id) in recorded)}
        fresh: dict[str, qm.PointStruct] = {}
        left_out = 0
        for r in records:
            pid = point_id(user, r.id)
            if recorded is not None and pid not in recorded:
                left_out += 1
            elif pid not in kept:
                fresh[pid] = qm.PointStruct(
                    id=pid, vector=np.asarray(r.vector, dtype=np.float32).tolist(),
                    payload={USER_FIELD: user, ID_FIELD: r.id, PAYLOAD_FIELD: dict(r.payload)})
        points = [qm.PointStruct(id=pid, vector=p.vector, payload=p.payload)
                  for pid, p in kept.items()] + list(fresh.values())
        client = shards.client_for_digest(user_digest(user), self._dims)
        assert client is not None
        for i in range(0, len(points), 256):
            client.upsert(self.config.collection, points[i:i + 256], wait=True)
        written = [str(p.id) for p in points]
        shards.record_rebuilt(user, written)
        self._snapshots.clear()
        missing = len(recorded - set(written)) if recorded is not None else 0
        return RebuildReport(restored=len(points), not_restored=missing, left_out=left_out,
                             set_aside=str(moved) if moved else None)

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        if self._shards is not None:
            info["people_open"] = self._shards.open_count
        return info


def _record(point: Any) -> VectorRecord:
    return VectorRecord(point.payload[ID_FIELD], np.asarray(point.vector, dtype=np.float32),
                        dict(point.payload[PAYLOAD_FIELD]))


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
