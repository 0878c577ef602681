"""A data dir holds transcripts and memories: only its owner may read it.

:func:`keep_private` is called when a process claims a data dir
(:class:`omoide.data_dir_owner.DataDirClaim`): it sets the process umask to ``0o077``,
so every file the process creates from then on (the journal and its WAL, traces, the
forget-undo file, the stores' files, whoever opens them) is ``0600`` and every
directory ``0700`` whatever the umask the process was started with, and it takes the
group and other bits off what is already in the data dir (files an older version or
another umask left readable), saying so in one log line.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger("omoide.private_files")

PRIVATE_UMASK = 0o077


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
