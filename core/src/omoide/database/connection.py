"""A pool of PostgreSQL connections for one worker (psycopg 3, ``psycopg_pool``).

psycopg is imported inside :func:`open_pool`, never at import: a SQLite-only install
needs no PostgreSQL driver (``pip install 'omoide[postgresql]'`` adds it).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from omoide.errors import OmoideError

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

    from omoide.database.migrations import Migration


class DatabaseUnavailable(OmoideError):
    """The PostgreSQL database ``database.url`` names does not answer."""


def shown_url(url: str) -> str:
    """``url`` fit for a message or a log: without its password."""
    scheme, sep, rest = url.partition("://")
    userinfo, at, host = rest.rpartition("@")
    if not at or ":" not in userinfo:
        return url
    return f"{scheme}{sep}{userinfo.split(':', 1)[0]}:***@{host}"


def is_postgresql_url(url: str | None) -> bool:
    """Whether ``url`` names a PostgreSQL database (``None``: the embedded SQLite)."""
    return bool(url) and str(url).startswith(("postgresql://", "postgres://"))


def open_pool(url: str, *, size: int = 8, timeout_s: float = 10.0,
              name: str = "omoide") -> ConnectionPool:
    """An open pool of at most ``size`` connections to ``url``, waiting ``timeout_s`` for
    the first one (raises :class:`DatabaseUnavailable`, saying why, when the database
    does not answer). Connections autocommit; work that must be atomic opens
    ``conn.transaction()``. Each connection is checked as it is lent
    (``ConnectionPool.check_connection``): after a database restart every pooled
    connection is dead, and a check costs one round trip where a dead one would fail the
    caller's work."""
    try:
        import psycopg
        from psycopg_pool import ConnectionPool, PoolTimeout
    except ImportError as exc:
        raise OmoideError("database.url names PostgreSQL but psycopg is not installed:"
                          " pip install 'omoide[postgresql]'") from exc
    pool = ConnectionPool(url, min_size=1, max_size=size, open=False, name=name,
                          kwargs={"autocommit": True}, timeout=timeout_s,
                          check=ConnectionPool.check_connection)
    try:
        pool.open(wait=True, timeout=timeout_s)
    except PoolTimeout:
        pool.close()
        try:  # the pool does not say why: one direct attempt does
            psycopg.connect(url, connect_timeout=max(1, int(timeout_s))).close()
            reason = f"no connection within {timeout_s:g} s"
        except psycopg.Error as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
        raise DatabaseUnavailable(f"the database {shown_url(url)} does not answer:"
                                  f" {reason}") from None
    return pool


def migrated_pool(url: str, component: str, migrations: Sequence[Migration], *,
                  size: int = 4, timeout_s: float = 10.0, name: str = "omoide",
                  ) -> ConnectionPool:
    """:func:`open_pool`, with ``component``'s schema migrations applied once it is open
    (:func:`omoide.database.migrations.apply_migrations`); a pool whose migrations fail
    is closed before the error goes on."""
    from omoide.database.migrations import apply_migrations

    pool = open_pool(url, size=size, timeout_s=timeout_s, name=name)
    try:
        with pool.connection() as conn:
            apply_migrations(conn, component, migrations)
    except BaseException:
        pool.close()
        raise
    return pool


class LazyPool:
    """A component's pool, opened with its migrations on first use (:func:`migrated_pool`)
    and closed by :meth:`close`; :meth:`run` runs statements in one transaction. For a
    store that must not hold omoide's start when the database is away (a worker keeps its
    own copy meanwhile, and the first use says the database does not answer)."""

    def __init__(self, url: str, component: str, migrations: Sequence[Migration], *,
                 size: int = 2, timeout_s: float = 3.0, name: str = "omoide") -> None:
        self.url = url
        self._component, self._migrations = component, migrations
        self._size, self._timeout_s, self._name = size, timeout_s, name
        self._pool: ConnectionPool | None = None
        self._opening = threading.Lock()

    def pool(self) -> ConnectionPool:
        """The open pool (opened now, migrations applied, if it was not)."""
        with self._opening:
            if self._pool is None:
                self._pool = migrated_pool(self.url, self._component, self._migrations,
                                           size=self._size, timeout_s=self._timeout_s,
                                           name=self._name)
            return self._pool

    def run(self, *statements: tuple[str, Sequence[object]]) -> list[tuple[Any, ...]]:
        """Run ``statements`` in one transaction; the last one's rows."""
        rows: list[tuple[Any, ...]] = []
        with self.pool().connection() as conn, conn.transaction():
            for sql, params in statements:
                cursor = conn.execute(sql, tuple(params))
                rows = list(cursor.fetchall()) if cursor.description else []
        return rows

    def close(self) -> None:
        with self._opening:
            if self._pool is not None:
                self._pool.close()
                self._pool = None
