"""The undo copies of forgotten memories on the shared database (``database.url``).

With several workers a forget on one and its undo on another must meet: the copy a
forget keeps (:mod:`.forget_undo`) lives in one table every worker reads (migrations
component ``forget_undo``) instead of each data dir's ``recently_forgotten.sqlite3``.
The rows and the statements are the SQLite file's; only the connection differs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from omoide.database.connection import LazyPool
from omoide.database.migrations import Migration

COMPONENT = "forget_undo"
MIGRATIONS = (
    Migration(1, "undo copies of forgotten memories", """
CREATE TABLE forgotten (
    ticket TEXT PRIMARY KEY,
    "user" TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    memory TEXT NOT NULL,
    forgotten_at DOUBLE PRECISION NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX forgotten_user ON forgotten ("user", expires_at);
CREATE INDEX forgotten_expiry ON forgotten (expires_at);
"""),
)


class PostgresForgottenCopies:
    """Runs the undo copies' statements on a small pool of its own, opened (and the
    table migrated) at the first one. Blocking: callers run it in a thread."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._db = LazyPool(url, COMPONENT, MIGRATIONS, size=2, timeout_s=3.0,
                            name="omoide-forget-undo")

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        """Run ``sql`` (written for SQLite: ``?`` placeholders) and return its rows."""
        with self._db.pool().connection() as conn:
            cursor = conn.execute(sql.replace("?", "%s"), tuple(params))
            return list(cursor.fetchall()) if cursor.description else []

    def close(self) -> None:
        self._db.close()
