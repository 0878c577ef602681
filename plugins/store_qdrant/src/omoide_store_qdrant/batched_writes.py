"""One SQLite transaction for a whole upsert in qdrant-client's local mode.

qdrant-client's local engine persists each point in a transaction of its own
(``CollectionPersistence.persist``: ``with connection: INSERT ...``), so an upsert of
64 points is 64 commits and 64 syncs to disk: importing 10,000 memories spent ~200 s
waiting on them with a hashing embedder. :func:`one_transaction` lets the points of one
upsert share a transaction: while it is active, the persistence's ``with connection:``
blocks neither commit nor roll back, and the transaction is committed once at the end
(rolled back, with the error raised, when any point failed). The upsert is still
durable when it returns, and a crash before the commit loses the whole upsert, never
part of it: the callers (import, extraction) write again what is not there.

Only local collections with on-disk persistence are touched; a server, an in-memory
collection or a qdrant-client whose internals differ gets the upsert as it is.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class _DeferredCommits:
    """Stands in for the persistence's connection: ``with`` neither commits nor rolls
    back (it notes a failure); everything else goes to the connection."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection
        self.failed = False

    def __enter__(self) -> _DeferredCommits:
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> bool:
        if kind is not None:
            self.failed = True
        return False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.connection, name)


def _persistence(client: Any, name: str) -> Any | None:
    """The local collection's on-disk persistence (None when there is none)."""
    local = getattr(client, "_client", client)
    collections = getattr(local, "collections", None)
    collection = collections.get(name) if isinstance(collections, dict) else None
    storage = getattr(collection, "storage", None)
    if isinstance(getattr(storage, "storage", None), sqlite3.Connection):
        return storage
    return None


@contextmanager
def one_transaction(client: Any, name: str) -> Iterator[None]:
    """Persist every point the block upserts into collection ``name`` in one commit."""
    persistence = _persistence(client, name)
    if persistence is None:
        yield
        return
    connection: sqlite3.Connection = persistence.storage
    deferred = _DeferredCommits(connection)
    persistence.storage = deferred
    try:
        yield
    except BaseException:
        connection.rollback()
        raise
    else:
        if deferred.failed:
            connection.rollback()
            raise sqlite3.OperationalError("a point of the upsert was not persisted")
        connection.commit()
    finally:
        persistence.storage = connection
