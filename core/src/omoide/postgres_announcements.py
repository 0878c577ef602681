"""Announcements waiting for a person's robot, on the shared database (``database.url``).

A timer's message for a robot that is offline is queued by the worker that took the
timer; the robot may come back through any worker. The messages wait in one table
(migrations component ``announcements``) and are taken with ``DELETE ... RETURNING``:
two workers taking the same person's messages at once each get a share and together
every message, each exactly once (the second ``DELETE`` waits on the first's row locks
and then finds the rows gone). At most :data:`~omoide.announcements.MAX_QUEUED_PER_USER`
wait per person, the oldest dropped first, as in the file.

While the database does not answer, a message is queued in this worker's file instead
(logged) and taking reads that file as well as the database, so nothing is lost: a
message queued in the file is said when the robot connects to this worker. Blocking
statements run in a thread on a small pool of their own, opened (and migrated) at the
first use.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omoide.announcements import MAX_QUEUED_PER_USER, Announcement, AnnouncementQueue
from omoide.database.connection import LazyPool, is_postgresql_url
from omoide.database.migrations import Migration
from omoide.types import Emotion

if TYPE_CHECKING:
    pass

log = logging.getLogger("omoide.announcements")

COMPONENT = "announcements"
MIGRATIONS = (
    Migration(1, "announcements waiting for a device", """
CREATE TABLE announcements_waiting (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    person TEXT NOT NULL,
    text TEXT NOT NULL,
    emotion TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX announcements_waiting_person ON announcements_waiting (person, seq);
"""),
)

_INSERT = ("INSERT INTO announcements_waiting (id, person, text, emotion, created_at)"
           " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING")
_TRIM = ("DELETE FROM announcements_waiting WHERE person = %s AND seq NOT IN (SELECT seq"
         " FROM announcements_waiting WHERE person = %s ORDER BY seq DESC LIMIT %s)")
_TAKE = ("DELETE FROM announcements_waiting WHERE person = %s"
         " RETURNING seq, id, text, emotion, created_at")
_PENDING = ("SELECT seq, id, text, emotion, created_at FROM announcements_waiting"
            " WHERE person = %s ORDER BY seq")


class PostgresAnnouncementQueue(AnnouncementQueue):
    """:class:`AnnouncementQueue` shared by the workers of one database (see the
    module); ``path`` is this worker's file, used while the database is away."""

    def __init__(self, url: str, path: Path, *, pool_size: int = 2,
                 timeout_s: float = 3.0) -> None:
        super().__init__(path)
        self.url = url
        self._db = LazyPool(url, COMPONENT, MIGRATIONS, size=pool_size, timeout_s=timeout_s,
                            name="omoide-announcements")

    def _run(self, *statements: tuple[str, Sequence[object]]) -> list[tuple[Any, ...]]:
        """Run ``statements`` in one transaction; the last one's rows."""
        return self._db.run(*statements)

    async def add(self, announcement: Announcement) -> None:
        a = announcement
        try:
            await asyncio.to_thread(
                self._run,
                (_INSERT, (a.id, a.user, a.text, a.emotion.value, a.created_at.isoformat())),
                (_TRIM, (a.user, a.user, MAX_QUEUED_PER_USER)))
        except Exception as exc:  # noqa: BLE001 - kept in this worker's file instead
            log.warning("the shared database did not take an announcement for %s (%s: %s);"
                        " it waits in this worker's file", a.user, type(exc).__name__, exc)
            await super().add(announcement)

    async def take(self, user: str) -> list[Announcement]:
        """Remove and return ``user``'s waiting messages, oldest first: the database's
        (each taken by one worker only) and any this worker's file kept."""
        local = await super().take(user)
        try:
            rows = await asyncio.to_thread(self._run, (_TAKE, (user,)))
        except Exception as exc:  # noqa: BLE001 - they stay in the database for later
            log.warning("could not take the shared announcements of %s (%s: %s)", user,
                        type(exc).__name__, exc)
            return local
        return local + _announcements(user, rows)

    async def pending(self, user: str) -> list[Announcement]:
        local = await super().pending(user)
        try:
            rows = await asyncio.to_thread(self._run, (_PENDING, (user,)))
        except Exception as exc:  # noqa: BLE001 - this worker's own are still listed
            log.warning("could not read the shared announcements of %s (%s: %s)", user,
                        type(exc).__name__, exc)
            return local
        return local + _announcements(user, rows)

    def close(self) -> None:
        self._db.close()


def _announcements(user: str, rows: Sequence[tuple[Any, ...]]) -> list[Announcement]:
    """Rows of the table as announcements, in the order they were queued."""
    return [Announcement(id_, user, text, Emotion(emotion), datetime.fromisoformat(at))
            for _seq, id_, text, emotion, at in sorted(rows)]


def queue_for(path: Path, url: str | None) -> AnnouncementQueue:
    """The file queue at ``path``, or with a PostgreSQL ``url`` the shared one (the file
    kept for while the database does not answer)."""
    if not is_postgresql_url(url):
        return AnnouncementQueue(path)
    return PostgresAnnouncementQueue(str(url), path)
