"""Browser sign-in: trade a token for an HttpOnly cookie.

    POST   /v1/session   body {"token": T} (or Authorization: Bearer T) -> cookie
    GET    /v1/session   who this request acts as ({"signed_in": false} when nobody)
    DELETE /v1/session   sign out (ends the cookie's session)

The web page (and a later console's EventSource streams, which cannot set headers)
authenticate with the cookie: ``HttpOnly`` (scripts cannot read it),
``SameSite=Strict`` (other sites' requests do not carry it), ``Secure`` over HTTPS.
The guard adds the CSRF check: a change made with a cookie must carry this server's
Origin.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request, Response
from pydantic import BaseModel, ConfigDict, Field, StrictStr

from omoide.server.auth import PRINCIPAL_KEY, SESSION_COOKIE, Principal, SessionStore
from omoide.server.tokens import TokenStore


class SessionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    token: StrictStr | None = Field(None, max_length=200,
                                    description="An admin or person token (or send it as "
                                                "Authorization: Bearer).")


def session_router(tokens: TokenStore, sessions: SessionStore) -> APIRouter:
    router = APIRouter(tags=["session"])

    @router.post("/v1/session")
    async def sign_in(request: Request, response: Response,
                      body: SessionIn | None = None) -> dict[str, Any]:
        token = body.token if body is not None else None
        if token is None:
            scheme, _, bearer = request.headers.get("authorization", "").partition(" ")
            token = bearer.strip() if scheme.lower() == "bearer" else None
        match = tokens.identify(token) if token else None
        if match is None:
            raise HTTPException(401, "invalid token")
        key = sessions.create(match)
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
        ended = sessions.end(key) if key else False
        response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
        return {"signed_in": False, "ended": ended}

    return router
