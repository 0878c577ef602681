"""Copy a data dir's SQLite journal into the PostgreSQL journal, then verify the copy.

Idempotent: rows already in PostgreSQL (same id) are left as they are, so running it
again after an interruption copies only what is missing. Everything is copied as it is —
waiting, consumed, quarantined, skipped exchanges with their attempts and errors, every
extraction batch with its plan and state — so extraction goes on where it stood, nothing
extracted twice. Verified by counts and checksums: every SQLite row must be in
PostgreSQL with the same checksum, and each copied exchange's values must still match
it (recomputed from what PostgreSQL holds).

A row PostgreSQL cannot hold (text that is no longer UTF-8 — a damaged row, which the
journal never extracts — or a NUL character) is not copied and is reported by id.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omoide.memory.journal.exchange_log import Journal
from omoide.memory.journal.postgres_journal import PostgresJournal
from omoide.memory.journal.row_checksum import CHECKED_COLUMNS, exchange_checksum, tolerant_text

EXCHANGE_COLUMNS = ("id", "user", "user_text", "assistant_text", "at", "at_ts", "session_id",
                    "consumed_at", "attempts", "last_error", "batch_id", "quarantined_at",
                    "skipped_at", "checksum")
BATCH_COLUMNS = ("id", "user", "exchange_ids", "said_at", "facts", "plan", "state",
                 "created_at", "attempts", "last_error", "checksum", "plan_checksum")
_CHUNK = 500


@dataclass
class CopyReport:
    """What :func:`copy_journal` copied and found."""

    exchanges: int = 0
    """Exchange rows in the SQLite journal."""
    exchanges_copied: int = 0
    batches: int = 0
    batches_copied: int = 0
    users: int = 0
    not_copyable: list[str] = field(default_factory=list)
    """Ids of rows PostgreSQL cannot hold (see the module docstring)."""
    mismatches: list[str] = field(default_factory=list)
    """What the verification found wrong (empty: the copy is complete and intact)."""

    @property
    def verified(self) -> bool:
        return not self.mismatches


def _holdable(row: Sequence[Any]) -> bool:
    for value in row:
        if isinstance(value, str):
            if "\x00" in value:
                return False
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return False
    return True


def _read(db: sqlite3.Connection, table: str, columns: Sequence[str], order: str,
          ) -> Iterator[list[tuple[Any, ...]]]:
    names = ", ".join(f'"{c}"' for c in columns)
    cursor = db.execute(f"SELECT {names} FROM {table} ORDER BY {order}")
    while chunk := cursor.fetchmany(_CHUNK):
        yield [tuple(r) for r in chunk]


def _insert(target: PostgresJournal, table: str, columns: Sequence[str],
            rows: Sequence[tuple[Any, ...]]) -> int:
    names = ", ".join(f'"{c}"' for c in columns)
    marks = ", ".join(["%s"] * len(columns))
    sql = f"INSERT INTO {table}({names}) VALUES ({marks}) ON CONFLICT DO NOTHING"

    def write(c: Any) -> int:
        added = 0
        for row in rows:
            added += c.execute(sql, row).rowcount
        return added
    return target._transaction(write)


def copy_journal(sqlite_path: Path, target: PostgresJournal) -> CopyReport:
    """Copy the journal at ``sqlite_path`` into ``target`` (open), then verify."""
    older = Journal(sqlite_path)  # opening brings an older journal's columns and
    older.open()                  # checksums up to date
    older.close()
    db = sqlite3.connect(f"{Path(sqlite_path).resolve().as_uri()}?mode=ro", uri=True)
    db.text_factory = tolerant_text
    report = CopyReport()
    try:
        for table, columns, order in (
                ("exchanges", EXCHANGE_COLUMNS, "at_ts, rowid"),
                ("extraction_batches", BATCH_COLUMNS, "created_at, rowid"),
                ("users", ("user", "first_seen"), "user")):
            for chunk in _read(db, table, columns, order):
                good = [r for r in chunk if _holdable(r)]
                report.not_copyable += [str(r[0]) for r in chunk if not _holdable(r)]
                added = _insert(target, table, columns, good)
                if table == "exchanges":
                    report.exchanges, report.exchanges_copied = (
                        report.exchanges + len(chunk), report.exchanges_copied + added)
                elif table == "extraction_batches":
                    report.batches, report.batches_copied = (
                        report.batches + len(chunk), report.batches_copied + added)
                else:
                    report.users += len(chunk)
        _verify(db, target, report)
    finally:
        db.close()
    return report


def _verify(db: sqlite3.Connection, target: PostgresJournal, report: CopyReport) -> None:
    """Every copyable SQLite row is in PostgreSQL with the same checksum; every copied
    exchange's values still match it."""
    skipped = set(report.not_copyable)
    checked = ", ".join(f'"{c}"' for c in CHECKED_COLUMNS)
    held = {str(r[0]): r for r in target._rows(f"SELECT {checked}, checksum FROM exchanges")}
    for ex_id, checksum in db.execute("SELECT id, checksum FROM exchanges"):
        if ex_id in skipped:
            continue
        row = held.get(str(ex_id))
        if row is None:
            report.mismatches.append(f"exchange {ex_id} is missing")
        elif row[-1] != checksum or exchange_checksum(row[:-1]) != checksum:
            report.mismatches.append(f"exchange {ex_id} differs from the SQLite journal")
    batches = dict(target._rows("SELECT id, checksum FROM extraction_batches"))
    for batch_id, checksum in db.execute("SELECT id, checksum FROM extraction_batches"):
        if batch_id not in skipped and batches.get(batch_id, "missing") != checksum:
            report.mismatches.append(f"extraction batch {batch_id} is missing or differs")
    users = {str(r[0]) for r in target._rows('SELECT "user" FROM users')}
    report.mismatches += [f"person {u} is missing" for (u,) in db.execute(
        "SELECT user FROM users") if u not in users and u not in skipped]
