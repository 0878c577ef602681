"""Per-person indexes kept on disk, so a person's first turn after a start loads their
index instead of analysing every memory again.

Measured on the 2-core machine: a person of 100 memories takes about 70 ms to index
from the store and 2.5 ms to load (10,000 memories: 3.6 s against 2.0 s, so indexes
of more than ``max_memories`` are not kept: loading them saves little and writing
them holds the interpreter for seconds).

One SQLite file in the data directory (``indexes.sqlite3``, not a file per person):
a row per person with the index pickled and compressed, the number of memories it
holds, and a version. The version is a hash of the source of :mod:`omoide.memory` and
of the analyser's dictionary version, so any change to how indexes are made makes the
rows stale: they are rebuilt on the person's first turn, or before it in the background
after a start (``renew_outdated``, see :meth:`IndexCache.warm`). The index cache deletes
a person's row on every write of theirs whose index is in memory and saves it again
later; a write for a person whose index is not in memory is added to their row instead
when the row is small (one job on the cache's worker, queued like the delete it
replaces; see :data:`EXTEND_AT_MOST`), so their next first turn still loads it. Either
way a row is never older than the person's last write (see
:mod:`omoide.memory.index.cache` for when a loaded row is used).

The file holds pickles: it is written by omoide only, in the data directory, with
owner-only permissions — the same trust as the journal beside it.

Use from one thread (the index cache's worker): the connection is made there.
"""

from __future__ import annotations

import hashlib
import logging
import pickle
import sqlite3
import zlib
from collections.abc import Callable, Sequence
from functools import lru_cache
from importlib import metadata, resources
from pathlib import Path

from omoide.memory.index.person_index import UserIndex
from omoide.private_files import connect_private
from omoide.types import FloatArray, Memory

log = logging.getLogger("omoide.memory.index")

SCHEMA = """
CREATE TABLE IF NOT EXISTS indexes (
    user TEXT PRIMARY KEY,
    version TEXT NOT NULL,
    memories INTEGER NOT NULL,
    blob BLOB NOT NULL
)"""


EXTEND_AT_MOST = 500
"""Saved indexes of at most this many memories are brought up to date by a write while
they are not in memory (a load, the additions and a save: measured 8 ms for 100
memories and 41 ms for 450, on the worker every person's index load waits for); larger
ones are deleted."""


@lru_cache(maxsize=1)
def index_version() -> str:
    """Changes whenever the code or the dictionary that make an index change."""
    digest = hashlib.sha256()
    package = Path(str(resources.files("omoide.memory")))
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())
    for dist in ("sudachipy", "sudachidict-core", "numpy"):
        try:
            digest.update(f"{dist}={metadata.version(dist)}".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{dist}=none".encode())
    return digest.hexdigest()[:16]


class IndexStore:
    """Pickled per-person indexes in one SQLite file."""

    def __init__(self, path: Path, max_memories: int) -> None:
        self.path = Path(path)
        self.max_memories = max_memories
        self._db: sqlite3.Connection | None = None

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            # 0600 from its creation (and its -wal/-shm with it), whatever the umask
            self._db = connect_private(self.path, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # a cache: losing the last write is fine
            self._db.execute(SCHEMA)
        return self._db

    def load(self, user: str) -> tuple[UserIndex, int] | None:
        """``user``'s saved index and how many memories it holds, if current."""
        row = self._conn().execute("SELECT version, memories, blob FROM indexes WHERE user=?",
                                   (user,)).fetchone()
        if row is None or row[0] != index_version():
            return None
        try:
            idx = pickle.loads(zlib.decompress(row[2]))
        except Exception as exc:  # noqa: BLE001 - a bad row is rebuilt, never fatal
            log.warning("saved index of %s is unreadable (%s); rebuilding it", user, exc)
            self.delete(user)
            return None
        if not isinstance(idx, UserIndex) or idx.user != user:
            self.delete(user)
            return None
        return idx, int(row[1])

    def save(self, user: str, idx: UserIndex,
             unchanged: Callable[[], bool] = lambda: True) -> bool:
        """Keep ``idx``; False when it changed while it was pickled (``unchanged()``
        says so; another thread may change it, so the copy may be torn): nothing is
        written and the caller saves it later. An index of more than ``max_memories``
        is not kept (any older copy is dropped; True: nothing left to do)."""
        if len(idx) > self.max_memories:
            self.delete(user)
            return True
        try:
            blob = zlib.compress(pickle.dumps(idx, protocol=pickle.HIGHEST_PROTOCOL), 1)
        except RuntimeError:  # a dict or set changed size while pickled
            return False
        if not unchanged():
            return False
        self._conn().execute(
            "INSERT INTO indexes (user, version, memories, blob) VALUES (?, ?, ?, ?)"
            " ON CONFLICT(user) DO UPDATE SET version=excluded.version,"
            " memories=excluded.memories, blob=excluded.blob",
            (user, index_version(), len(idx), blob))
        return True

    def extend(self, user: str, memories: Sequence[tuple[Memory, FloatArray | None]]) -> bool:
        """Add (or re-index) ``memories`` in ``user``'s saved index, if there is a current
        one: their index need not be in memory for their saved copy to stay current.
        False when there is none (nothing to keep current) or the copy was dropped."""
        row = self._conn().execute("SELECT memories FROM indexes WHERE user=?",
                                   (user,)).fetchone()
        if row is None:
            return False
        if int(row[0]) > EXTEND_AT_MOST:
            self.delete(user)   # rebuilt on their next turn rather than block the worker
            return False
        loaded = self.load(user)
        if loaded is None:
            return False
        idx = loaded[0]
        for memory, vector in memories:
            idx.add(memory, vector)
        return self.save(user, idx) and len(idx) <= self.max_memories

    def recent(self, limit: int) -> list[tuple[str, int]]:
        """Up to ``limit`` people with a current saved index, (user, memories), the most
        recently written first (a write deletes the row; the next save adds it anew)."""
        rows = self._conn().execute(
            "SELECT user, memories FROM indexes WHERE version=? ORDER BY rowid DESC LIMIT ?",
            (index_version(), limit)).fetchall()
        return [(str(user), int(memories)) for user, memories in rows]

    def outdated(self) -> list[tuple[str, int]]:
        """People whose saved index an earlier version of omoide made, (user, memories),
        the most recently written first."""
        rows = self._conn().execute(
            "SELECT user, memories FROM indexes WHERE version<>? ORDER BY rowid DESC",
            (index_version(),)).fetchall()
        return [(str(user), int(memories)) for user, memories in rows]

    def delete(self, user: str) -> None:
        self._conn().execute("DELETE FROM indexes WHERE user=?", (user,))

    def clear(self) -> None:
        self._conn().execute("DELETE FROM indexes")

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
