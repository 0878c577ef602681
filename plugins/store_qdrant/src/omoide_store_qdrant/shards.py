"""Embedded Qdrant with one small local store per person, opened on demand.

Qdrant's local mode reads every collection of a directory into memory when the
directory is opened, and keeps a file open per collection. Measured on a 2-core
machine (see the plugin README): a collection per person in one directory made
1,000 people cost 5.2 s and +1 GB at start and 1,022 open files; one shared
collection avoids the files but still loads every point at start, and its filtered
search is a Python scan about 10x slower than the plain one.

So each person gets a local-mode store of their own (a directory holding one
collection named like the configured one), and a :class:`ShardPool` opens one the
first time that person is read or written and keeps at most ``max_open`` open,
closing the least recently used. Nothing is read at start. A person's store is
opened with qdrant-client's local engine (``QdrantLocal``, what ``QdrantClient(path=)``
wraps) directly: the client wrapper builds a schema inspector and probes for
fastembed on every construction, which made opening a store of 50 memories take 26 ms
against 3.5 ms for the engine alone (and kept megabytes per open store).

Layout under the configured ``path``::

    omoide-shards.lock                     held for the life of the store (one process)
    shards/<collection>/fingerprint.json   the embedder fingerprint
    shards/<collection>/manifest.sqlite3   what each person's store holds (:mod:`.shard_manifest`)
    shards/<collection>/<dd>/<digest>/     one person's local-mode Qdrant
    shards/<collection>/set-aside/         damaged stores a rebuild moved out of the way

``digest`` is the first 24 hex digits of SHA-256 of the person's id (the same name
the per-person collections of the earlier layout carried, which is what
:func:`migrate_single_directory` relies on); ``dd`` its first two, so no directory
holds more than a few hundred entries.

A person's store is checked against the manifest when it is opened; a store that is
missing, cannot be opened or does not hold what the manifest recorded raises
:class:`ShardDamaged` (the store then refuses that person's calls until it is rebuilt).

Everything here runs on the store's worker thread: local mode's SQLite connections
must stay on the thread that opened them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from omoide.api import ComponentError, EmbedderFingerprint, PersonDamage, open_private
from omoide_store_qdrant.shard_manifest import MANIFEST_FILE, ShardManifest, file_problem

if TYPE_CHECKING:
    from qdrant_client import QdrantClient
    from qdrant_client.local.qdrant_local import QdrantLocal

log = logging.getLogger("omoide.store.qdrant")

LOCK_FILE = "omoide-shards.lock"
SHARDS_DIR = "shards"
FINGERPRINT_FILE = "fingerprint.json"
USER_COLLECTION_INFIX = "__u_"
META_SUFFIX = "__meta"
SET_ASIDE_DIR = "set-aside"

T = TypeVar("T")


class ShardDamaged(Exception):
    """A person's store is missing, cannot be opened or does not hold what the manifest
    recorded (``damage`` says which and what)."""

    def __init__(self, damage: PersonDamage) -> None:
        super().__init__(str(damage))
        self.damage = damage


def user_digest(user: str) -> str:
    """The name of ``user``'s store (and of their collection in the earlier layout)."""
    return hashlib.sha256(user.encode("utf-8")).hexdigest()[:24]


class ShardPool:
    """Per-person local-mode Qdrant stores under ``root``, at most ``max_open`` open."""

    def __init__(self, root: Path, collection: str, max_open: int) -> None:
        self.root = Path(root)
        self.collection = collection
        self.max_open = max_open
        self.base = self.root / SHARDS_DIR / collection
        self._open: OrderedDict[str, QdrantLocal] = OrderedDict()
        self._lock: TextIO | None = None
        self.manifest = ShardManifest(self.base / MANIFEST_FILE)
        self.opened_total = 0
        """How many times a person's store was opened (a measure of pool churn)."""

    # -- lifecycle -------------------------------------------------------------------
    def lock(self) -> None:
        """Take the directory for this process (local mode allows one process per path)."""
        import portalocker

        handle = open_private(self.root / LOCK_FILE, "a+")
        try:
            portalocker.lock(handle, portalocker.LockFlags.EXCLUSIVE
                             | portalocker.LockFlags.NON_BLOCKING)
        except portalocker.exceptions.LockException as exc:
            handle.close()
            raise ComponentError(
                f"store qdrant: the local store at {self.root} is open in another process (or"
                " by another store in this one): local mode allows one client per path. Stop"
                " the other omoide process, or run a Qdrant server and use `url:` to share"
                " the data.") from exc
        self._lock = handle

    def close(self) -> None:
        """Close every open person's store and release the directory."""
        self.close_all()
        if self._lock is not None:
            import portalocker

            portalocker.unlock(self._lock)
            self._lock.close()
            self._lock = None

    def close_all(self) -> None:
        while self._open:
            _, client = self._open.popitem(last=False)
            client.close()
        self.manifest.close()

    # -- people's stores --------------------------------------------------------------
    def directory(self, digest: str) -> Path:
        return self.base / digest[:2] / digest

    def client(self, user: str, create_dims: int | None) -> QdrantLocal | None:
        """``user``'s store, opened (and checked against the manifest) if needed; ``None``
        if it does not exist and ``create_dims`` is None (a read of someone who has
        nothing stored). Raises :class:`ShardDamaged`."""
        return self.client_for_digest(user_digest(user), create_dims, user)

    def client_for_digest(self, digest: str, create_dims: int | None,
                          user: str | None = None) -> QdrantLocal | None:
        client = self._open.get(digest)
        if client is not None:
            self._open.move_to_end(digest)
            return client
        where = self.directory(digest)
        record = self.manifest.record(digest) if user is not None else None
        if record is not None and record.points > 0 and not where.is_dir():
            raise ShardDamaged(PersonDamage(record.user, str(where),
                                            "the store directory is missing", record.points))
        if not where.is_dir() and create_dims is None:
            return None
        client = self._open_local(where, record.user if record else user, record)
        if not client.collection_exists(self.collection):
            if record is not None and record.points > 0:
                client.close()
                raise ShardDamaged(PersonDamage(
                    record.user, str(where), "the store no longer holds its collection",
                    record.points))
            if create_dims is None:
                client.close()
                return None
            from qdrant_client.http import models as qm

            client.create_collection(self.collection, vectors_config=qm.VectorParams(
                size=create_dims, distance=qm.Distance.COSINE))
        if user is not None:
            self._check(client, digest, user, record, where)
        self.opened_total += 1
        self._open[digest] = client
        while len(self._open) > self.max_open:
            _, oldest = self._open.popitem(last=False)
            oldest.close()
        return client

    def _open_local(self, where: Path, user: str | None, record: Any) -> QdrantLocal:
        from qdrant_client.local.qdrant_local import QdrantLocal

        try:
            begin_store_files(where)
            return QdrantLocal(str(where))
        except Exception as exc:
            if user is None:
                raise
            problem = file_problem(where, self.collection)
            raise ShardDamaged(PersonDamage(
                user, str(where), problem or f"it cannot be opened ({type(exc).__name__}:"
                f" {exc})", record.points if record else 0)) from exc

    def _check(self, client: QdrantLocal, digest: str, user: str, record: Any,
               where: Path) -> None:
        """Compare a just-opened store with the manifest (adopting one it has no record
        of); closes it and raises :class:`ShardDamaged` when they disagree."""
        ids = point_ids(client, self.collection)
        if record is None:
            self.manifest.reset(digest, user, ids)
            return
        problem = self.manifest.verify(record, ids)
        if problem is not None:
            client.close()
            raise ShardDamaged(PersonDamage(record.user, str(where), problem, record.points))

    # -- the manifest --------------------------------------------------------------------
    def write(self, user: str, added: Sequence[str], removed: Sequence[str],
              fn: Callable[[], T]) -> T:
        """Run ``fn`` (a write to ``user``'s open store), recorded in the manifest."""
        digest = user_digest(user)
        self.manifest.begin(digest, user, added, removed)
        result = fn()
        self.manifest.done(digest)
        return result

    def missing_or_damaged(self) -> list[PersonDamage]:
        """Every person the manifest records memories for whose store's files are
        missing or damaged (a stat and a header read each; nothing is opened)."""
        found = []
        for record in self.manifest.records():
            if max(record.points, record.pending_points or 0) == 0:
                continue
            where = self.directory(record.digest)
            problem = file_problem(where, self.collection)
            if problem is not None:
                found.append(PersonDamage(record.user, str(where), problem, record.points))
        return found

    def recorded_ids(self, user: str) -> set[str] | None:
        """The point ids the manifest records for ``user`` (None: no record)."""
        digest = user_digest(user)
        if self.manifest.record(digest) is None:
            return None
        return self.manifest.point_ids(digest)

    def set_aside(self, user: str) -> Path | None:
        """Close ``user``'s store and move its directory out of the way (to
        ``set-aside/``); returns where it went, None when there was none."""
        digest = user_digest(user)
        client = self._open.pop(digest, None)
        if client is not None:
            client.close()
        where = self.directory(digest)
        if not where.exists():
            return None
        stamp = datetime.now().strftime("%Y%m%dT%H%M%S%f")
        moved = self.base / SET_ASIDE_DIR / f"{digest}-{stamp}"
        moved.parent.mkdir(parents=True, exist_ok=True)
        os.replace(where, moved)
        log.warning("store qdrant: the store of %s set aside as %s", user, moved)
        return moved

    def readable_points(self, directory: Path) -> list[Any]:
        """Every point still readable in a store set aside (none when it cannot be opened)."""
        from qdrant_client.local.qdrant_local import QdrantLocal

        try:
            old = QdrantLocal(str(directory))
        except Exception as exc:  # noqa: BLE001 - damaged: nothing to keep from it
            log.warning("store qdrant: nothing can be read from %s: %s", directory, exc)
            return []
        try:
            if not old.collection_exists(self.collection):
                return []
            total = old.count(self.collection, exact=True).count
            records, _ = old.scroll(self.collection, limit=total + 1, with_payload=True,
                                    with_vectors=True)
            return list(records)
        except Exception as exc:  # noqa: BLE001 - damaged part-way: keep nothing of it
            log.warning("store qdrant: %s cannot be read whole: %s", directory, exc)
            return []
        finally:
            old.close()

    def record_rebuilt(self, user: str, ids: Sequence[str]) -> None:
        self.manifest.reset(user_digest(user), user, ids)

    @property
    def open_count(self) -> int:
        return len(self._open)

    def digests(self) -> Iterator[str]:
        """Every person's store on disk (by digest)."""
        if not self.base.is_dir():
            return
        for bucket in sorted(self.base.iterdir()):
            if bucket.is_dir() and len(bucket.name) == 2:
                for person in sorted(bucket.iterdir()):
                    if person.is_dir():
                        yield person.name

    def drop(self) -> None:
        """Delete every person's store, the manifest and the fingerprint."""
        self.close_all()
        if self.base.exists():
            shutil.rmtree(self.base)

    # -- fingerprint -----------------------------------------------------------------
    def read_fingerprint(self) -> EmbedderFingerprint | None:
        path = self.base / FINGERPRINT_FILE
        if not path.exists():
            return None
        return EmbedderFingerprint.from_json(json.loads(path.read_text(encoding="utf-8")))

    def write_fingerprint(self, fingerprint: EmbedderFingerprint) -> None:
        path = self.base / FINGERPRINT_FILE
        tmp = path.with_suffix(".tmp")
        with open_private(tmp, "w") as f:
            f.write(json.dumps(fingerprint.to_json()))
        os.replace(tmp, path)  # never a half-written fingerprint


def begin_store_files(where: Path) -> None:
    """Give a store that holds no collection yet a complete, empty ``meta.json``.

    The local engine makes a new store's ``meta.json`` by opening it for writing and then
    writing it, so a process killed in between leaves an empty file that no later open can
    read. Written here first (a temporary file renamed into place), a new store's
    ``meta.json`` is always whole; one left empty or missing by such a kill, in a store
    that never got as far as a collection (so holds no points), is made whole the same
    way. A store that has a collection is never touched: its ``meta.json`` is the
    engine's, and a damaged one is reported by the checks."""
    meta = where / "meta.json"
    if (where / "collection").exists():
        return
    try:
        if meta.read_text(encoding="utf-8").strip():
            return
    except FileNotFoundError:
        pass
    where.mkdir(parents=True, exist_ok=True)
    partial = where / "meta.json.tmp"
    with partial.open("w", encoding="utf-8") as f:
        f.write(json.dumps({"collections": {}, "aliases": {}}))
        f.flush()
        os.fsync(f.fileno())
    os.replace(partial, meta)


def point_ids(client: QdrantLocal, collection: str) -> list[str]:
    """The ids of every point in ``collection`` of an open local store (read from the
    local engine's id map when it has one: local mode sorts every point on a scroll)."""
    local = getattr(client, "collections", {}).get(collection)
    ids = getattr(local, "ids", None)
    deleted = getattr(local, "deleted", None)
    if isinstance(ids, dict) and deleted is not None:
        return [str(uuid.UUID(str(pid))) for pid, i in ids.items() if not deleted[i]]
    total = client.count(collection, exact=True).count
    points, _ = client.scroll(collection, limit=total + 1, with_payload=False,
                              with_vectors=False)
    return [str(uuid.UUID(str(p.id))) for p in points]


@dataclass(frozen=True)
class Migration:
    """What :func:`migrate_single_directory` moved."""

    people: int
    points: int
    fingerprint: bool


def migrate_single_directory(pool: ShardPool) -> Migration | None:
    """Move the earlier layout (every person's collection in the one local-mode directory
    at ``pool.root``) into per-person stores; ``None`` when there is nothing to move.

    Safe to interrupt: points are copied under their own ids (a second run rewrites the
    same points), and an old collection is deleted only after its person's store holds
    every one of its points. A shared collection (``partition: payload`` in that
    directory) is split by each point's ``user``. Other collections are left alone.
    """
    meta = pool.root / "meta.json"
    if not meta.exists():
        return None
    try:
        names = list(json.loads(meta.read_text(encoding="utf-8")).get("collections", {}))
    except (OSError, ValueError) as exc:
        raise ComponentError(f"store qdrant: cannot read {meta} to migrate it: {exc}") from exc
    base, prefix = pool.collection, pool.collection + USER_COLLECTION_INFIX
    ours = [n for n in names if n in (base, base + META_SUFFIX) or n.startswith(prefix)]
    if not ours:
        return None
    from qdrant_client import QdrantClient

    log.warning("store qdrant: moving %d collections of %s into per-person stores (one-time)",
                len(ours), pool.root)
    old = QdrantClient(path=str(pool.root))
    people = points = 0
    wrote_fingerprint = False
    try:
        if base + META_SUFFIX in ours:
            wrote_fingerprint = _move_fingerprint(old, base + META_SUFFIX, pool)
        for name in ours:
            if name == base + META_SUFFIX:
                continue
            groups = _points_by_digest(old, name, None if name == base else name[len(prefix):])
            size = _vector_size(old, name)
            for digest, group in groups.items():
                _copy_points(pool, digest, size, group)
                people += 1
                points += len(group)
            old.delete_collection(name)
        if base + META_SUFFIX in ours:
            old.delete_collection(base + META_SUFFIX)
        left = list(old.get_collections().collections)
    finally:
        old.close()
    if not left:
        for leftover in ("meta.json", ".lock"):
            (pool.root / leftover).unlink(missing_ok=True)
        collection_dir = pool.root / "collection"
        if collection_dir.is_dir() and not any(collection_dir.iterdir()):
            collection_dir.rmdir()
    log.warning("store qdrant: moved %d points of %d people into per-person stores",
                points, people)
    return Migration(people, points, wrote_fingerprint)


def _move_fingerprint(old: QdrantClient, name: str, pool: ShardPool) -> bool:
    records, _ = old.scroll(name, limit=10, with_payload=True)
    for record in records:
        if record.payload and "model" in record.payload:
            pool.write_fingerprint(EmbedderFingerprint.from_json(record.payload))
            return True
    return False


def _points_by_digest(old: QdrantClient, name: str, digest: str | None,
                      ) -> dict[str, list[Any]]:
    """Every point of collection ``name``, grouped by the store it belongs in."""
    total = old.count(name, exact=True).count
    # One scroll for the whole collection: local mode sorts every point on every page.
    records, _ = old.scroll(name, limit=total + 1, with_payload=True, with_vectors=True)
    groups: dict[str, list[Any]] = {}
    for record in records:
        if digest is not None:
            key = digest
        else:
            user = (record.payload or {}).get("user")
            if not isinstance(user, str):
                raise ComponentError(f"store qdrant: point {record.id} of {name!r} has no user;"
                                     " cannot tell whose store it belongs in")
            key = user_digest(user)
        groups.setdefault(key, []).append(record)
    return groups


def _copy_points(pool: ShardPool, digest: str, size: int, records: list[Any]) -> None:
    from qdrant_client.http import models as qm

    client = pool.client_for_digest(digest, create_dims=size)
    assert client is not None
    for i in range(0, len(records), 256):
        client.upsert(pool.collection, [qm.PointStruct(id=r.id, vector=r.vector,
                                                       payload=r.payload)
                                        for r in records[i:i + 256]], wait=True)
    have = {str(p.id) for p in client.retrieve(pool.collection, [r.id for r in records])}
    missing = [r.id for r in records if str(r.id) not in have]
    if missing:
        raise ComponentError(f"store qdrant: migration lost {len(missing)} points of store"
                             f" {digest}; the earlier layout is left in place")


def _vector_size(old: QdrantClient, name: str) -> int:
    vectors = old.get_collection(name).config.params.vectors
    size = getattr(vectors, "size", None)
    if not isinstance(size, int):
        raise ComponentError(f"store qdrant: cannot tell the vector size of {name!r}")
    return size
