"""A data dir holds transcripts and memories: only its owner may read it.

:func:`keep_private` is called when a process claims a data dir
(:class:`omoide.data_dir_owner.DataDirClaim`): it sets the process umask to ``0o077``,
so every file the process creates from then on (the journal and its WAL, traces, the
forget-undo file, the stores' files, whoever opens them) is ``0600`` and every
directory ``0700`` whatever the umask the process was started with, and it takes the
group and other bits off what is already in the data dir (files an older version or
another umask left readable), saying so in one log line.

The code that creates a file in the data dir does not rely on that umask: a command
that never claimed the dir, or a library that set its own, would leave it readable.
It creates the file private itself, with :func:`connect_private` (an SQLite database:
SQLite gives its ``-wal``, ``-shm`` and ``-journal`` files the database file's mode)
or :func:`open_private` (a JSON lines log, a state file written then renamed), and its
folders with :func:`private_folder`. Files a library makes for itself (Qdrant's local
storage, Chroma's folders) are covered by the umask and by :func:`keep_private` at the
next claim.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
from pathlib import Path
from typing import IO, Any, Literal

log = logging.getLogger("omoide.private_files")

PRIVATE_UMASK = 0o077
PRIVATE_FILE_MODE = 0o600
PRIVATE_FOLDER_MODE = 0o700

_FLAGS = {"a": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
          "a+": os.O_RDWR | os.O_CREAT | os.O_APPEND,
          "w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC}


def private_folder(path: Path) -> Path:
    """Make ``path`` (and missing parents) as a folder only its owner may open; an
    existing folder is left as it is (:func:`keep_private` fixes those)."""
    Path(path).mkdir(mode=PRIVATE_FOLDER_MODE, parents=True, exist_ok=True)
    return Path(path)


def open_private(path: Path, mode: Literal["a", "a+", "w", "ab", "wb"] = "a",
                 encoding: str | None = "utf-8") -> IO[Any]:
    """``open(path, mode)`` for appending or writing, the file created ``0600``
    whatever the umask (an existing file keeps its mode). Its folder is made private
    when missing."""
    private_folder(Path(path).parent)
    fd = os.open(path, _FLAGS[mode.replace("b", "")], PRIVATE_FILE_MODE)
    try:
        if "b" in mode:
            return os.fdopen(fd, mode)
        return os.fdopen(fd, mode, encoding=encoding)
    except BaseException:
        os.close(fd)
        raise


def connect_private(path: Path, **kwargs: Any) -> sqlite3.Connection:
    """``sqlite3.connect(path, **kwargs)`` on a database file created ``0600`` first,
    so the database and the ``-wal``/``-shm``/``-journal`` files SQLite makes beside
    it (with the database file's mode) are private whatever the umask."""
    private_folder(Path(path).parent)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, PRIVATE_FILE_MODE))
    connection: sqlite3.Connection = sqlite3.connect(path, **kwargs)
    return connection


def keep_private(data_dir: Path) -> int:
    """Make ``data_dir`` and everything in it private to its owner, and keep what this
    process creates private; returns how many entries had to change."""
    os.umask(PRIVATE_UMASK)
    changed = 0
    for path in _entries(Path(data_dir)):
        try:
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode) or not stat.S_IMODE(mode) & 0o077:
                continue
            os.chmod(path, stat.S_IMODE(mode) & 0o700)
            changed += 1
        except OSError as exc:   # not ours, or gone meanwhile: say so and carry on
            log.warning("could not make %s private: %s", path, exc)
    if changed:
        log.warning("made %d files and folders in %s private: group or others could "
                    "read them", changed, data_dir)
    return changed


def _entries(root: Path) -> list[Path]:
    out = [root]
    for folder, dirs, files in os.walk(root, followlinks=False):
        base = Path(folder)
        out.extend(base / name for name in dirs)
        out.extend(base / name for name in files)
    return out
