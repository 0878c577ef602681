"""A checksum for each exchange row of the journal, and the check of a whole journal.

SQLite notices a damaged page structure, not a changed value: one flipped byte inside
what a person said reads back as a different sentence (or as text that is not UTF-8).
Each exchange row therefore carries ``checksum``: SHA-256 (first 128 bits, hex) over the
values that never change once written — id, person, both texts, time and session — as
one JSON list (unambiguous whatever the texts hold). It is written with the row,
verified on every read of the row (:func:`row_is_intact`), filled in for rows of a
journal older than it when the journal is opened (:func:`fill_missing_checksums`), and
checked for the whole journal by ``omoide memory verify`` (:func:`verify_journal`).

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
DAMAGED_REASON = ("the journal row's checksum does not match what it holds: it was"
                  " changed outside omoide (a damaged disk or a hand edit)")


def tolerant_text(raw: bytes) -> str:
    """SQLite's ``text_factory`` for the journal: UTF-8, keeping undecodable bytes as
    surrogates (the checksum then fails instead of the read)."""
    return raw.decode("utf-8", "surrogateescape")


def exchange_checksum(values: Sequence[object]) -> str:
    """The checksum of one exchange row's :data:`CHECKED_COLUMNS` values."""
    text = json.dumps([None if v is None else str(v) for v in values], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def row_is_intact(values: Sequence[object], checksum: object) -> bool:
    """Whether a row's values still match its checksum (a row without one, written
    before checksums and not yet migrated, is taken as it is)."""
    return checksum is None or exchange_checksum(values) == checksum


def fill_missing_checksums(db: sqlite3.Connection) -> int:
    """Give every exchange row without a checksum one (inside the caller's transaction
    or autocommit); returns how many rows got one."""
    columns = ", ".join(CHECKED_COLUMNS)
    rows = db.execute(f"SELECT rowid, {columns} FROM exchanges WHERE checksum IS NULL"
                      ).fetchall()
    db.executemany("UPDATE exchanges SET checksum=? WHERE rowid=?",
                   [(exchange_checksum(r[1:]), r[0]) for r in rows])
    return len(rows)


@dataclass(frozen=True)
class DamagedRow:
    """An exchange row whose values no longer match its checksum."""

    exchange_id: str
    user: str
    at: str


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
    finally:
        db.close()
    return out


def _printable(value: object) -> str:
    return str(value).encode("utf-8", "backslashreplace").decode("utf-8")
