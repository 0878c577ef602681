"""Log lines carry no secrets and no terminal control sequences."""

from __future__ import annotations

import io
import logging
import logging.config
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn

from omoide.plugins import PluginRegistry
from omoide.server.app import create_app
from omoide.server.log_safety import (
    SafeFormatter,
    neutralise_controls,
    redact_secrets,
    uvicorn_log_config,
)
from omoide.testing.auth import admin_headers

from .conftest import settings_for


@pytest.mark.parametrize(("line", "secret"), [
    ('"WebSocket /xiaozhi/v1/?authorization=Bearer%20abc.def&device-id=aa" 101', "abc.def"),
    ('"GET /xiaozhi/ota/?token=s3cr3t&x=1 HTTP/1.1" 200', "s3cr3t"),
    ("GET /v1/x?access_token=zzz9&api_key=kkk7", "kkk7"),
    ("Authorization: Bearer eyJhbGciOi.x.y", "eyJhbGciOi"),
    ("made token omoide_user_AbCdEfGhIjKlMnOpQrStUv", "AbCdEfGhIjKlMnOpQrStUv"),
    ("path?authorization%3DBearer%2520zz42", "zz42"),
])
def test_secrets_are_redacted(line: str, secret: str) -> None:
    redacted = redact_secrets(line)
    assert secret not in redacted and "REDACTED" in redacted


def test_harmless_parameters_are_kept() -> None:
    assert redact_secrets("/v1/traces?user=alice&limit=3") == "/v1/traces?user=alice&limit=3"
    assert redact_secrets("monkey=1&tokens_used=3") == "monkey=1&tokens_used=3"


def test_control_characters_become_visible_escapes() -> None:
    assert neutralise_controls("a\x1b[31mb\x00c\nd\u2028") == "a\\x1b[31mb\\x00c\\x0ad\\u2028"
    assert neutralise_controls("line1\nline2", keep_newlines=True) == "line1\nline2"


def test_a_log_record_cannot_forge_lines_or_colour_the_terminal() -> None:
    record = logging.LogRecord("omoide.test", logging.WARNING, __file__, 1,
                               "recall for %s failed: %s", ("\x1b[2Jalice", "x\nFAKE ERROR"),
                               None)
    line = SafeFormatter("%(message)s").format(record)
    assert "\x1b" not in line and "\n" not in line
    assert line == "recall for \\x1b[2Jalice failed: x\\x0aFAKE ERROR"


@pytest.fixture
def logged_server(tmp_path: Path, registry: PluginRegistry) -> Iterator[tuple[str, io.StringIO,
                                                                              dict[str, str]]]:
    """A real uvicorn with ``omoide serve``'s logging set-up, its log in a buffer."""
    app = create_app(settings_for(tmp_path, registry), registry)
    config = uvicorn_log_config("INFO", root_level="DEBUG")
    buffer = io.StringIO()
    config["handlers"]["safe"] = {"class": "logging.StreamHandler", "formatter": "safe",
                                  "stream": buffer}
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_config=config,
                                           lifespan="on"))
    import threading

    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive()
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", buffer, admin_headers(app)
    finally:
        server.should_exit = True
        thread.join(5)
        logging.config.dictConfig({"version": 1, "disable_existing_loggers": False})


def test_tokens_never_reach_the_log(
        logged_server: tuple[str, io.StringIO, dict[str, str]]) -> None:
    url, log, admin = logged_server
    token = admin["Authorization"].removeprefix("Bearer ")
    httpx.get(f"{url}/v1/traces", headers=admin)
    httpx.get(f"{url}/v1/traces?token={token}")
    httpx.get(f"{url}/v1/traces", headers={"Authorization": "Bearer wrong-token-xyz"})
    httpx.post(f"{url}/v1/session", json={"token": token}, headers={"origin": url})
    httpx.get(f"{url}/healthz?authorization=Bearer%20{token}")
    text = log.getvalue()
    assert "/v1/traces" in text and "REDACTED" in text      # the access log was written
    assert token not in text and "wrong-token-xyz" not in text
