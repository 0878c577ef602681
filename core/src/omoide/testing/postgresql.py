"""A throwaway PostgreSQL cluster for tests: Debian's binaries, a temp dir, a free port.

``initdb`` and ``pg_ctl`` from ``/usr/lib/postgresql/<version>/bin`` (Debian's
``postgresql`` package; ``./dev.sh test`` installs it), a cluster in a temporary
directory, no system service. ``initdb`` refuses to run as root, so as root the
cluster belongs to the ``postgres`` user and the commands run through
``runuser -u postgres --``. :meth:`ThrowawayPostgres.stop` stops it (``pg_ctl -m
immediate``) and removes the directory.

When PostgreSQL cannot be started this raises :class:`PostgresUnavailable` with what
failed: tests that need it fail, they are not skipped — unless a developer sets
``OMOIDE_TEST_SKIP_POSTGRESQL=1`` on a machine without PostgreSQL (see
:data:`SKIP_ENV`).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

SKIP_ENV = "OMOIDE_TEST_SKIP_POSTGRESQL"
"""Set to 1 to skip (not fail) the PostgreSQL tests on a machine without PostgreSQL."""


class PostgresUnavailable(RuntimeError):
    """The throwaway PostgreSQL could not be started (the message says why and how)."""


def find_bin_dir() -> Path:
    """The newest ``/usr/lib/postgresql/*/bin`` holding ``initdb``."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    if not found:
        raise PostgresUnavailable(
            "no PostgreSQL server binaries (/usr/lib/postgresql/*/bin/initdb): install"
            " Debian's postgresql package (./dev.sh test does), or set"
            f" {SKIP_ENV}=1 to skip these tests")
    return Path(found[-1]).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ThrowawayPostgres:
    """One temporary cluster; ``url`` connects as the superuser ``postgres``."""

    def __init__(self) -> None:
        self.bin_dir = find_bin_dir()
        self.root = Path(tempfile.mkdtemp(prefix="omoide-pg-"))
        self.data = self.root / "pg"
        self.run_dir = self.root / "run"
        self.port = _free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._as_root = os.geteuid() == 0

    def _cmd(self, *args: str) -> list[str]:
        tool = [str(self.bin_dir / args[0]), *args[1:]]
        return ["runuser", "-u", "postgres", "--", *tool] if self._as_root else tool

    def _run(self, *args: str) -> None:
        done = subprocess.run(self._cmd(*args), capture_output=True, text=True, check=False)
        if done.returncode != 0:
            log = self.run_dir / "log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise PostgresUnavailable(f"{args[0]} failed ({done.returncode}):"
                                      f" {done.stderr.strip()[-2000:]}\n{tail}")

    def start(self) -> ThrowawayPostgres:
        self.root.chmod(0o755)
        self.data.mkdir()
        self.run_dir.mkdir()
        if self._as_root:
            shutil.chown(self.data, "postgres")
            shutil.chown(self.run_dir, "postgres")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres",
                  "-E", "UTF8", "--no-sync")
        self.resume()
        return self

    def pause(self) -> None:
        """Stop the server, keeping its data (a database restart: :meth:`resume`)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def resume(self) -> None:
        """Start the server again on the same port, with the same data."""
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.run_dir / "log"), "-w",
                  "-o", f"-p {self.port} -k {self.run_dir} -c listen_addresses=127.0.0.1"
                        " -c fsync=off -c max_connections=200", "start")

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def create_database(self, name: str) -> str:
        """A fresh empty database; returns its URL (each test gets its own)."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"
