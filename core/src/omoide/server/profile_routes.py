"""HTTP routes for the profile (the same operations as ``omoide memory profile``).

    GET    /v1/users/{user}/profile                  the block's facts (?all=true: also
                                                     what is left out, and why)
    POST   /v1/users/{user}/profile                  {"text": ..., "category"?} adds a fact;
                                                     {"memory_id": ..., "category"?} puts a
                                                     memory in the profile
    DELETE /v1/users/{user}/profile/{memory_id}      forget it (?keep_memory=true: only
                                                     take it out of the profile)

Who may call them is decided as for the memory routes (:mod:`omoide.server.auth`: the
guard, then :func:`require_user` here): the admin for everyone, a person's token for
that person only. Kept apart from :mod:`omoide.server.memory_routes`; the app mounts
both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, HTTPException, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from omoide.memory.control import json_shapes
from omoide.memory.engine import MemoryEngine
from omoide.memory.facts.profile import Category
from omoide.server.auth import require_user
from omoide.server.inputs import MemoryId, MemoryText, UserId


class ProfileFactRequest(BaseModel):
    """A new profile fact, or an existing memory to put in the profile."""

    model_config = ConfigDict(extra="forbid")
    text: MemoryText | None = Field(None, description="The fact in the person's words"
                                    " (「あなたは…」; one line, no control characters).")
    memory_id: MemoryId | None = Field(None, description="An existing memory to put in the"
                                       " profile.")
    category: Category | None = Field(None, description="Default: the classifier's.")


def profile_router(service: MemoryEngine, *,
                   ready: Callable[[], bool] | None = None) -> APIRouter:
    """The routes over ``service``; ``ready`` (when given) gates them with 503 while the
    server is still starting."""
    from omoide.memory.control.profile_edit import ProfileEditError, forget, mark, set_fact, view

    def check_ready() -> None:
        if ready is not None and not ready():
            raise HTTPException(503, "omoide is still starting; try again in a moment",
                                headers={"Retry-After": "2"})

    router = APIRouter()

    @router.get("/v1/users/{user}/profile")
    async def show(request: Request, user: UserId,
                   all_: bool = Query(False, alias="all")) -> dict[str, Any]:
        require_user(request, user)
        check_ready()
        data = (await view(service, user)).to_json()
        if not all_:
            data = {k: data[k] for k in ("budget_chars", "chars", "facts")}
        return {"user": user, **data}

    @router.post("/v1/users/{user}/profile")
    async def add(request: Request, user: UserId, body: ProfileFactRequest) -> dict[str, Any]:
        require_user(request, user)
        check_ready()
        if (body.text is None) == (body.memory_id is None):
            raise HTTPException(400, "give either text or memory_id")
        category = body.category.value if body.category else None
        try:
            if body.memory_id is not None:
                m = await mark(service, user, body.memory_id, True, category)
            else:
                m = await set_fact(service, user, body.text or "", category)
        except ProfileEditError as exc:
            code = 404 if str(exc).startswith("no memory") else 400
            raise HTTPException(code, str(exc)) from exc
        return {"user": user, "memory": json_shapes.memory_json(m)}

    @router.delete("/v1/users/{user}/profile/{memory_id}")
    async def remove(request: Request, user: UserId, memory_id: MemoryId,
                     keep_memory: bool = False) -> dict[str, Any]:
        require_user(request, user)
        check_ready()
        if not await forget(service, user, memory_id, keep_memory=keep_memory):
            raise HTTPException(404, f"no memory {memory_id} for user {user}")
        return {"user": user, "removed": memory_id, "kept_as_memory": keep_memory}

    return router
