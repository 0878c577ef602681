"""The spill file: exchanges the journal could not take, kept until it can.

When a journal write fails (disk full, the database locked or damaged), the exchange is
appended here as one JSON line, flushed and fsync'd, and the turn says so. Once the
journal works again — a later turn, the recovery probe, or the next start — every
spilled exchange is written to the journal (idempotent on the exchange id) and the file
removed. A line cut short by a crash while it was written is skipped with a warning.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from omoide.private_files import open_private
from omoide.types import Exchange

log = logging.getLogger("omoide.memory.spill")


def exchange_to_json(ex: Exchange) -> str:
    return json.dumps({"id": ex.id, "user": ex.user, "user_text": ex.user_text,
                       "assistant_text": ex.assistant_text, "at": ex.at.isoformat(),
                       "session_id": ex.session_id}, ensure_ascii=False)


def exchange_from_json(line: str) -> Exchange:
    d = json.loads(line)
    return Exchange(str(d["id"]), str(d["user"]), str(d["user_text"]),
                    str(d["assistant_text"]), datetime.fromisoformat(str(d["at"])),
                    None if d.get("session_id") is None else str(d["session_id"]))


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class SpillFile:
    """JSON lines of exchanges waiting for the journal (thread-safe)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def append(self, ex: Exchange) -> None:
        """Keep ``ex`` durably (written, flushed and fsync'd before returning)."""
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            created = not self.path.exists()
            with open_private(self.path, "a") as f:
                f.write(exchange_to_json(ex) + "\n")
                f.flush()
                os.fsync(f.fileno())
            if created:
                _fsync_dir(self.path.parent)

    def count(self) -> int:
        with self._lock:
            return len(self._read())

    def _read(self) -> list[Exchange]:
        if not self.path.exists():
            return []
        out: list[Exchange] = []
        text = self.path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                out.append(exchange_from_json(line))
            except (ValueError, KeyError, TypeError) as exc:
                log.warning("%s line %d cannot be read (cut short by a crash?): %s",
                            self.path, number, exc)
        return out

    def replay(self, write: Callable[[Exchange], None]) -> int:
        """Write every spilled exchange with ``write`` (a journal append), then remove the
        file; returns how many. If ``write`` fails, the file stays as it was."""
        with self._lock:
            spilled = self._read()
            for ex in spilled:
                write(ex)
            if self.path.exists():
                self.path.unlink()
                _fsync_dir(self.path.parent)
            return len(spilled)
