"""The ASGI middleware every request passes before any route sees it.

In order, for HTTP requests and WebSocket handshakes:

1. **Host** (not for device paths): an unknown Host header gets 421 (DNS rebinding).
2. **Origin** (not for device paths): a browser Origin that is not the server's own
   or an allowed one gets 403. No CORS header is ever added here.
3. **Declared size**: a ``Content-Length`` over the route's limit gets 413 at once,
   before a byte of the body is read.
4. **Who** (management routes): a Bearer token, a session cookie, or a loopback
   address when ``server.auth.loopback_exempt`` is on; none gets 401. A person's
   principal outside :func:`omoide.server.auth.person_may_call` gets 403. A request
   signed in by cookie that changes something must carry a matching Origin (or
   ``Sec-Fetch-Site: same-origin``): cookies alone never authorise a write (CSRF).
5. **Content type** (omoide's own routes): a body must be JSON (or JSON lines for an
   import, WAV for an audio turn); ``text/plain``, forms and the rest get 415 —
   the types a cross-site form can send without asking.
6. **Streamed size**: a chunked body is counted as it arrives; past the limit the
   request is answered 413 and the app reads no more.

Refusals are JSON ``{"error": ...}`` and, when the request had a body, close the
connection (so an unread body is never drained or buffered). Responses of omoide's
own routes carry ``X-Content-Type-Options: nosniff``, ``Cache-Control: no-store``
and a ``frame-ancestors 'none'`` policy.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any

from omoide.config import AuthSettings, LimitSettings
from omoide.database.connection import DatabaseUnavailable
from omoide.server.auth import (
    PRINCIPAL_KEY,
    PUBLIC_ROUTES,
    SESSION_COOKIE,
    BrowserSessions,
    Principal,
    is_device_path,
    person_may_call,
)
from omoide.server.limits import body_rule, media_type
from omoide.server.openai_shapes import error_body, is_openai_path
from omoide.server.origins import HostPolicy
from omoide.server.tokens import TokenStorage, TokenStore, TokenStoreUnavailable

log = logging.getLogger("omoide.server.guard")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_SECURITY_HEADERS = [(b"x-content-type-options", b"nosniff"),
                     (b"cache-control", b"no-store"),
                     (b"content-security-policy", b"frame-ancestors 'none'"),
                     (b"referrer-policy", b"no-referrer")]


@dataclass(frozen=True)
class GuardConfig:
    """What the guard needs to know about one server."""

    tokens: TokenStorage
    sessions: BrowserSessions
    hosts: HostPolicy
    auth: AuthSettings
    limits: LimitSettings
    device_prefixes: tuple[str, ...]


class _Refusal(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None,
                 ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


class _BodyTooLarge(Exception):
    """Raised into the app when a streamed body passes its limit (already answered)."""


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", ()):
        name = raw_name.decode("latin-1").lower()
        value = raw_value.decode("latin-1")
        if name in out:   # a repeated Host or Origin no longer parses: refused
            value = f"{out[name]}{'; ' if name == 'cookie' else ', '}{value}"
        out[name] = value
    return out


def _is_loopback(host: str | None) -> bool:
    if not host:
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class RequestGuard:
    """See the module docstring. Wraps the whole app (``app.add_middleware``)."""

    def __init__(self, app: ASGIApp, config: GuardConfig) -> None:
        self.app = app
        self.config = config

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        path: str = scope.get("path", "")
        method = scope.get("method", "GET") if scope["type"] == "http" else "GET"
        device = is_device_path(path, self.config.device_prefixes)
        has_body = self._has_body(headers)
        try:
            rule = body_rule(path, self.config.limits, device_path=device)
            if not device:
                self._check_host_and_origin(headers)
            if scope["type"] == "http":
                self._check_declared_size(headers, rule.max_bytes, rule.setting)
            if not device:
                principal = await self._checked_principal(scope, headers, method, path)
                if principal is not None:
                    scope[PRINCIPAL_KEY] = principal
                if scope["type"] == "http" and has_body and method in _UNSAFE_METHODS:
                    self._check_content_type(headers, rule.content_types)
        except _Refusal as refusal:
            log.info("refused %s %r from %s: %s", method, path[:200],
                     (scope.get("client") or ("?",))[0], refusal.message)
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await _send_json(send, refusal.status, _refusal_body(path, refusal),
                             refusal.headers, close=has_body)
            return
        if scope["type"] == "websocket":
            await self.app(scope, receive, send)
            return
        await self._call_counting(scope, receive, send, rule.max_bytes, rule.setting,
                                  secure_headers=not device)

    # -- checks ------------------------------------------------------------------------
    @staticmethod
    def _has_body(headers: dict[str, str]) -> bool:
        length = headers.get("content-length", "").strip()
        return "transfer-encoding" in headers or (bool(length) and length != "0")

    def _check_host_and_origin(self, headers: dict[str, str]) -> None:
        hosts = self.config.hosts
        host = headers.get("host")
        if not hosts.host_allowed(host):
            raise _Refusal(421, f"unknown Host {host!r}: this server answers only its own "
                                "names (add it to server.auth.allowed_hosts)")
        origin = headers.get("origin")
        if origin is not None and not hosts.origin_allowed(origin, host):
            raise _Refusal(403, f"cross-origin request from {origin[:100]!r} refused (allow "
                                "an origin in server.auth.allowed_origins)")

    @staticmethod
    def _check_declared_size(headers: dict[str, str], limit: int, setting: str) -> None:
        raw = headers.get("content-length")
        if raw is None:
            return
        if not raw.strip().isdigit():
            raise _Refusal(400, "invalid Content-Length")
        if int(raw) > limit:
            raise _Refusal(413, f"request body larger than {limit} bytes ({setting})")

    def _principal(self, scope: Scope, headers: dict[str, str], method: str, path: str,
                   ) -> Principal | None:
        public = method in PUBLIC_ROUTES.get(path, frozenset())
        principal = self._authenticate(scope, headers, required=not public)
        if public:
            return principal
        if principal is None:
            raise _Refusal(401, "authentication required: send Authorization: Bearer "
                                "<token> (the admin token: omoide token show --config "
                                "FILE)", {"www-authenticate": 'Bearer realm="omoide"'})
        if principal.role == "person" and principal.user is not None and \
                not person_may_call(principal.user, method, path):
            raise _Refusal(403, f"a token of user {principal.user!r} may not call "
                                f"{method} {path[:200]}")
        if principal.via == "session" and method in _UNSAFE_METHODS \
                and "origin" not in headers and headers.get("sec-fetch-site") != "same-origin":
            raise _Refusal(403, "a change made with a browser session must come from this "
                                "server's page (Origin missing)")
        return principal

    async def _checked_principal(self, scope: Scope, headers: dict[str, str], method: str,
                                 path: str) -> Principal | None:
        """:meth:`_principal`; a check against a shared database runs in a worker thread
        (a slow database must not hold the event loop), and one that does not answer
        refuses the request with 503 saying so."""
        try:
            if isinstance(self.config.tokens, TokenStore):   # the data dir's files
                return self._principal(scope, headers, method, path)
            return await asyncio.to_thread(self._principal, scope, headers, method, path)
        except (TokenStoreUnavailable, DatabaseUnavailable) as exc:
            log.warning("token check failed: %s", exc)
            raise _Refusal(503, f"{exc}: tokens cannot be checked just now, try again"
                                " shortly", {"retry-after": "5"}) from exc

    def _authenticate(self, scope: Scope, headers: dict[str, str], *, required: bool,
                      ) -> Principal | None:
        authorization = headers.get("authorization")
        if authorization is not None:
            scheme, _, token = authorization.partition(" ")
            match = (self.config.tokens.identify(token.strip())
                     if scheme.lower() == "bearer" else None)
            if match is None:
                if required:
                    raise _Refusal(401, "invalid token", {"www-authenticate":
                                                          'Bearer error="invalid_token"'})
                return None
            return Principal(match.role, match.user, "token", match)
        session_key = self._session_cookie(headers)
        if session_key is not None:
            credential = self.config.sessions.lookup(session_key)
            if credential is not None:
                return Principal(credential.role, credential.user, "session", credential)
        client = scope.get("client")
        if self.config.auth.loopback_exempt and client and _is_loopback(client[0]):
            return Principal("admin", None, "loopback")
        return None

    @staticmethod
    def _session_cookie(headers: dict[str, str]) -> str | None:
        raw = headers.get("cookie")
        if not raw:
            return None
        cookie: SimpleCookie = SimpleCookie()
        try:
            cookie.load(raw)
        except Exception:  # noqa: BLE001 - a malformed cookie is no session
            return None
        morsel = cookie.get(SESSION_COOKIE)
        return morsel.value if morsel is not None else None

    @staticmethod
    def _check_content_type(headers: dict[str, str], allowed: frozenset[str] | None) -> None:
        if allowed is None:
            return
        kind = media_type(headers.get("content-type"))
        if kind not in allowed:
            raise _Refusal(415, f"content type {kind or 'missing'!s} is not accepted here;"
                                f" send {' or '.join(sorted(allowed))}")

    # -- the streamed body ---------------------------------------------------------------
    async def _call_counting(self, scope: Scope, receive: Receive, send: Send, limit: int,
                             setting: str, *, secure_headers: bool) -> None:
        received = 0
        response_started = False
        refused = False

        async def counting_receive() -> Message:
            nonlocal received, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    refused = True
                    if not response_started:
                        too_large = _Refusal(413, f"request body larger than {limit} bytes"
                                                  f" ({setting})")
                        await _send_json(send, 413, _refusal_body(scope.get("path", ""),
                                                                  too_large), close=True)
                    raise _BodyTooLarge()
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal response_started
            if refused:
                return   # the 413 is the answer; whatever the app says after it is dropped
            if message["type"] == "http.response.start":
                response_started = True
                if secure_headers:
                    names = {name.lower() for name, _ in message.get("headers", [])}
                    message = dict(message)
                    message["headers"] = [*message.get("headers", []),
                                          *((n, v) for n, v in _SECURITY_HEADERS
                                            if n not in names)]
            await send(message)

        try:
            await self.app(scope, counting_receive, guarded_send)
        except _BodyTooLarge:
            pass
        except Exception:
            if not refused:
                raise


def _refusal_body(path: str, refusal: _Refusal) -> dict[str, Any]:
    """``{"error": message}``, or OpenAI's error shape on the OpenAI-compatible routes
    (their clients read ``error.message``)."""
    if is_openai_path(path):
        return error_body(refusal.status, refusal.message)
    return {"error": refusal.message}


async def _send_json(send: Send, status: int, body: dict[str, Any],
                     headers: dict[str, str] | None = None, *, close: bool = False) -> None:
    payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
    raw_headers = [(b"content-type", b"application/json"),
                   (b"content-length", str(len(payload)).encode()),
                   *_SECURITY_HEADERS,
                   *((k.encode("latin-1"), v.encode("latin-1"))
                     for k, v in (headers or {}).items())]
    if close:
        raw_headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": payload})
