"""Start-up checks of memory data: refuse to start over data that went missing.

Before the engine opens its journal and store, :class:`DataGuard` compares them with the
manifest (:mod:`omoide.memory.journal.manifest`):

- a journal file that is missing, or holds fewer exchanges than the manifest recorded,
  where the manifest says there were exchanges;
- a zero-length journal, or one SQLite finds damaged (``PRAGMA quick_check``, or not a
  database at all);
- a persistent vector store with no memories (no embedder fingerprint) where the
  manifest says memories were stored (a deleted Qdrant directory, a changed path);
- one person's store missing or damaged, where the store keeps a record of what each
  person's store holds (:meth:`omoide.components.VectorStore.check_people`).

Each is a :class:`DataProblem` naming the file; the engine refuses to start with all of
them (:class:`DataMissing`) unless ``memory.accept_data_loss`` (``omoide serve
--accept-data-loss``) says to go on. Then a damaged or empty journal is moved aside
(``<file>.damaged-<time>``), the exchanges SQLite can still read are copied into a new
journal, and the manifest is rewritten from what is there; a person whose store is lost
stays *degraded* (their memory calls are refused, saying so) until ``omoide memory
repair --user U`` rebuilds it from the journal's extraction results.
"""

from __future__ import annotations

import logging
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from omoide.components import VectorStore
from omoide.components.store import repair_hint
from omoide.errors import OmoideError
from omoide.memory.journal.manifest import DataManifest, JournalRecord, StoreRecord
from omoide.memory.journal.storage import ExchangeJournal

log = logging.getLogger("omoide.memory.data")

ACCEPT_FLAG = "--accept-data-loss"
SALVAGE_CHUNK = 64
PROBLEMS_LISTED = 20
"""At most this many problems are listed when a start is refused (then how many more)."""


@dataclass(frozen=True)
class DataProblem:
    """Memory data that is missing or damaged: which file (or store location), what is
    wrong."""

    file: str
    what: str
    journal_unreadable: bool = False
    """The journal file must be moved aside before a new one can be opened."""
    person: str | None = None
    """Whose memories these were, when the problem is one person's store."""

    def __str__(self) -> str:
        return f"{self.file}: {self.what}"


class DataMissing(OmoideError):
    """Memory data that existed is missing or damaged; omoide will not start over it."""

    def __init__(self, problems: list[DataProblem], manifest_path: Path) -> None:
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems[:PROBLEMS_LISTED])
        if len(problems) > PROBLEMS_LISTED:
            lines += f"\n  - ... and {len(problems) - PROBLEMS_LISTED} more"
        people = [p.person for p in problems if p.person is not None]
        per_person = ""
        if people:
            per_person = (
                f" For a person's store: {repair_hint(people[0])}"
                + (" (the same for each person listed)" if len(people) > 1 else "")
                + f"; with {ACCEPT_FLAG} omoide starts and their memory is unavailable"
                " (said in /healthz, the console and their turns) until it is repaired.")
        super().__init__(
            "memory data is missing or damaged, so omoide will not start over it:\n"
            f"{lines}\n"
            "how to proceed: put the file back (from a backup, or fix the path in the"
            f" config) and start again; or start with `omoide serve {ACCEPT_FLAG}` (or"
            " memory.accept_data_loss: true) to go on with what is there: a damaged journal"
            " is moved aside and the exchanges that can still be read are copied into a new"
            f" one, and {manifest_path} is rewritten.{per_person}")


def _location(store: VectorStore) -> str:
    for attr in ("path", "url", "location"):
        value = getattr(store.config, attr, None)
        if value:
            return str(value)
    return store.name


def _persistent(store: VectorStore) -> bool:
    """Whether ``store`` keeps its data across starts (a ``:memory:`` location does not,
    whatever its class can do)."""
    return store.capabilities.persistent and \
        getattr(store.config, "location", None) != ":memory:"


class DataGuard:
    """Checks one data directory's journal and store against its manifest."""

    def __init__(self, data_dir: Path, journal_path: Path) -> None:
        self.data_dir = Path(data_dir)
        self.journal_path = Path(journal_path)
        self.manifest = DataManifest.load(self.data_dir)
        self._journal_count = 0

    @property
    def manifest_path(self) -> Path:
        return DataManifest.path_in(self.data_dir)

    def journal_problems(self) -> list[DataProblem]:
        """What is wrong with the journal file (before the engine opens it)."""
        path = self.journal_path
        seen = self.manifest.journal.exchanges if self.manifest else 0
        if not path.exists():
            if seen > 0:
                return [DataProblem(str(path), f"the journal is missing; {self.manifest_path} says"
                                    f" it held at least {seen} exchanges")]
            return []
        if path.stat().st_size == 0:
            return [DataProblem(str(path), "the journal is empty (0 bytes)"
                                + (f"; {self.manifest_path} says it held at least {seen}"
                                   " exchanges" if seen else ""), journal_unreadable=True)]
        damage, count = _inspect(path)
        if damage is not None:
            return [DataProblem(str(path), f"the journal is damaged: {damage}",
                                journal_unreadable=True)]
        self._journal_count = count
        if count < seen:
            return [DataProblem(str(path), f"the journal holds {count} exchanges, fewer than the"
                                f" {seen} {self.manifest_path} recorded (replaced by an older"
                                " copy, or cut short?)")]
        return []

    async def store_problems(self, store: VectorStore) -> list[DataProblem]:
        """What is wrong with the vector store (after it started, before it is opened):
        the whole store gone, or else each person's store that is missing or damaged."""
        if not _persistent(store):
            return []
        if self.manifest is not None and self.manifest.store.memories_stored \
                and await store.fingerprint() is None:
            return [DataProblem(_location(store),
                                f"the vector store ({store.name}) holds no memories, but"
                                f" {self.manifest_path} says memories were stored in"
                                f" {self.manifest.store.location or 'it'}")]
        return [DataProblem(d.where, f"the memories of {d.user!r}"
                            + (f" ({d.memories} recorded)" if d.memories else "")
                            + f" are lost: {d.what}", person=d.user)
                for d in await store.check_people()]

    def set_aside(self, problems: list[DataProblem]) -> Path | None:
        """Move an unreadable journal (and its -wal/-shm) aside; returns where it went."""
        if not any(p.journal_unreadable for p in problems):
            return None
        stamp = datetime.now().strftime("%Y%m%dT%H%M%S")
        moved = self.journal_path.with_name(f"{self.journal_path.name}.damaged-{stamp}")
        for suffix in ("-wal", "-shm"):
            side = self.journal_path.with_name(self.journal_path.name + suffix)
            if side.exists():
                side.rename(moved.with_name(moved.name + suffix))
        self.journal_path.rename(moved)
        log.warning("journal %s set aside as %s", self.journal_path, moved)
        return moved

    def salvage(self, damaged: Path, journal: ExchangeJournal) -> int:
        """Copy the exchanges SQLite can still read from ``damaged`` into ``journal``."""
        saved = salvage_exchanges(damaged, journal)
        log.warning("%d exchanges salvaged from %s into %s", saved, damaged, journal.path)
        return saved

    def record(self, journal_count: int, store: VectorStore, memories_stored: bool) -> None:
        """Rewrite the manifest from what is there now (never lowering what it says,
        unless the data was accepted as lost)."""
        old = self.manifest
        self.manifest = DataManifest(
            JournalRecord(self.journal_path.name, journal_count),
            StoreRecord(store.name, _location(store),
                        memories_stored and _persistent(store)))
        if old is not None:
            self.manifest.store.memories_stored |= old.store.memories_stored
        self.manifest.save(self.data_dir)

    def accepted(self) -> None:
        """Forget what the manifest said (the data was accepted as lost)."""
        self.manifest = None


def _inspect(path: Path) -> tuple[str | None, int]:
    """(what is damaged or None, how many exchanges) of a journal file."""
    try:
        db = sqlite3.connect(path)
    except sqlite3.Error as exc:
        return f"{type(exc).__name__}: {exc}", 0
    try:
        rows = [str(r[0]) for r in db.execute("PRAGMA quick_check").fetchall()]
        if rows != ["ok"]:
            return "; ".join(rows[:3]), 0
        has_table = db.execute("SELECT COUNT(*) FROM sqlite_master WHERE type='table' AND"
                               " name='exchanges'").fetchone()[0]
        count = db.execute("SELECT COUNT(*) FROM exchanges").fetchone()[0] if has_table else 0
        return None, int(count)
    except sqlite3.Error as exc:
        return f"{type(exc).__name__}: {exc}", 0
    finally:
        db.close()


_SALVAGED_COLUMNS = ("id", "user", "user_text", "assistant_text", "at", "at_ts", "session_id",
                     "consumed_at", "attempts", "last_error")


def salvage_exchanges(damaged: Path, journal: ExchangeJournal) -> int:
    """Copy every exchange row still readable in ``damaged`` into the open ``journal``,
    reading in rowid ranges so one bad page costs only the rows on it. Rows an unfinished
    batch held wait for extraction again."""
    try:
        src = sqlite3.connect(damaged)
        top = src.execute("SELECT MAX(rowid) FROM exchanges").fetchone()[0] or 0
    except sqlite3.Error as exc:
        log.warning("nothing can be read from %s: %s", damaged, exc)
        return 0
    select = f"SELECT {', '.join(_SALVAGED_COLUMNS)} FROM exchanges WHERE rowid BETWEEN ? AND ?"
    rows: list[tuple[object, ...]] = []
    lost = 0
    try:
        for low in range(0, int(top) + 1, SALVAGE_CHUNK):
            high = low + SALVAGE_CHUNK - 1
            try:
                rows += src.execute(select, (low, high)).fetchall()
                continue
            except sqlite3.Error:
                pass
            for rowid in range(low, high + 1):  # row by row around the bad page
                try:
                    rows += src.execute(select, (rowid, rowid)).fetchall()
                except sqlite3.Error:
                    lost += 1
    finally:
        src.close()
    if lost:
        log.warning("%s: %d rows cannot be read", damaged, lost)
    return journal.restore_rows(_SALVAGED_COLUMNS, rows)
