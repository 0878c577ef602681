"""Voiceprints in the shared database (``database.url``, PostgreSQL), so a voice
enrolled on one worker is recognised on every other.

The records are :class:`~omoide.voices.store.VoiceprintStore`'s (the same JSON a
person's file holds), one row per person in ``voiceprints`` (:data:`MIGRATIONS`,
component ``voices``), with a ``version`` raised by every write: a worker keeps the
parsed voiceprints of a person and reads the row again only when its version moved, so
a turn's identification costs one small indexed read per household member. An
enrolment reads and writes the row in one transaction under the person's advisory lock
(two workers enrolling one person at once both count). Erasing deletes the row.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omoide.database.connection import LazyPool
from omoide.database.migrations import Migration
from omoide.user_ids import validate_user_id
from omoide.voices.store import Voiceprint, VoiceprintStore, log

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

COMPONENT = "voices"
MIGRATIONS = (
    Migration(1, "voiceprints", """
CREATE TABLE voiceprints (
    person TEXT PRIMARY KEY,
    version BIGINT NOT NULL,
    data JSONB NOT NULL
);
CREATE SEQUENCE voiceprints_versions;
"""),
)

_UPSERT = ("INSERT INTO voiceprints (person, version, data)"
           " VALUES (%s, nextval('voiceprints_versions'), %s)"
           " ON CONFLICT (person) DO UPDATE SET data = EXCLUDED.data,"
           " version = EXCLUDED.version")


def _lock_key(person: str) -> int:
    digest = hashlib.sha256(f"omoide-voiceprints/{person}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _document(person: str, prints: list[Voiceprint]) -> dict[str, Any]:
    return {"person": person, "voiceprints": [p.to_json() for p in prints]}


def _parsed(person: str, data: Any) -> list[Voiceprint]:
    """A row's voiceprints (none, logged, when the row cannot be read)."""
    try:
        raw = json.loads(data) if isinstance(data, str | bytes) else data
        return [Voiceprint.from_json(person, d) for d in raw.get("voiceprints", [])]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        log.error("voiceprints of %s unreadable (%s); treated as none", person, exc)
        return []


class PostgresVoiceprintStore(VoiceprintStore):
    """Everyone's voiceprints on one database, for every worker (see the module)."""

    def __init__(self, url: str, *, pool_size: int = 2) -> None:
        super().__init__(Path("."))
        self.url = url
        self.pool_size = pool_size
        self._db = LazyPool(url, COMPONENT, MIGRATIONS, size=pool_size, timeout_s=10.0,
                            name="omoide-voices")
        self._versions: dict[str, tuple[int, list[Voiceprint]]] = {}

    def _conn(self) -> ConnectionPool:
        return self._db.pool()

    def close(self) -> None:
        self._db.close()

    def _rows(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        with self._conn().connection() as conn:
            cursor = conn.execute(sql, params)
            return cursor.fetchall() if cursor.description else []

    def people(self) -> list[str]:
        return [str(r[0]) for r in self._rows("SELECT person FROM voiceprints ORDER BY person")]

    def erase(self, person: str) -> int:
        validate_user_id(person)
        with self._lock:
            count = len(self._read(person))
            self._rows("DELETE FROM voiceprints WHERE person=%s", (person,))
            self._versions.pop(person, None)
        if count:
            log.info("voiceprints of %s erased", person)
        return count

    def _read(self, person: str) -> list[Voiceprint]:
        validate_user_id(person)
        known = self._versions.get(person)
        rows = self._rows("SELECT version, CASE WHEN version = %s THEN NULL ELSE data END"
                          " FROM voiceprints WHERE person=%s",
                          (known[0] if known else -1, person))
        if not rows:
            self._versions.pop(person, None)
            return []
        version, data = int(rows[0][0]), rows[0][1]
        if known is not None and data is None:
            return known[1]
        prints = _parsed(person, data)
        self._versions[person] = (version, prints)
        return prints

    def _change(self, person: str,
                change: Callable[[list[Voiceprint]], list[Voiceprint]]) -> list[Voiceprint]:
        """One transaction holding the person's advisory lock: two workers enrolling
        the same person at once both count (the second reads what the first wrote)."""
        from psycopg.types.json import Jsonb

        validate_user_id(person)
        with self._conn().connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key(person),))
            row = conn.execute("SELECT data FROM voiceprints WHERE person=%s",
                               (person,)).fetchone()
            prints = change(_parsed(person, row[0]) if row else [])
            conn.execute(_UPSERT, (person, Jsonb(_document(person, prints))))
        self._versions.pop(person, None)
        return prints

    def _write(self, person: str, prints: list[Voiceprint]) -> None:
        from psycopg.types.json import Jsonb

        self._rows(_UPSERT, (person, Jsonb(_document(person, prints))))
        self._versions.pop(person, None)

    def import_files(self, files: VoiceprintStore) -> int:
        """Copy a data dir's voiceprints in (``omoide migrate``): everyone's who has
        none here yet; returns how many people were copied."""
        from psycopg.types.json import Jsonb

        copied = 0
        for person in files.people():
            prints = files.voiceprints(person)
            if not prints:
                continue
            copied += len(self._rows(
                "INSERT INTO voiceprints (person, version, data)"
                " VALUES (%s, nextval('voiceprints_versions'), %s)"
                " ON CONFLICT (person) DO NOTHING RETURNING person",
                (person, Jsonb(_document(person, prints)))))
        return copied


def open_voiceprints(data_dir: Path, database_url: str | None = None) -> VoiceprintStore:
    """The voiceprint store of a server or command: ``<data_dir>/voices/``, or with a
    PostgreSQL ``database_url`` the shared database's."""
    from omoide.database.connection import is_postgresql_url

    if is_postgresql_url(database_url):
        return PostgresVoiceprintStore(str(database_url))
    return VoiceprintStore(data_dir)
