"""The data manifest: what memory data a data directory holds, so a start can tell a
fresh directory from one whose data went missing.

``<data_dir>/manifest.json`` records the journal file and the most exchanges it was seen
to hold (a high-water mark: it only grows, and lags the journal, never leads it), and
whether memories were ever stored in the vector store (with the store's name and
location). It is written atomically (temporary file, fsync, rename).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from omoide.private_files import open_private

log = logging.getLogger("omoide.memory.manifest")

MANIFEST_NAME = "manifest.json"
FORMAT = 1


@dataclass
class JournalRecord:
    file: str
    exchanges: int = 0
    """The journal held at least this many exchanges."""


@dataclass
class StoreRecord:
    component: str = ""
    location: str = ""
    memories_stored: bool = False
    """A memory was written to the store at least once."""


@dataclass
class DataManifest:
    """What ``manifest.json`` says (see the module docstring)."""

    journal: JournalRecord
    store: StoreRecord = field(default_factory=StoreRecord)
    updated_at: str = ""

    @staticmethod
    def path_in(data_dir: Path) -> Path:
        return Path(data_dir) / MANIFEST_NAME

    @classmethod
    def load(cls, data_dir: Path) -> DataManifest | None:
        """The manifest of ``data_dir``; None when there is none (a fresh directory, or
        one from before manifests) or it cannot be read (logged)."""
        path = cls.path_in(data_dir)
        if not path.exists():
            return None
        try:
            data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            return cls(JournalRecord(str(data["journal"]["file"]),
                                     int(data["journal"].get("exchanges", 0))),
                       StoreRecord(str(data["store"].get("component", "")),
                                   str(data["store"].get("location", "")),
                                   bool(data["store"].get("memories_stored", False))),
                       str(data.get("updated_at", "")))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("%s cannot be read (%s); it will be written anew", path, exc)
            return None

    def save(self, data_dir: Path) -> None:
        """Write atomically: a crash leaves the old manifest or the new one."""
        self.updated_at = datetime.now().astimezone().isoformat()
        path = self.path_in(data_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        body = {"format": FORMAT, **asdict(self)}
        with open_private(tmp, "w") as f:
            json.dump(body, f, ensure_ascii=False, indent=2)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
