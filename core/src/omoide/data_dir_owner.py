"""Which omoide process owns a data dir, and where a running server can be reached.

The store and the journal of a data dir are used by one process at a time (Qdrant
local mode allows no second client). That process — ``omoide serve``, or an
``omoide memory`` command working on the store directly — holds an exclusive lock on
``<data_dir>/omoide.lock`` (``flock``; the kernel releases it when the process ends,
even by ``kill -9``, so a lock is never stale). The lock file says who holds it.

Claiming a data dir makes it private (:func:`omoide.private_files.keep_private`): the
dir 0700, its files 0600, and this process's umask 0o077 from then on.

A server also writes ``<data_dir>/server.json`` (its URL and pid, mode 0600) once it
listens, and removes it when it stops. A ``server.json`` whose lock is free was left
by a server that died: :func:`find_server` ignores and removes it. ``omoide memory``
uses :func:`find_server` to talk to the running server's HTTP API instead of opening
the store.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from omoide.errors import OmoideError
from omoide.private_files import keep_private

LOCK_FILE = "omoide.lock"
SERVER_FILE = "server.json"

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no locking, no discovery
    fcntl = None  # type: ignore[assignment]


@dataclass(frozen=True)
class RunningServer:
    """A server that holds a data dir: where to reach it."""

    url: str
    pid: int
    started_at: str


class DataDirBusy(OmoideError):
    """Another process (not a reachable server) holds the data dir."""

    def __init__(self, data_dir: Path, holder: dict[str, Any]) -> None:
        self.holder = holder
        who = holder.get("command") or "another omoide process"
        pid = holder.get("pid")
        super().__init__(f"{data_dir} is in use by {who}" + (f" (pid {pid})" if pid else "")
                         + "; wait for it to finish or stop it")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_private(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f)
    os.replace(tmp, path)


class DataDirClaim:
    """An exclusive claim on a data dir, held until :meth:`release` (or process exit)."""

    def __init__(self, data_dir: Path, fd: int | None) -> None:
        self.data_dir = data_dir
        self._fd = fd
        self._published = False

    @classmethod
    def acquire(cls, data_dir: Path, command: str, *, wait_s: float = 2.0) -> DataDirClaim:
        """Claim ``data_dir`` for ``command`` (``"omoide serve"``) and make it private;
        raises :class:`DataDirBusy` naming the holder when another process has it."""
        data_dir = Path(data_dir)
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        keep_private(data_dir)
        if fcntl is None:  # pragma: no cover
            return cls(data_dir, None)
        path = data_dir / LOCK_FILE
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    server = _published_server(data_dir)
                    holder = _read_json(path)
                    if server is not None:
                        holder = {**holder, "command": f"the omoide server at {server.url}",
                                  "pid": server.pid}
                    raise DataDirBusy(data_dir, holder) from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "command": command,
                                  "since": datetime.now().astimezone().isoformat()}
                                 ).encode(), 0)
        return cls(data_dir, fd)

    def publish_server(self, url: str) -> None:
        """Write ``server.json`` so ``omoide memory`` finds this server."""
        _write_private(self.data_dir / SERVER_FILE, {
            "url": url, "pid": os.getpid(),
            "started_at": datetime.now().astimezone().isoformat()})
        self._published = True

    def release(self) -> None:
        """Remove ``server.json`` (if this claim wrote it) and give the data dir up."""
        if self._published:
            with contextlib.suppress(FileNotFoundError):
                (self.data_dir / SERVER_FILE).unlink()
            self._published = False
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)   # closing releases the flock
            self._fd = None

    def __enter__(self) -> DataDirClaim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _published_server(data_dir: Path) -> RunningServer | None:
    data = _read_json(data_dir / SERVER_FILE)
    url, pid = data.get("url"), data.get("pid")
    if not isinstance(url, str) or not isinstance(pid, int):
        return None
    return RunningServer(url, pid, str(data.get("started_at", "")))


def find_server(data_dir: Path) -> RunningServer | None:
    """The server holding ``data_dir``, or None when no process holds it.

    A ``server.json`` left by a dead server is removed. Raises :class:`DataDirBusy`
    when a process other than a server (another ``omoide memory`` command working on
    the store) holds it.
    """
    data_dir = Path(data_dir)
    path = data_dir / LOCK_FILE
    if fcntl is None or not path.exists():  # pragma: no cover - nothing ever ran here
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            server = _published_server(data_dir)
            if server is not None:
                return server
            holder = _read_json(path)
            if "serve" in str(holder.get("command", "")):
                # a server that has the lock but is not listening yet
                return RunningServer("", int(holder.get("pid") or 0), "")
            raise DataDirBusy(data_dir, holder) from None
        with contextlib.suppress(FileNotFoundError):
            (data_dir / SERVER_FILE).unlink()   # stale: its server is gone
        return None
    finally:
        os.close(fd)   # releases the shared lock, if taken
