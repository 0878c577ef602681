"""A real Chroma server on this machine (`chroma run`, shipped with chromadb), for tests and
benchmarks that need a store several processes share.

    with LocalChromaServer(tmp_dir) as server:
        config = {"use": "chroma", "host": "127.0.0.1", "port": server.port}

It picks a free port, waits until the server answers its heartbeat, and stops it (then
kills it if it does not stop) on exit. The server's output goes to ``server.log`` in
the data directory.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

import httpx


class ChromaServerFailed(RuntimeError):
    """`chroma run` is missing, exited, or did not answer in time."""


def chroma_command() -> str | None:
    """The `chroma` command of this environment, if installed."""
    beside_python = Path(sys.executable).with_name("chroma")
    return str(beside_python) if beside_python.exists() else shutil.which("chroma")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalChromaServer:
    """`chroma run --path DATA/db` on 127.0.0.1 and a free port."""

    def __init__(self, data_dir: Path, port: int | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.host = "127.0.0.1"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    @property
    def log_path(self) -> Path:
        return self.data_dir / "server.log"

    def start(self, timeout_s: float = 60.0) -> LocalChromaServer:
        command = chroma_command()
        if command is None:
            raise ChromaServerFailed("the `chroma` command (from the chromadb package) is not"
                                     " installed")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen(
                [command, "run", "--path", str(self.data_dir / "db"), "--host", self.host,
                 "--port", str(self.port)], stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if httpx.get(f"http://{self.host}:{self.port}/api/v2/heartbeat",
                             timeout=1).is_success:
                    return self
            except httpx.TransportError:
                pass
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise ChromaServerFailed("chroma server did not come up: "
                                         + self.log_path.read_text(errors="replace")[-2000:])
            time.sleep(0.1)

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def __enter__(self) -> LocalChromaServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
