"""A database restart while a worker takes turns: journaling fails fast and says so, the
exchanges wait in the worker's spill file, and once the database is back they are
journaled without restarting omoide — none lost, none twice."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from omoide.memory.journal.keeper import JournalingFailed, JournalKeeper
from omoide.memory.journal.postgres_journal import PostgresJournal
from omoide.testing.doubles import InMemoryStore, MemoryStoreConfig
from omoide.testing.postgresql import ThrowawayPostgres
from omoide.types import Exchange

JST = timezone(timedelta(hours=9))


@pytest.fixture
def own_server(postgres_server: ThrowawayPostgres) -> Iterator[ThrowawayPostgres]:
    """A cluster of its own: this test stops and starts it."""
    server = ThrowawayPostgres().start()
    try:
        yield server
    finally:
        server.stop()


def said(n: int) -> Exchange:
    return Exchange(f"x{n}", "mika", f"話その{n}", "うん",
                    datetime(2026, 12, 1, 20, n, tzinfo=JST))


async def test_turns_during_a_database_restart_are_kept_and_journaled_after(
        own_server: ThrowawayPostgres, tmp_path: Path) -> None:
    url = own_server.create_database("restart")
    journal = PostgresJournal(url, path=tmp_path / "journal.sqlite3", busy_timeout_s=2.0)
    keeper = JournalKeeper(tmp_path, journal, accept_data_loss=False, probe_seconds=0.2)
    store = InMemoryStore(MemoryStoreConfig())
    await store.start()
    await keeper.open(store)
    await keeper.record(said(0))
    own_server.pause()
    for n in (1, 2):
        with pytest.raises(JournalingFailed, match="kept in"):
            await keeper.record(said(n))
    assert keeper.problem is not None
    own_server.resume()
    for _ in range(100):  # the keeper's probe notices within a few of its 0.2-s rounds
        if keeper.problem is None:
            break
        await asyncio.sleep(0.2)
    assert keeper.problem is None
    await keeper.record(said(3))
    assert [e.id for e in await journal.exchanges(["x0", "x1", "x2", "x3"])] == [
        "x0", "x1", "x2", "x3"]
    assert await journal.count_exchanges() == 4
    await keeper.close()
    journal.close()
