"""Fixtures for the database contract suite: every journal test runs on SQLite and on a
throwaway PostgreSQL cluster started here (Debian's binaries, a temp dir, a free port,
stopped at the end of the session).

When PostgreSQL cannot be started the PostgreSQL tests FAIL with the reason; a developer
without PostgreSQL sets ``OMOIDE_TEST_SKIP_POSTGRESQL=1`` to skip them instead.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
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


# -- omoide serve workers on the test's database -------------------------------------------
@dataclass(frozen=True)
class ServedWorkers:
    """What :func:`omoide_workers` started: each worker's base URL and config file, and
    the admin token (the database's, one for all)."""

    urls: list[str]
    configs: list[Path]
    admin: str


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(base: str, proc: subprocess.Popen[str], limit_s: float = 120.0) -> None:
    """Until ``/healthz`` says ready (a start-up bound on a busy machine, not a measure)."""
    import httpx

    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        try:
            if httpx.get(f"{base}/healthz", timeout=2).json()["status"] == "ready":
                return
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.3)
    raise AssertionError(f"{base} did not become ready")


@contextlib.contextmanager
def _serve(url: str, folder: Path, count: int, config: Callable[[Path, int], str],
           ) -> Iterator[ServedWorkers]:
    from omoide.server.postgres_tokens import PostgresTokenStore

    started: list[tuple[str, Path, subprocess.Popen[str]]] = []
    try:
        for n in range(count):
            port = free_port()
            path = folder / f"worker{n}.yaml"
            path.write_text(config(folder / f"data{n}", port), encoding="utf-8")
            proc = subprocess.Popen(
                [sys.executable, "-m", "omoide.cli", "serve", "--config", str(path)],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                env={**os.environ, "OMOIDE_DATABASE_URL": url})
            started.append((f"http://127.0.0.1:{port}", path, proc))
        for base, _, proc in started:
            _wait_ready(base, proc)
        tokens = PostgresTokenStore(url)
        admin = tokens.admin_token()
        tokens.close()
        yield ServedWorkers([base for base, _, _ in started],
                            [path for _, path, _ in started], admin)
    finally:
        for _, _, proc in started:
            proc.send_signal(signal.SIGTERM)
        for _, _, proc in started:
            proc.wait(timeout=60)


@pytest.fixture
def omoide_workers(postgres_url: str, tmp_path: Path,
                   ) -> Callable[..., contextlib.AbstractContextManager[ServedWorkers]]:
    """``with omoide_workers(count, config) as served:`` starts ``count`` ``omoide serve``
    processes on the test's database (``OMOIDE_DATABASE_URL``), each with the config
    ``config(data_dir, port)`` written to ``worker<n>.yaml`` in the test's folder, and
    waits until every one is ready; SIGTERM and wait when the block ends."""
    return functools.partial(_serve, postgres_url, tmp_path)
