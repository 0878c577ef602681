"""Moments in the person's hands, over HTTP (the console and ``omoide moments``).

    GET  /v1/moments                                  everyone's (admin)
    GET  /v1/users/{user}/moments                     upcoming, said lately, the switch
    POST /v1/users/{user}/moments/{key}/cancel        never say that one (?every=true:
                                                      nor any repetition of it, a
                                                      daily reminder or a birthday)
    PUT  /v1/users/{user}/moments/switch   {"off": true|false}
    PUT  /v1/users/{user}/moments/quiet_hours   {"quiet_hours": "21:00-06:30" | null}
                                                      their own quiet hours (null: the
                                                      config's again)

A person's token reaches their own; 503 while moments are not running (the server is
starting, or ``moments.enabled`` is false).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from fastapi import APIRouter, HTTPException, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from omoide.server.auth import require_admin, require_user
from omoide.server.inputs import UserId

if TYPE_CHECKING:
    from omoide.moments.delivery import MomentScheduler
    from omoide.moments.serving import MomentsService


class MomentsServer(Protocol):
    @property
    def moments(self) -> MomentsService: ...


class Switch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    off: bool


class OwnQuietHours(BaseModel):
    model_config = ConfigDict(extra="forbid")
    quiet_hours: str | None = Field(max_length=40, description="HH:MM-HH:MM (may cross "
                                    "midnight); null: the config's quiet hours again.")


def moments_router(server: MomentsServer) -> APIRouter:
    router = APIRouter()

    def scheduler() -> MomentScheduler:
        found = server.moments.scheduler
        if found is None:
            raise HTTPException(503, "moments are not running (the server is starting, "
                                     "or moments.enabled is false)")
        return found

    @router.get("/v1/moments")
    async def everyone(request: Request) -> dict[str, Any]:
        require_admin(request)
        s = scheduler()
        return {"people": [await s.listing(p) for p in sorted(set(await s.people()))]}

    @router.get("/v1/users/{user}/moments")
    async def listing(request: Request, user: UserId) -> dict[str, Any]:
        require_user(request, user)
        return await scheduler().listing(user)

    @router.post("/v1/users/{user}/moments/{key}/cancel")
    async def cancel(request: Request, user: UserId, key: str,
                     every: bool = Query(False, description="Also every repetition "
                                         "(a daily reminder, a birthday)."),
                     ) -> dict[str, Any]:
        principal = require_user(request, user)
        by = "admin" if principal.is_admin else user
        if not await scheduler().cancel(user, key, f"console ({by})", every=every):
            raise HTTPException(404, f"{user} has no moment {key!r} to come")
        return {"user": user, "cancelled": key, "every": every}

    @router.put("/v1/users/{user}/moments/switch")
    async def switch(request: Request, user: UserId, body: Switch) -> dict[str, Any]:
        require_user(request, user)
        s = scheduler()
        await s.switch_off(user, body.off)
        return {"user": user, "off": (await s.listing(user))["off"]}

    @router.put("/v1/users/{user}/moments/quiet_hours")
    async def quiet_hours(request: Request, user: UserId,
                          body: OwnQuietHours) -> dict[str, Any]:
        require_user(request, user)
        s = scheduler()
        try:
            await s.set_quiet_hours(user, body.quiet_hours)
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        quiet, whose = await s.quiet_hours(user)
        return {"user": user, "quiet_hours": str(quiet), "quiet_hours_from": whose}

    return router
