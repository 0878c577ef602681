"""Who has talked to omoide and when: read from the journal for the console's people list.

A SQLite journal's ``users`` and ``exchanges`` tables are read through a read-only
connection of its own (WAL lets it read while the journal writes), so the journal's
writer is never held up by the console; a journal on PostgreSQL answers the same
questions itself (:meth:`~.postgres_journal.PostgresJournal.activity_rows`), from its
pool.
"""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from omoide.memory.journal.row_checksum import CHECKED_COLUMNS, row_is_intact, tolerant_text
from omoide.memory.journal.storage import ExchangeJournal

Source = Path | ExchangeJournal
"""The journal's SQLite file, or the journal itself (either storage)."""


def _file(source: Source) -> Path | None:
    if isinstance(source, Path):
        return source
    return source.path if source.file_backed else None


@dataclass(frozen=True)
class PersonActivity:
    """One person as the journal knows them."""

    user: str
    first_seen: datetime | None
    last_turn: datetime | None
    """When their newest journaled exchange happened (None: never talked); a moment
    the robot said first, with nothing heard, is not their turn."""
    exchanges: int


async def people_activity(journal: Source, user: str | None = None, *,
                          after: str | None = None, limit: int | None = None,
                          ) -> list[PersonActivity]:
    """Every person the journal knows (or only ``user``), sorted by id; ``after`` and
    ``limit`` read one page of them (the people whose id sorts after ``after``, at most
    ``limit``), so a page costs the same however many people there are."""
    path = _file(journal)
    if path is None:
        assert not isinstance(journal, Path)
        rows = await journal.activity_rows(user, after, limit)
        return [PersonActivity(str(r[0]), _when(r[1]), _when(r[2]), int(str(r[3])))
                for r in rows]
    return await asyncio.to_thread(_read, path, user, after, limit)


def _read(path: Path, user: str | None, after: str | None,
          limit: int | None) -> list[PersonActivity]:
    if not path.exists():
        return []
    conditions, params = [], []
    if user is not None:
        conditions.append("u.user=?")
        params.append(user)
    if after is not None:
        conditions.append("u.user>?")
        params.append(after)
    where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
    page = f" LIMIT {int(limit)}" if limit is not None else ""
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        rows = db.execute(
            "SELECT u.user, u.first_seen,"
            " (SELECT e.at FROM exchanges e WHERE e.user=u.user AND e.user_text != ''"
            "  ORDER BY e.at_ts DESC LIMIT 1),"
            " (SELECT COUNT(*) FROM exchanges e WHERE e.user=u.user)"
            f" FROM users u {where} ORDER BY u.user{page}", params).fetchall()
    finally:
        db.close()
    return [PersonActivity(str(r[0]), _when(r[1]), _when(r[2]), int(r[3])) for r in rows]


def _when(raw: object) -> datetime | None:
    if raw is None:
        return None
    try:
        return datetime.fromisoformat(str(raw))
    except ValueError:
        return None


@dataclass(frozen=True)
class SaidExchange:
    """One journaled exchange: what the person said and what omoide answered."""

    id: str
    at: datetime | None
    user_text: str
    assistant_text: str


async def exchanges_by_id(journal: Source, user: str, ids: list[str],
                          ) -> list[SaidExchange]:
    """``user``'s journaled exchanges among ``ids`` (another person's are never read),
    oldest first."""
    path = _file(journal)
    if path is None:
        assert not isinstance(journal, Path)
        return [SaidExchange(e.id, e.at, e.user_text, e.assistant_text)
                for e in await journal.exchanges(ids) if e.user == user]
    return await asyncio.to_thread(_read_exchanges, path, user, ids)


def _read_exchanges(path: Path, user: str, ids: list[str]) -> list[SaidExchange]:
    if not path.exists() or not ids:
        return []
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    db.text_factory = tolerant_text
    try:
        marks = ",".join("?" for _ in ids)
        have = {str(r[1]) for r in db.execute("PRAGMA table_info(exchanges)")}
        checksum = "checksum" if "checksum" in have else "NULL"
        rows = db.execute(f"SELECT {', '.join(CHECKED_COLUMNS)}, {checksum} FROM exchanges"
                          f" WHERE user=? AND id IN ({marks}) ORDER BY at_ts",
                          (user, *ids)).fetchall()
    finally:
        db.close()
    # A row changed outside omoide is not shown as what was said.
    return [SaidExchange(str(r[0]), _when(r[4]), str(r[2]), str(r[3])) for r in rows
            if row_is_intact(r[:-1], r[-1])]
