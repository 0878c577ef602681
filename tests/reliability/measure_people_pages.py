"""Time ``GET /v1/users`` page by page on a server that knows N people (not a test).

    .venv/bin/python tests/reliability/measure_people_pages.py [--people 10000] [--limit 100]

Writes N people (each with one journaled exchange) into a fresh data dir's journal,
starts a real ``omoide serve`` on it (test doubles for ASR/TTS/embedder, Qdrant local),
then times the first call without parameters, and every page following the ``next``
cursors: per-page wall time (median, slowest), bytes, and the whole walk.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from conftest import serve

from omoide.memory.journal.exchange_log import Journal
from omoide.types import Exchange


def seed(data: Path, people: int) -> None:
    journal = Journal(data / "journal.sqlite3")
    journal.open()
    start = datetime(2026, 1, 1, 9, tzinfo=timezone(timedelta(hours=9)))
    for i in range(people):
        journal.append_sync(Exchange(id=f"x{i}", user=f"person{i:05d}", user_text="やあ",
                                     assistant_text="こんにちは",
                                     at=start + timedelta(minutes=i)))
    journal.close()


def timed_get(server: object, path: str) -> tuple[float, int, dict[str, object]]:
    import json

    request = urllib.request.Request(server.url(path),  # type: ignore[attr-defined]
                                     headers=server._headers())  # type: ignore[attr-defined]
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=120) as r:
        raw = r.read()
    return time.monotonic() - started, len(raw), json.loads(raw)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--people", type=int, default=10_000)
    parser.add_argument("--limit", type=int, default=100)
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="omoide-people-")) / "data"
    data.mkdir()
    seed(data, args.people)
    server = serve(data)
    try:
        took, size, body = timed_get(server, "/v1/users")
        print(f"GET /v1/users: {took * 1000:.0f} ms, {size} bytes,"
              f" {len(body['people'])} people, next={body.get('next')!r}")  # type: ignore[arg-type]
        times, total_bytes, seen, cursor = [], 0, 0, None
        walk_started = time.monotonic()
        while True:
            query = {"limit": str(args.limit)} | ({"cursor": cursor} if cursor else {})
            took, size, body = timed_get(server, "/v1/users?" + urllib.parse.urlencode(query))
            times.append(took)
            total_bytes += size
            seen += len(body["people"])  # type: ignore[arg-type]
            cursor = body.get("next")  # type: ignore[assignment]
            if not cursor or len(times) > args.people:
                break
        walk = time.monotonic() - walk_started
        print(f"pages of {args.limit}: {len(times)} pages, {seen} people, median"
              f" {statistics.median(times) * 1000:.0f} ms, slowest {max(times) * 1000:.0f} ms,"
              f" {total_bytes / len(times):.0f} bytes a page; whole walk {walk:.1f} s")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
