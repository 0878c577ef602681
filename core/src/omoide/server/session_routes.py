"""Browser sign-in: trade a token for an HttpOnly cookie.

    POST   /v1/session   body {"token": T} (or Authorization: Bearer T) -> cookie
    GET    /v1/session   who this request acts as ({"signed_in": false} when nobody)
    DELETE /v1/session   sign out (ends the cookie's session)

The web page (and a later console's EventSource streams, which cannot set headers)
authenticate with the cookie: ``HttpOnly`` (scripts cannot read it),
``SameSite=Strict`` (other sites' requests do not carry it), ``Secure`` over HTTPS.
The guard adds the CSRF check: a change made with a cookie must carry this server's
Origin.

Signing in is bounded, so that no token can crowd out another person's sessions: a
token keeps at most ``server.limits.sessions_per_token`` sessions (its own oldest go
first, see :class:`omoide.server.auth.SessionStore`), and sign-ins are limited per
source address (``sign_ins_per_source``: every attempt, failed ones included) and per
token (``sign_ins_per_token``), each within a moving minute: 429 with ``Retry-After``
beyond. The constants below are those settings' defaults. With the tokens on the
shared database (``database.url``) the sign-ins are counted there too
(:mod:`omoide.server.shared_limits`): a client spreading its attempts over several
workers meets the one limit.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, HTTPException, Request, Response
from pydantic import BaseModel, ConfigDict, Field, StrictStr

from omoide.server.auth import (
    PRINCIPAL_KEY,
    SESSION_COOKIE,
    BrowserSessions,
    Principal,
    SessionTableFull,
)
from omoide.server.limits import source_key
from omoide.server.shared_limits import SharedCounters, SharedWindow
from omoide.server.tokens import TokenMatch, TokenStorage, TokenStore

SIGN_INS_PER_SOURCE = 30
"""Sign-in attempts one source address (an IPv6 /64) may make in a minute."""
SIGN_INS_PER_TOKEN = 20
"""Sign-ins one token may make in a minute, from anywhere."""
WINDOW_S = 60.0


class SessionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    token: StrictStr | None = Field(None, max_length=200,
                                    description="An admin or person token (or send it as "
                                                "Authorization: Bearer).")


class MovingWindow:
    """At most ``limit`` hits per key within the last ``window_s`` seconds."""

    def __init__(self, limit: int, window_s: float = WINDOW_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.window_s = window_s
        self._clock = clock
        self._hits: dict[str, deque[float]] = {}
        self._swept_at = clock()

    def hit(self, key: str) -> float | None:
        """Count one hit of ``key``: None when allowed, else the seconds until the next
        one will be (a refused hit is not counted)."""
        now = self._clock()
        if now - self._swept_at >= self.window_s:   # forget keys gone quiet
            self._swept_at = now
            for k in [k for k, q in self._hits.items() if q[-1] <= now - self.window_s]:
                del self._hits[k]
        hits = self._hits.setdefault(key, deque())
        while hits and hits[0] <= now - self.window_s:
            hits.popleft()
        if len(hits) >= self.limit:
            return hits[0] + self.window_s - now
        hits.append(now)
        return None


async def _refuse_if_limited(window: MovingWindow | SharedWindow, key: str, what: str,
                             ) -> None:
    """429 past the limit; a shared window is counted off the event loop."""
    wait = await window.hit_async(key) if isinstance(window, SharedWindow) else window.hit(key)
    if wait is not None:
        raise HTTPException(429, f"too many sign-ins {what}; try again later",
                            headers={"Retry-After": str(max(1, math.ceil(wait)))})


async def _identify(tokens: TokenStorage, token: str) -> TokenMatch | None:
    """The token's match: from the data dir's files here, from the shared database in a
    worker thread (as the guard checks tokens)."""
    if isinstance(tokens, TokenStore):
        return tokens.identify(token)
    return await asyncio.to_thread(tokens.identify, token)


def _sign_in_windows(tokens: TokenStorage, per_source: int, per_token: int,
                     ) -> tuple[MovingWindow | SharedWindow, MovingWindow | SharedWindow]:
    """The two sign-in limits where the tokens are: in this process beside the data
    dir's files, in the shared database beside its token tables (every worker counts
    into the same rows, on the token store's pool)."""
    from omoide.server.postgres_tokens import PostgresTokenStore
    if isinstance(tokens, PostgresTokenStore):
        counters = SharedCounters(tokens.transaction)
        return (counters.window("sign_ins_per_source", per_source, WINDOW_S),
                counters.window("sign_ins_per_token", per_token, WINDOW_S))
    return MovingWindow(per_source), MovingWindow(per_token)


def session_router(tokens: TokenStorage, sessions: BrowserSessions, *,
                   per_source: int = SIGN_INS_PER_SOURCE,
                   per_token: int = SIGN_INS_PER_TOKEN) -> APIRouter:
    router = APIRouter(tags=["session"])
    by_source, by_token = _sign_in_windows(tokens, per_source, per_token)

    @router.post("/v1/session")
    async def sign_in(request: Request, response: Response,
                      body: SessionIn | None = None) -> dict[str, Any]:
        await _refuse_if_limited(by_source, source_key(request.client.host if request.client
                                                       else None), "from this address")
        token = body.token if body is not None else None
        if token is None:
            scheme, _, bearer = request.headers.get("authorization", "").partition(" ")
            token = bearer.strip() if scheme.lower() == "bearer" else None
        match = await _identify(tokens, token) if token else None
        if match is None:
            raise HTTPException(401, "invalid token")
        await _refuse_if_limited(by_token, match.fingerprint, "with this token")
        try:   # in the shared database: off the event loop, as the token check
            key = (sessions.create(match) if isinstance(tokens, TokenStore)
                   else await asyncio.to_thread(sessions.create, match))
        except SessionTableFull as exc:
            raise HTTPException(503, f"{exc}; try again later",
                                headers={"Retry-After": "60"}) from None
        response.set_cookie(SESSION_COOKIE, key, max_age=int(sessions.lifetime_s),
                            httponly=True, samesite="strict", path="/",
                            secure=request.url.scheme == "https")
        return {"signed_in": True, "role": match.role, "user": match.user,
                "expires_in_s": int(sessions.lifetime_s)}

    @router.get("/v1/session")
    async def who(request: Request) -> dict[str, Any]:
        principal = request.scope.get(PRINCIPAL_KEY)
        if not isinstance(principal, Principal):
            return {"signed_in": False}
        return {"signed_in": True, **principal.describe()}

    @router.delete("/v1/session")
    async def sign_out(request: Request, response: Response) -> dict[str, Any]:
        key = request.cookies.get(SESSION_COOKIE)
        ended = False
        if key:
            ended = (sessions.end(key) if isinstance(tokens, TokenStore)
                     else await asyncio.to_thread(sessions.end, key))
        response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
        return {"signed_in": False, "ended": ended}

    return router
