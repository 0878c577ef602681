"""What each person's store holds, recorded outside it, so a lost or damaged store is noticed.

``shards/<collection>/manifest.sqlite3`` sits beside the people's stores (deleting a
store leaves its record) and holds, per person (by digest, with their id so a problem
can name them):

- ``points`` and ``checksum``: how many points their store holds and the XOR of their
  point ids (UUIDs as 128-bit numbers; order-free, so a write updates it in place);
- ``pending_points`` / ``pending_checksum``: the state before a write that may not
  have reached the store (set, committed, before the write; cleared after it), so a
  crash between the two leaves a record the store matches either way;
- every point id (table ``points``), so a rebuild restores only what was there:
  nothing forgotten comes back.

Checks: :meth:`ShardManifest.missing_or_damaged` at start looks only at the files (the
store directory, its ``meta.json`` and the SQLite header of ``storage.sqlite``: a
stat and a few bytes per person, nothing is opened); :meth:`ShardManifest.verify`
compares a store with its record when it is opened. A store opened with no record
(written before manifests) is adopted as it is.

Runs on the store's worker thread, like everything in :mod:`.shards`.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from omoide.api import connect_private

MANIFEST_FILE = "manifest.sqlite3"
SQLITE_HEADER = b"SQLite format 3\x00"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS people (
    digest TEXT PRIMARY KEY,
    user TEXT NOT NULL,
    points INTEGER NOT NULL,
    checksum TEXT NOT NULL,
    pending_points INTEGER,
    pending_checksum TEXT
);
CREATE TABLE IF NOT EXISTS points (
    digest TEXT NOT NULL,
    point_id TEXT NOT NULL,
    PRIMARY KEY (digest, point_id)
) WITHOUT ROWID;
"""


def checksum_of(point_ids: Iterable[str]) -> int:
    """XOR of ``point_ids`` read as UUIDs (the order does not matter)."""
    out = 0
    for pid in point_ids:
        out ^= uuid.UUID(pid).int
    return out


def _hex(value: int) -> str:
    return f"{value:032x}"


@dataclass(frozen=True)
class ShardRecord:
    """What the manifest says of one person's store."""

    digest: str
    user: str
    points: int
    checksum: str
    pending_points: int | None = None
    pending_checksum: str | None = None


class ShardManifest:
    """The manifest file of one collection's per-person stores."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            db = connect_private(self.path, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")  # the record must not lag the store
            db.executescript(_SCHEMA)
            self._db = db
        return self._db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    # -- reading ------------------------------------------------------------------------
    def record(self, digest: str) -> ShardRecord | None:
        row = self._conn().execute(
            "SELECT digest, user, points, checksum, pending_points, pending_checksum"
            " FROM people WHERE digest=?", (digest,)).fetchone()
        return None if row is None else ShardRecord(*row)

    def records(self) -> list[ShardRecord]:
        rows = self._conn().execute(
            "SELECT digest, user, points, checksum, pending_points, pending_checksum"
            " FROM people ORDER BY user").fetchall()
        return [ShardRecord(*r) for r in rows]

    def point_ids(self, digest: str) -> set[str]:
        rows = self._conn().execute("SELECT point_id FROM points WHERE digest=?", (digest,))
        return {str(r[0]) for r in rows}

    # -- writing ------------------------------------------------------------------------
    def begin(self, digest: str, user: str, added: Sequence[str] = (),
              removed: Sequence[str] = ()) -> None:
        """Record a write about to reach ``digest``'s store (the old state kept as
        pending until :meth:`done`)."""
        db = self._conn()
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute("SELECT points, checksum FROM people WHERE digest=?",
                             (digest,)).fetchone()
            points, checksum = (0, 0) if row is None else (int(row[0]), int(row[1], 16))
            old = (points, checksum)
            for pid in added:
                if db.execute("INSERT OR IGNORE INTO points(digest, point_id) VALUES (?, ?)",
                              (digest, pid)).rowcount:
                    points, checksum = points + 1, checksum ^ uuid.UUID(pid).int
            for pid in removed:
                if db.execute("DELETE FROM points WHERE digest=? AND point_id=?",
                              (digest, pid)).rowcount:
                    points, checksum = points - 1, checksum ^ uuid.UUID(pid).int
            db.execute(
                "INSERT INTO people(digest, user, points, checksum, pending_points,"
                " pending_checksum) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(digest) DO UPDATE"
                " SET user=excluded.user, points=excluded.points, checksum=excluded.checksum,"
                " pending_points=excluded.pending_points,"
                " pending_checksum=excluded.pending_checksum",
                (digest, user, points, _hex(checksum), old[0], _hex(old[1])))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def done(self, digest: str) -> None:
        """The write recorded by :meth:`begin` reached the store."""
        self._conn().execute("UPDATE people SET pending_points=NULL, pending_checksum=NULL"
                             " WHERE digest=?", (digest,))

    def reset(self, digest: str, user: str, point_ids: Iterable[str]) -> None:
        """Record exactly ``point_ids`` for ``digest`` (a store adopted or rebuilt)."""
        ids = sorted(set(point_ids))
        db = self._conn()
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("DELETE FROM points WHERE digest=?", (digest,))
            db.executemany("INSERT INTO points(digest, point_id) VALUES (?, ?)",
                           [(digest, pid) for pid in ids])
            db.execute("INSERT OR REPLACE INTO people(digest, user, points, checksum)"
                       " VALUES (?, ?, ?, ?)", (digest, user, len(ids), _hex(checksum_of(ids))))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    # -- checking -----------------------------------------------------------------------
    def verify(self, record: ShardRecord, point_ids: Sequence[str]) -> str | None:
        """What is wrong when a store holding ``point_ids`` should match ``record``;
        None when it matches (its current or, after an interrupted write, its pending
        state: then the record is brought in line with the store)."""
        points, checksum = len(point_ids), _hex(checksum_of(point_ids))
        if (points, checksum) == (record.points, record.checksum):
            if record.pending_points is not None:
                self.done(record.digest)
            return None
        if (points, checksum) == (record.pending_points, record.pending_checksum):
            self.reset(record.digest, record.user, point_ids)  # the write never landed
            return None
        if points == record.points:
            return (f"it holds {points} memories as recorded, but not the same ones (their"
                    " ids do not match the manifest's checksum)")
        return f"it holds {points} memories where the manifest recorded {record.points}"


def file_problem(directory: Path, collection: str) -> str | None:
    """What is wrong with the files of the store in ``directory`` (without opening it):
    None when they look whole."""
    if not directory.is_dir():
        return "the store directory is missing"
    meta = directory / "meta.json"
    try:
        names = json.loads(meta.read_text(encoding="utf-8")).get("collections", {})
    except FileNotFoundError:
        return "meta.json is missing"
    except (OSError, ValueError, AttributeError) as exc:
        return f"meta.json is damaged ({type(exc).__name__})"
    if collection not in names:
        return f"meta.json no longer names the collection {collection!r}"
    storage = directory / "collection" / collection / "storage.sqlite"
    try:
        with storage.open("rb") as f:
            header = f.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return f"{storage.relative_to(directory)} is missing"
    except OSError as exc:
        return f"{storage.relative_to(directory)} cannot be read ({exc})"
    if header != SQLITE_HEADER:
        return (f"{storage.relative_to(directory)} is damaged: it is not a SQLite database"
                " (its header is overwritten)")
    return None
