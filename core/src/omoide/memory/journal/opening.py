"""Which journal a memory engine gets: SQLite in the data dir, or PostgreSQL.

The ``database:`` section decides (``database.url``): without one, the embedded SQLite
journal of a single process, as always; with a PostgreSQL URL, the journal several
workers share (:mod:`.postgres_journal`, imported only then).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from omoide.memory.journal.exchange_log import Journal
from omoide.memory.journal.storage import ExchangeJournal


class DatabaseChoice(Protocol):
    """What the journal needs of the ``database:`` section (``DatabaseSettings``)."""

    @property
    def url(self) -> str | None: ...
    @property
    def pool_size(self) -> int: ...
    @property
    def lease_seconds(self) -> float: ...


def exchange_journal(path: Path, database: DatabaseChoice | None = None) -> ExchangeJournal:
    """The journal for ``database`` (None or no URL: the SQLite file at ``path``; with a
    URL, ``path`` still names where the spill file and manifest sit). Not opened yet."""
    if database is None or not database.url:
        return Journal(path)
    from omoide.memory.journal.postgres_journal import PostgresJournal

    return PostgresJournal(str(database.url), path=path, pool_size=database.pool_size,
                           lease_seconds=database.lease_seconds)
