"""Fixtures for the database contract suite: every journal test runs on SQLite and on a
throwaway PostgreSQL cluster started here (Debian's binaries, a temp dir, a free port,
stopped at the end of the session).

When PostgreSQL cannot be started the PostgreSQL tests FAIL with the reason; a developer
without PostgreSQL sets ``OMOIDE_TEST_SKIP_POSTGRESQL=1`` to skip them instead.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from omoide.memory.journal.exchange_log import Journal
from omoide.memory.journal.postgres_journal import PostgresJournal
from omoide.memory.journal.storage import ExchangeJournal
from omoide.testing.postgresql import SKIP_ENV, PostgresUnavailable, ThrowawayPostgres

_databases = itertools.count(1)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[ThrowawayPostgres]:
    try:
        server = ThrowawayPostgres().start()
    except PostgresUnavailable as exc:
        if os.environ.get(SKIP_ENV) == "1":
            pytest.skip(f"PostgreSQL tests skipped ({SKIP_ENV}=1): {exc}")
        pytest.fail(f"the throwaway PostgreSQL did not start: {exc}", pytrace=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_url(request: pytest.FixtureRequest) -> str:
    """A fresh empty database on the session's cluster."""
    server: ThrowawayPostgres = request.getfixturevalue("postgres_server")
    return server.create_database(f"journal_{next(_databases)}")


JournalFactory = Callable[..., ExchangeJournal]


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def make_journal(backend: str, tmp_path: Path, request: pytest.FixtureRequest,
                       ) -> AsyncIterator[JournalFactory]:
    """Opens journals on one shared database: each call is another process (a worker)
    with its own connection; ``lease_seconds`` (PostgreSQL) sets its lease."""
    url = request.getfixturevalue("postgres_url") if backend == "postgresql" else ""
    opened: list[ExchangeJournal] = []

    def make(*, lease_seconds: float = 300.0, worker_id: str | None = None,
             ) -> ExchangeJournal:
        journal: ExchangeJournal
        if backend == "sqlite":
            journal = Journal(tmp_path / "journal.db")
        else:
            journal = PostgresJournal(url, path=tmp_path / "journal.db", pool_size=4,
                                      lease_seconds=lease_seconds, worker_id=worker_id)
        journal.open()
        opened.append(journal)
        return journal

    yield make
    for journal in opened:
        journal.close()
