"""Fixtures: real local HTTP servers (uvicorn in a thread, port 0)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest


class LocalServer:
    """A real HTTP server (uvicorn) on 127.0.0.1 with a free port, in a thread."""

    def __init__(self, app: object) -> None:
        import uvicorn

        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0,
                                                    log_level="warning", lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("test server did not start")
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=5)


@pytest.fixture
def serve_app() -> Iterator[Callable[[object], str]]:
    """Start an ASGI app on a real local port; returns its base URL. Stopped after the test."""
    servers: list[LocalServer] = []

    def start(app: object) -> str:
        server = LocalServer(app)
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()
