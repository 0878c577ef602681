"""A checksum for each row of the journal, and the check of a whole journal.

SQLite notices a damaged page structure, not a changed value: one flipped byte inside
what a person said reads back as a different sentence (or as text that is not UTF-8).
Each exchange row therefore carries ``checksum``: SHA-256 (first 128 bits, hex) over the
values that never change once written — id, person, both texts, time and session — as
one JSON list (unambiguous whatever the texts hold). It is written with the row,
verified on every read of the row (:func:`row_is_intact`), filled in for rows of a
journal older than it when the journal is opened (:func:`fill_missing_checksums`), and
checked for the whole journal by ``omoide memory verify`` (:func:`verify_journal`).

Extraction batches get the same: ``checksum`` over :data:`BATCH_COLUMNS` (what the
chat model answered, written once) and ``plan_checksum`` over the id and the plan (the
dedup decisions, written once when the batch is planned); their state, attempts and
errors change and are not covered.

A value that is no longer UTF-8 is read with ``surrogateescape``
(:func:`tolerant_text`), so the damaged row is reported instead of failing the query
that reads it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

CHECKED_COLUMNS = ("id", "user", "user_text", "assistant_text", "at", "session_id")
"""The columns the checksum covers, in its order (what never changes after the write)."""
BATCH_COLUMNS = ("id", "user", "exchange_ids", "said_at", "facts")
"""The columns of an extraction batch its ``checksum`` covers."""
DAMAGED_REASON = ("the journal row's checksum does not match what it holds: it was"
                  " changed outside omoide (a damaged disk or a hand edit)")


def tolerant_text(raw: bytes) -> str:
    """SQLite's ``text_factory`` for the journal: UTF-8, keeping undecodable bytes as
    surrogates (the checksum then fails instead of the read)."""
    return raw.decode("utf-8", "surrogateescape")


def exchange_checksum(values: Sequence[object]) -> str:
    """The checksum of one row's covered values (:data:`CHECKED_COLUMNS` of an
    exchange, :data:`BATCH_COLUMNS` of a batch, or a batch's id and plan)."""
    text = json.dumps([None if v is None else str(v) for v in values], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def row_is_intact(values: Sequence[object], checksum: object) -> bool:
    """Whether a row's values still match its checksum (a row without one, written
    before checksums and not yet migrated, is taken as it is)."""
    return checksum is None or exchange_checksum(values) == checksum


def fill_missing_checksums(db: sqlite3.Connection) -> int:
    """Give every exchange and batch row without a checksum one (inside the caller's
    transaction or autocommit); returns how many rows got one."""
    filled = 0
    for table, columns, target, condition in (
            ("exchanges", CHECKED_COLUMNS, "checksum", "checksum IS NULL"),
            ("extraction_batches", BATCH_COLUMNS, "checksum", "checksum IS NULL"),
            ("extraction_batches", ("id", "plan"), "plan_checksum",
             "plan_checksum IS NULL AND plan IS NOT NULL")):
        rows = db.execute(f"SELECT rowid, {', '.join(columns)} FROM {table}"
                          f" WHERE {condition}").fetchall()
        db.executemany(f"UPDATE {table} SET {target}=? WHERE rowid=?",
                       [(exchange_checksum(r[1:]), r[0]) for r in rows])
        filled += len(rows)
    return filled


def batch_is_intact(row: Sequence[object], checksum: object, plan_checksum: object) -> bool:
    """Whether a batch row (its :data:`BATCH_COLUMNS` values, then its plan) still
    matches its checksums."""
    covered, plan = row[:len(BATCH_COLUMNS)], row[len(BATCH_COLUMNS)]
    return (row_is_intact(covered, checksum)
            and (plan is None or row_is_intact((row[0], plan), plan_checksum)))


@dataclass(frozen=True)
class DamagedRow:
    """A row whose values no longer match its checksum."""

    exchange_id: str
    """The exchange's id, or the extraction batch's."""
    user: str
    at: str
    table: str = "exchange"
    """``exchange`` or ``extraction batch``."""


@dataclass
class JournalCheck:
    """What :func:`verify_journal` found."""

    checked: int = 0
    unchecked: int = 0
    """Rows without a checksum (a journal not opened since checksums came)."""
    damaged: list[DamagedRow] = field(default_factory=list)


def verify_journal(path: Path) -> JournalCheck:
    """Check every exchange row of the journal at ``path`` against its checksum, through
    a read-only connection (a running server keeps writing meanwhile)."""
    db = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    db.text_factory = tolerant_text
    out = JournalCheck()
    try:
        have = {str(r[1]) for r in db.execute("PRAGMA table_info(exchanges)")}
        checksum = "checksum" if "checksum" in have else "NULL"
        columns = ", ".join(CHECKED_COLUMNS)
        for row in db.execute(f"SELECT {columns}, {checksum} FROM exchanges ORDER BY at_ts"):
            if row[-1] is None:
                out.unchecked += 1
                continue
            out.checked += 1
            if not row_is_intact(row[:-1], row[-1]):
                out.damaged.append(DamagedRow(_printable(row[0]), _printable(row[1]),
                                              _printable(row[4])))
        _verify_batches(db, out)
    finally:
        db.close()
    return out


def _verify_batches(db: sqlite3.Connection, out: JournalCheck) -> None:
    have = {str(r[1]) for r in db.execute("PRAGMA table_info(extraction_batches)")}
    if "checksum" not in have:
        out.unchecked += int(db.execute("SELECT COUNT(*) FROM extraction_batches"
                                        ).fetchone()[0])
        return
    columns = ", ".join(BATCH_COLUMNS)
    for row in db.execute(f"SELECT {columns}, plan, checksum, plan_checksum"
                          " FROM extraction_batches ORDER BY created_at, rowid"):
        if row[-2] is None:
            out.unchecked += 1
            continue
        out.checked += 1
        if not batch_is_intact(row[:-2], row[-2], row[-1]):
            out.damaged.append(DamagedRow(_printable(row[0]), _printable(row[1]),
                                          _printable(row[3]), "extraction batch"))


def _printable(value: object) -> str:
    return str(value).encode("utf-8", "backslashreplace").decode("utf-8")
