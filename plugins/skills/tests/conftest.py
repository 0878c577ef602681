"""Fixtures: real local HTTP servers (uvicorn in a thread, port 0), a port nobody serves."""

import socket

import pytest

from omoide.testing.http import serve_app_fixture

serve_app = serve_app_fixture()


@pytest.fixture
def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (nothing listens there)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
