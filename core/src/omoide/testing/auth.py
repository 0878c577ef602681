"""Getting through omoide's authentication in tests.

Every management route needs a token and a known Host, so a test that calls them
says who it is::

    from omoide.testing.auth import admin_client, admin_headers, person_headers

    app = create_app(settings, registry)
    with admin_client(app) as client:                 # TestClient as the admin
        client.get("/v1/users/alice/memories")

    with TestClient(app, base_url=BASE_URL) as client:
        client.get("/v1/traces", headers=person_headers(app, "alice"))

    httpx.get(f"{base_url}/v1/traces", headers=admin_headers(settings))   # a real server

``admin_headers`` and ``person_headers`` accept the app (anything built by
:func:`omoide.server.app.create_app` or passed through :func:`protect`), the
:class:`omoide.config.Settings`, or the data dir. Starlette's ``TestClient`` and
``httpx.ASGITransport`` send ``Host: testserver``/``test`` by default, which the Host
check refuses (421): use :data:`BASE_URL` (``http://localhost``). Its
``websocket_connect`` always sends ``Host: testserver`` for a relative path: pass a full
URL (``ws://localhost/...``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omoide.config import ServerSettings, Settings
from omoide.server.tokens import TokenStore

BASE_URL = "http://localhost"
"""A base URL whose Host the guard accepts (``localhost``)."""


def token_store(target: Any) -> TokenStore:
    """The :class:`TokenStore` of an app, a Settings or a data dir."""
    state = getattr(target, "state", None)
    tokens = getattr(state, "tokens", None) if state is not None else None
    if isinstance(tokens, TokenStore):
        return tokens
    if isinstance(target, Settings):
        return TokenStore(target.data_dir)
    if isinstance(target, str | Path):
        return TokenStore(Path(target))
    raise TypeError(f"cannot find omoide's tokens in {type(target).__name__}: pass the app "
                    "(create_app), the Settings or the data dir")


def admin_token(target: Any) -> str:
    """The admin token (created if the server has not started yet)."""
    return token_store(target).admin_token()


def admin_headers(target: Any) -> dict[str, str]:
    """``{"Authorization": "Bearer <admin token>"}``."""
    return {"Authorization": f"Bearer {admin_token(target)}"}


def person_headers(target: Any, user: str) -> dict[str, str]:
    """Headers with a new token of ``user`` (who may see only ``user``'s data)."""
    token, _ = token_store(target).create_person_token(user, label="test")
    return {"Authorization": f"Bearer {token}"}


def admin_client(app: Any, **kwargs: Any) -> Any:
    """A Starlette ``TestClient`` for ``app`` that calls as the admin from
    ``http://localhost`` (use it as a context manager to run the app's lifespan)."""
    from fastapi.testclient import TestClient

    headers = {**admin_headers(app), **kwargs.pop("headers", {})}
    return TestClient(app, base_url=kwargs.pop("base_url", BASE_URL), headers=headers,
                      **kwargs)


def protect(app: Any, data_dir: Path, server: ServerSettings | None = None) -> Any:
    """Put a bare FastAPI app (a router under test) behind omoide's guard, as
    :func:`omoide.server.app.create_app` does; returns the app."""
    from omoide.server.app import install_guard

    install_guard(app, server or ServerSettings(), TokenStore(data_dir))
    return app
