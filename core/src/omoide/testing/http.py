"""Real HTTP servers for tests: an ASGI app under uvicorn on 127.0.0.1, in a thread.

Plugins that talk to vendor APIs test against real local servers speaking the
protocol (an OpenAI-compatible chat server, a TTS server...), not mocks::

    from omoide.testing.http import LocalServer

    with LocalServer(app) as base_url:
        ...   # base_url == "http://127.0.0.1:<free port>"

or, in a conftest, ``serve_app = serve_app_fixture()``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Literal

import pytest


class LocalServer:
    """uvicorn serving ``app`` on a free port of 127.0.0.1 in a daemon thread."""

    def __init__(self, app: Any, *, lifespan: Literal["auto", "on", "off"] = "off") -> None:
        import uvicorn

        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0,
                                                    log_level="warning", lifespan=lifespan))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self, timeout_s: float = 10.0) -> str:
        """Start serving; returns the base URL once the socket accepts connections."""
        self.thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("test server did not start")
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=5)

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_app_fixture() -> Any:
    """A pytest fixture: ``serve_app(app) -> base URL``; every server stops after the test."""

    @pytest.fixture
    def serve_app() -> Iterator[Callable[[Any], str]]:
        servers: list[LocalServer] = []

        def start(app: Any) -> str:
            server = LocalServer(app)
            servers.append(server)
            return server.start()

        yield start
        for server in servers:
            server.stop()

    return serve_app
