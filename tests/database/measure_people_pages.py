"""Measure the journal's reads on PostgreSQL at scale (not a test: run it).

    .venv/bin/python tests/database/measure_people_pages.py [--people 10000] [--exchanges 200000]

Starts a throwaway PostgreSQL, fills the journal with ``--exchanges`` exchanges of
``--people`` people (one in ten still waiting for extraction), and prints the median of
5 reads: a console page of 50 people, one person's activity, one person's pending work,
every unfinished batch.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from omoide.memory.journal.activity import people_activity
from omoide.memory.journal.postgres_journal import PostgresJournal
from omoide.testing.postgresql import ThrowawayPostgres


async def median_ms(read: Callable[[], Awaitable[Any]]) -> float:
    times = []
    for _ in range(5):
        started = time.perf_counter()
        await read()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


async def measure(people: int, exchanges: int) -> None:
    server = ThrowawayPostgres().start()
    try:
        journal = PostgresJournal(server.create_database("measure"), path=Path("unused"))
        journal.open()

        def fill(c: Any) -> None:
            c.execute('INSERT INTO exchanges(id, "user", user_text, assistant_text, at,'
                      " at_ts, consumed_at) SELECT 'x' || g, 'u' || lpad((g %% %s)::text,"
                      " 6, '0'), '週末は箱根に行くよ', 'いいですね', '2026-12-01T10:00:00+09:00',"
                      " g, CASE WHEN g %% 10 = 0 THEN NULL ELSE 'done' END"
                      " FROM generate_series(1, %s) g", (people, exchanges))
            c.execute('INSERT INTO users("user", first_seen) SELECT DISTINCT "user", %s'
                      " FROM exchanges", ("2026-12-01T10:00:00+09:00",))
            c.execute("ANALYZE")
        journal._transaction(fill)
        middle = f"u{people // 2:06d}"
        for label, read in (
                ("a page of 50 people", lambda: people_activity(journal, after=middle,
                                                                limit=50)),
                ("one person's activity", lambda: people_activity(journal, middle)),
                ("one person's pending work (leased)", lambda: journal.pending_work(middle)),
                ("every unfinished batch", lambda: journal.open_batches())):
            print(f"{label}: median {await median_ms(read):.1f} ms")
        journal.close()
    finally:
        server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=10_000)
    parser.add_argument("--exchanges", type=int, default=200_000)
    args = parser.parse_args()
    asyncio.run(measure(args.people, args.exchanges))
