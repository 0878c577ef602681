"""Fixtures: real local HTTP servers (uvicorn in a thread, port 0)."""

from omoide.testing.http import serve_app_fixture

serve_app = serve_app_fixture()
