"""HTTP routes for memory control (the same operations as ``omoide memory``).

    GET    /v1/users/{user}/memories            list (or ?q=TEXT to search, &limit=N)
    GET    /v1/users/{user}/memories/export     JSON lines
    POST   /v1/users/{user}/memories/import     JSON lines or a JSON list (?skip_invalid=true)
    GET    /v1/users/{user}/memories/{id}       one memory
    DELETE /v1/users/{user}/memories/{id}       forget it
    GET    /v1/memory/pending                   exchanges waiting for extraction
    POST   /v1/memory/extract                   body {"user": U}: extract now (admin)

Who may call them is decided by :mod:`omoide.server.auth` (the guard, then
:func:`require_user` here): the admin for everyone, a person's token for that person
only. The JSON shapes are :mod:`omoide.memory.wire`'s, which the CLI's local backend
speaks too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel, ConfigDict, Field

from omoide.config import LimitSettings
from omoide.memory import wire
from omoide.memory.engine import MemoryEngine
from omoide.server.auth import current_principal, require_admin, require_user
from omoide.server.inputs import MemoryId, QueryText, UserId


class ExtractRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user: UserId = Field(description="Whose pending exchanges to extract.")


def memory_router(service: MemoryEngine, *, limits: LimitSettings | None = None,
                  ready: Callable[[], bool] | None = None) -> APIRouter:
    """The routes over ``service``; ``ready`` (when given) gates them with 503 while the
    server is still starting."""
    limits = limits or LimitSettings()

    def check_ready() -> None:
        if ready is not None and not ready():
            raise HTTPException(503, "omoide is still starting; try again in a moment",
                                headers={"Retry-After": "2"})

    router = APIRouter()

    @router.get("/v1/users/{user}/memories")
    async def list_or_search(request: Request, user: UserId, q: QueryText | None = None,
                             limit: int = Query(10, ge=1, le=100)) -> dict[str, Any]:
        require_user(request, user)
        check_ready()
        if q:
            results = await service.search(user, q, limit=limit)
            return {"user": user, "query": q,
                    "memories": [wire.scored_memory_json(r) for r in results]}
        return {"user": user, "memories": [wire.memory_json(m)
                                           for m in await service.list_memories(user)]}

    @router.get("/v1/users/{user}/memories/export")
    async def export(request: Request, user: UserId) -> PlainTextResponse:
        require_user(request, user)
        check_ready()
        items = await service.export(user)
        return PlainTextResponse("".join(json.dumps(i, ensure_ascii=False) + "\n"
                                         for i in items), media_type="application/x-ndjson",
                                 headers={"Content-Disposition": "attachment; filename*=UTF-8''"
                                          + quote(f"{user}-memories.jsonl")})

    @router.post("/v1/users/{user}/memories/import", response_model=None)
    async def import_(request: Request, user: UserId,
                      skip_invalid: bool = False) -> JSONResponse:
        """Import an export. Every line is checked first; with any invalid line nothing
        is imported (422, every problem with its line number) unless ``skip_invalid``,
        which imports the valid ones and reports the rest. Memories already there (same
        id or same canonical text) are skipped, so importing twice is harmless."""
        require_user(request, user)
        check_ready()
        status, body = await wire.run_import(
            service, user, request.stream(), max_items=limits.max_import_items,
            max_bytes=limits.max_import_bytes, skip_invalid=skip_invalid)
        return JSONResponse(body, status)

    @router.get("/v1/users/{user}/memories/{memory_id}")
    async def show(request: Request, user: UserId, memory_id: MemoryId) -> dict[str, Any]:
        require_user(request, user)
        check_ready()
        m = await service.get(user, memory_id)
        if m is None:
            raise HTTPException(404, f"no memory {memory_id!r} for user {user!r}")
        return wire.memory_json(m)

    @router.delete("/v1/users/{user}/memories/{memory_id}")
    async def forget(request: Request, user: UserId, memory_id: MemoryId) -> dict[str, Any]:
        require_user(request, user)
        check_ready()
        if not await service.forget(user, memory_id):
            raise HTTPException(404, f"no memory {memory_id!r} for user {user!r}")
        return {"user": user, "forgotten": memory_id}

    @router.get("/v1/memory/pending")
    async def pending(request: Request, user: UserId | None = None) -> dict[str, Any]:
        """Pending exchanges per user; a person's token sees only that person's."""
        principal = current_principal(request)
        if not principal.is_admin:
            if user is not None and user != principal.user:
                raise HTTPException(403, f"this token may see only user {principal.user!r}")
            user = principal.user
        check_ready()
        return {"pending": [wire.pending_json(r) for r in await service.pending(user)]}

    @router.post("/v1/memory/extract")
    async def extract(request: Request, body: ExtractRequest) -> dict[str, Any]:
        require_admin(request)
        check_ready()
        return wire.extraction_json(await service.extract_now(body.user))

    return router
