"""A pool of PostgreSQL connections for one worker (psycopg 3, ``psycopg_pool``).

psycopg is imported inside :func:`open_pool`, never at import: a SQLite-only install
needs no PostgreSQL driver (``pip install 'omoide[postgresql]'`` adds it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from omoide.errors import OmoideError

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool


def is_postgresql_url(url: str | None) -> bool:
    """Whether ``url`` names a PostgreSQL database (``None``: the embedded SQLite)."""
    return bool(url) and str(url).startswith(("postgresql://", "postgres://"))


def open_pool(url: str, *, size: int = 8, timeout_s: float = 10.0,
              name: str = "omoide") -> ConnectionPool:
    """An open pool of at most ``size`` connections to ``url``, waiting ``timeout_s`` for
    the first one (raises :class:`psycopg.OperationalError` when the database does not
    answer). Connections autocommit; work that must be atomic opens
    ``conn.transaction()``."""
    try:
        from psycopg_pool import ConnectionPool
    except ImportError as exc:
        raise OmoideError("database.url names PostgreSQL but psycopg is not installed:"
                          " pip install 'omoide[postgresql]'") from exc
    pool = ConnectionPool(url, min_size=1, max_size=size, open=False, name=name,
                          kwargs={"autocommit": True}, timeout=timeout_s)
    pool.open(wait=True, timeout=timeout_s)
    return pool
