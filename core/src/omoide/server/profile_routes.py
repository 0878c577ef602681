"""HTTP routes for the profile (the same operations as ``omoide memory profile``).

    GET    /v1/users/{user}/profile                  the block's facts (?all=true: also
                                                     what is left out, and why)
    POST   /v1/users/{user}/profile                  {"text": ..., "category"?} adds a fact;
                                                     {"memory_id": ..., "category"?} puts a
                                                     memory in the profile
    DELETE /v1/users/{user}/profile/{memory_id}      forget it (?keep_memory=true: only
                                                     take it out of the profile)

Kept apart from :mod:`omoide.server.memory_routes`; the app mounts both.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Query
from pydantic import BaseModel, ConfigDict, Field

from omoide.memory.engine import MemoryEngine
from omoide.memory.profile import Category
from omoide.memory.records import to_json


class ProfileFactRequest(BaseModel):
    """A new profile fact, or an existing memory to put in the profile."""

    model_config = ConfigDict(extra="forbid")
    text: str | None = Field(None, max_length=200,
                             description="The fact in the person's words (「あなたは…」).")
    memory_id: str | None = Field(None, description="An existing memory to put in the profile.")
    category: Category | None = Field(None, description="Default: the classifier's.")


def profile_router(service: MemoryEngine) -> APIRouter:
    from omoide.memory.profile_edit import ProfileEditError, forget, mark, set_fact, view

    router = APIRouter()

    @router.get("/v1/users/{user}/profile")
    async def show(user: str, all_: bool = Query(False, alias="all")) -> dict[str, Any]:
        data = (await view(service, user)).to_json()
        if not all_:
            data = {k: data[k] for k in ("budget_chars", "chars", "facts")}
        return {"user": user, **data}

    @router.post("/v1/users/{user}/profile")
    async def add(user: str, body: ProfileFactRequest) -> dict[str, Any]:
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
        return {"user": user, "memory": to_json(m)}

    @router.delete("/v1/users/{user}/profile/{memory_id}")
    async def remove(user: str, memory_id: str, keep_memory: bool = False) -> dict[str, Any]:
        if not await forget(service, user, memory_id, keep_memory=keep_memory):
            raise HTTPException(404, f"no memory {memory_id} for user {user}")
        return {"user": user, "removed": memory_id, "kept_as_memory": keep_memory}

    return router
