"""Versioned schema for PostgreSQL: numbered SQL migrations, each applied once, in order.

Why this rather than Alembic: omoide's schema is a handful of tables per room, written
as plain SQL; Alembic would bring SQLAlchemy, an ``env.py``, a migrations directory per
install and autogeneration we do not use. What Alembic's correctness rests on is kept:

- one table, ``omoide_schema``, records ``(component, version)`` for every migration
  applied, with its name and when; a migration is a numbered SQL text that is never
  edited once released (a change is a new number);
- :func:`apply_migrations` runs the migrations of a component whose number is not
  recorded yet, in order, each recorded with its own change, all in one transaction
  (PostgreSQL's DDL is transactional: a failing migration leaves nothing half-done);
- the whole run holds a transaction-level **advisory lock** (``pg_advisory_xact_lock``)
  keyed by the component: two workers starting together do not both create a table —
  the second waits, then finds every migration recorded and does nothing;
- a database recording a version newer than this omoide knows is refused (an older
  worker must not write a schema it does not understand).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from omoide.errors import OmoideError

if TYPE_CHECKING:
    from psycopg import Connection

log = logging.getLogger("omoide.database")

_SCHEMA_TABLE = """
CREATE TABLE IF NOT EXISTS omoide_schema (
    component TEXT NOT NULL,
    version INTEGER NOT NULL,
    name TEXT NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (component, version)
)"""


@dataclass(frozen=True)
class Migration:
    """One numbered schema change of a component (``version`` 1, 2, ... in order)."""

    version: int
    name: str
    sql: str


class SchemaTooNew(OmoideError):
    """The database was migrated by a newer omoide than this one."""


def _lock_key(component: str) -> int:
    """A stable signed 64-bit advisory lock key for ``component``."""
    digest = hashlib.sha256(f"omoide-schema/{component}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def applied_versions(conn: Connection[tuple[object, ...]], component: str) -> list[int]:
    """The versions of ``component`` recorded in the schema table, in order."""
    conn.execute(_SCHEMA_TABLE)
    rows = conn.execute("SELECT version FROM omoide_schema WHERE component=%s"
                        " ORDER BY version", (component,)).fetchall()
    return [int(str(r[0])) for r in rows]


def apply_migrations(conn: Connection[tuple[object, ...]], component: str,
                     migrations: Sequence[Migration]) -> list[int]:
    """Apply the migrations of ``component`` not applied yet, in order, each once;
    returns the versions applied now (empty when the schema was current). Safe to call
    from several workers at once (advisory lock)."""
    numbers = [m.version for m in migrations]
    if numbers != list(range(1, len(numbers) + 1)):
        raise ValueError(f"{component}: migrations must be numbered 1..n, got {numbers}")
    applied_now: list[int] = []
    with conn.transaction():
        # Held until this transaction ends; CREATE TABLE IF NOT EXISTS alone races.
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key(component),))
        done = set(applied_versions(conn, component))
        if done and max(done) > len(migrations):
            raise SchemaTooNew(f"the database holds {component} schema version {max(done)},"
                               f" this omoide knows {len(migrations)}: upgrade omoide")
        for m in migrations:
            if m.version in done:
                continue
            with conn.transaction():
                conn.execute(m.sql)  # our own literal SQL
                conn.execute("INSERT INTO omoide_schema(component, version, name)"
                             " VALUES (%s, %s, %s)", (component, m.version, m.name))
            applied_now.append(m.version)
            log.info("database: %s schema migration %d (%s) applied", component,
                     m.version, m.name)
    return applied_now
