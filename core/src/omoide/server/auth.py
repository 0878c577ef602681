"""Who is calling, and what they may call.

Three kinds of route:

- **device paths**: the prefixes device components declare in ``Device.public_paths``
  (``/xiaozhi/``); the device authenticates its clients itself (device tokens,
  pairing) and may answer CORS there;
- **public routes** (:data:`PUBLIC_ROUTES`): the web page's static shell, its script,
  style sheet and icon (:data:`omoide.server.console_assets.CONSOLE_ASSETS`),
  ``/healthz`` (component states, no personal data) and ``/v1/session`` (trading a
  token for a browser session needs no session);
- **management routes**: everything else, including routes a device adds outside its
  public paths and any route added later. They need a :class:`Principal`.

A principal is the admin (the admin token, a browser session made from it, or a
loopback request when ``server.auth.loopback_exempt`` is on) or a person (a person
token or its session). The admin may call everything. A person may call only
:func:`person_may_call` routes, and the handlers narrow those to that person
(:func:`require_user`): ``/v1/users/{that person}/...``, turns as that person, their
own traces and pending exchanges. Anything not listed is admin-only, so a new route
is closed to people until someone opens it on purpose.
"""

from __future__ import annotations

import re
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Literal, Protocol

from fastapi import HTTPException, Request

from omoide.server.console_assets import CONSOLE_ASSETS
from omoide.server.openai_shapes import MODEL_PATH_PREFIX
from omoide.server.tokens import TokenMatch, TokenStorage

PUBLIC_ROUTES: dict[str, frozenset[str]] = {
    "/": frozenset({"GET", "HEAD"}),
    "/favicon.ico": frozenset({"GET", "HEAD"}),
    "/healthz": frozenset({"GET", "HEAD"}),
    "/v1/session": frozenset({"GET", "HEAD", "POST", "DELETE"}),
    **{path: frozenset({"GET", "HEAD"}) for path in CONSOLE_ASSETS},
}
"""Routes answered without a principal (each still checks Host, Origin and body size)."""

SESSION_COOKIE = "omoide_session"
PRINCIPAL_KEY = "omoide.principal"
"""The ASGI scope key the guard stores the request's :class:`Principal` under."""

_USER_PATH = re.compile(r"/v1/users/([^/]+)(?:/.*)?")
_PERSON_ROUTES: dict[str, frozenset[str]] = {
    "/v1/users": frozenset({"GET", "HEAD"}),      # the console's people: only themselves
    "/v1/turns": frozenset({"POST"}),
    "/v1/turns/audio": frozenset({"POST"}),
    "/v1/traces": frozenset({"GET", "HEAD"}),
    "/v1/memory/pending": frozenset({"GET", "HEAD"}),
    "/v1/memory/quarantine": frozenset({"GET", "HEAD"}),
    "/v1/chat/completions": frozenset({"POST"}),  # as the token's person (openai_routes)
    "/v1/models": frozenset({"GET", "HEAD"}),
}


@dataclass(frozen=True)
class Principal:
    """Who a request acts as. ``user`` is set for a person; ``via`` says how they got in."""

    role: Literal["admin", "person"]
    user: str | None
    via: Literal["token", "session", "loopback"]
    credential: TokenMatch | None = None

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    def may_act_for(self, user: str) -> bool:
        """Whether this principal may read or change ``user``'s data."""
        return self.is_admin or self.user == user

    def describe(self) -> dict[str, object]:
        return {"role": self.role, "user": self.user, "via": self.via}


def person_may_call(user: str, method: str, path: str) -> bool:
    """Whether a person's principal may call ``method path`` at all (the handlers then
    check the body's or the query's user)."""
    allowed = _PERSON_ROUTES.get(path)
    if allowed is not None:
        return method in allowed
    if path.startswith(MODEL_PATH_PREFIX):    # one of the models /v1/models lists
        return method in _PERSON_ROUTES["/v1/models"]
    match = _USER_PATH.fullmatch(path)
    return match is not None and match.group(1) == user


def is_device_path(path: str, prefixes: tuple[str, ...]) -> bool:
    return any(path.startswith(p) for p in prefixes)


def device_path_problem(prefix: str) -> str | None:
    """Why a device may not declare ``prefix`` public, or None when it may."""
    if not prefix.startswith("/") or len(prefix) < 2:
        return "a public path must start with '/' and name a folder such as '/xiaozhi/'"
    if not prefix.endswith("/"):
        return "a public path must end with '/' (it is a prefix of a folder)"
    for core in ("/v1/", "/healthz", "/docs", "/openapi.json", "/redoc", "/favicon.ico"):
        if core.startswith(prefix) or prefix.startswith(core):
            return f"it would open omoide's own {core.rstrip('/')} routes to anyone"
    return None


def current_principal(request: Request) -> Principal:
    """The request's principal (set by the guard); 401 when there is none.

    Fails closed: a router used without the guard answers nothing.
    """
    principal = request.scope.get(PRINCIPAL_KEY)
    if not isinstance(principal, Principal):
        raise HTTPException(401, "authentication required")
    return principal


def require_user(request: Request, user: str) -> Principal:
    """The principal, if it may act for ``user``; 403 otherwise."""
    principal = current_principal(request)
    if not principal.may_act_for(user):
        raise HTTPException(403, f"this token may act only for user {principal.user!r}")
    return principal


def visible_user(request: Request, user: str | None) -> str | None:
    """Whose rows a listing route (traces, pending, quarantine) may show: ``user`` (None:
    everyone's) for the admin; a person's own id for a person's token, which may not
    ask for anyone else's (403)."""
    principal = current_principal(request)
    if principal.is_admin:
        return user
    if user is not None and user != principal.user:
        raise HTTPException(403, f"this token may see only user {principal.user!r}")
    return principal.user


def require_admin(request: Request) -> Principal:
    principal = current_principal(request)
    if not principal.is_admin:
        raise HTTPException(403, "this route needs the admin token")
    return principal


SESSIONS_PER_TOKEN = 10
"""Browser sessions one token keeps at most (a phone, a laptop, ... and some spare)."""


@dataclass
class _Session:
    credential: TokenMatch
    expires_at: float


class SessionTableFull(Exception):
    """Every session slot holds a live session of some token: no room for another."""


class BrowserSessions(Protocol):
    """What the guard and the sign-in use of browser sessions: :class:`SessionStore` (in
    this process) or :class:`omoide.server.postgres_tokens.PostgresSessionStore`
    (shared by every worker)."""

    @property
    def lifetime_s(self) -> float: ...
    def create(self, credential: TokenMatch) -> str: ...
    def lookup(self, key: str) -> TokenMatch | None: ...
    def end(self, key: str) -> bool: ...


class SessionStore:
    """Browser sessions: a random cookie value -> the token it was made from.

    In memory (a restart signs browsers out). A session ends when it expires, when it
    is deleted, or as soon as its token is rotated or revoked. A token keeps at most
    ``per_token`` sessions: signing in again ends that token's own oldest, never anyone
    else's. At most ``capacity`` sessions in all; beyond, a new one is refused
    (:class:`SessionTableFull`) rather than pushing out another person's.
    """

    def __init__(self, tokens: TokenStorage, lifetime_s: float, capacity: int = 10_000,
                 per_token: int = SESSIONS_PER_TOKEN) -> None:
        self._tokens = tokens
        self._lifetime_s = lifetime_s
        self._capacity = capacity
        self._per_token = per_token
        self._sessions: OrderedDict[str, _Session] = OrderedDict()

    @property
    def lifetime_s(self) -> float:
        return self._lifetime_s

    def create(self, credential: TokenMatch) -> str:
        """A new session for ``credential``; raises :class:`SessionTableFull`."""
        now = time.monotonic()
        for key in [k for k, s in self._sessions.items() if s.expires_at <= now]:
            del self._sessions[key]
        own = [k for k, s in self._sessions.items()
               if s.credential.fingerprint == credential.fingerprint]
        for key in own[:max(0, len(own) - self._per_token + 1)]:   # oldest first
            del self._sessions[key]
        if len(self._sessions) >= self._capacity:
            for key in [k for k, s in self._sessions.items()
                        if not self._tokens.still_valid(s.credential)]:
                del self._sessions[key]            # sessions of revoked tokens
        if len(self._sessions) >= self._capacity:
            raise SessionTableFull(f"{len(self._sessions)} browser sessions are open")
        key = secrets.token_urlsafe(32)
        self._sessions[key] = _Session(credential, now + self._lifetime_s)
        return key

    def lookup(self, key: str) -> TokenMatch | None:
        session = self._sessions.get(key)
        if session is None:
            return None
        if session.expires_at <= time.monotonic() or not self._tokens.still_valid(
                session.credential):
            del self._sessions[key]
            return None
        return session.credential

    def end(self, key: str) -> bool:
        return self._sessions.pop(key, None) is not None
