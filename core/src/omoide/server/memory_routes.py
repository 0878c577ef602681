"""HTTP routes for memory control (the same operations as ``omoide memory``).

    GET    /v1/users/{user}/memories            list (or ?q=TEXT to search, &limit=N;
                                                &min_relevance=0.5: only relevant ones)
    GET    /v1/users/{user}/memories/export     JSON lines
    POST   /v1/users/{user}/memories/import     JSON lines or a JSON list (?skip_invalid=true)
    GET    /v1/users/{user}/memories/{id}       one memory
    DELETE /v1/users/{user}/memories/{id}       forget it
    GET    /v1/memory/pending                   exchanges waiting for extraction
    POST   /v1/memory/extract                   body {"user": U}: extract now (admin)

and, for quarantined exchanges, :func:`dead_letter_router`.

Who may call them is decided by :mod:`omoide.server.auth` (the guard, then
:func:`require_user` here): the admin for everyone, a person's token for that person
only. The JSON shapes are :mod:`omoide.memory.control.json_shapes`'s, which the CLI's local backend
speaks too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel, ConfigDict, Field, StrictStr

from omoide.config import LimitSettings
from omoide.memory.control import json_shapes
from omoide.memory.control.forget_undo import ForgetWithUndo
from omoide.memory.control.relevance import RelevanceJudge
from omoide.memory.engine import MemoryEngine
from omoide.server.auth import require_admin, require_user, visible_user
from omoide.server.inputs import MemoryId, QueryText, UserId


class ExtractRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user: UserId = Field(description="Whose pending exchanges to extract.")


def memory_router(service: MemoryEngine, *, limits: LimitSettings | None = None,
                  ready: Callable[[], bool] | None = None,
                  forget_undo: ForgetWithUndo | None = None,
                  relevance: RelevanceJudge | None = None) -> APIRouter:
    """The routes over ``service``; ``ready`` (when given) gates them with 503 while the
    server is still starting. With ``forget_undo``, a forget can be undone for a while
    (the answer carries the ticket); with ``relevance``, a search given
    ``min_relevance`` lists only the memories that clear it (see
    :mod:`omoide.memory.control.relevance`)."""
    limits = limits or LimitSettings()

    def check_ready() -> None:
        if ready is not None and not ready():
            raise HTTPException(503, "omoide is still starting; try again in a moment",
                                headers={"Retry-After": "2"})

    router = APIRouter()
    # Registration order is matching order: .../memories/export before .../{memory_id}.
    _add_listing_routes(router, service, check_ready, relevance)
    _add_transfer_routes(router, service, check_ready, limits)
    _add_one_memory_routes(router, service, check_ready, forget_undo)
    _add_extraction_routes(router, service, check_ready)
    router.include_router(dead_letter_router(service, check_ready))
    return router


def _add_listing_routes(router: APIRouter, service: MemoryEngine,
                        check_ready: Callable[[], None],
                        relevance: RelevanceJudge | None) -> None:
    """``GET /v1/users/{user}/memories``: every memory, or a search (``?q=``)."""

    @router.get("/v1/users/{user}/memories")
    async def list_or_search(request: Request, user: UserId, q: QueryText | None = None,
                             limit: int = Query(10, ge=1, le=100),
                             min_relevance: float | None = Query(None, ge=0, le=1),
                             ) -> dict[str, Any]:
        require_user(request, user)
        check_ready()
        if q and min_relevance is not None and relevance is not None:
            found = await relevance.search(user, q, min_relevance=min_relevance, limit=limit)
            return {"user": user, "query": q, "min_relevance": min_relevance,
                    "memories": [r.to_json() for r in found]}
        if q:
            results = await service.search(user, q, limit=limit)
            return {"user": user, "query": q,
                    "memories": [json_shapes.scored_memory_json(r) for r in results]}
        return {"user": user, "memories": [json_shapes.memory_json(m)
                                           for m in await service.list_memories(user)]}


def _add_transfer_routes(router: APIRouter, service: MemoryEngine,
                         check_ready: Callable[[], None], limits: LimitSettings) -> None:
    """Export (JSON lines) and import of a person's memories."""

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
        status, body = await json_shapes.run_import(
            service, user, request.stream(), max_items=limits.max_import_items,
            max_bytes=limits.max_import_bytes, skip_invalid=skip_invalid)
        return JSONResponse(body, status)

    @router.get("/v1/users/{user}/vectors")
    async def vectors(request: Request, user: UserId) -> dict[str, Any]:
        """How many of the person's memories wait for their vectors (a large import
        stores first and embeds in the background; until then a memory is found by its
        words and dates, not by meaning)."""
        require_user(request, user)
        check_ready()
        return {"user": user, "vectors_pending": await service.vectors.count(user)}


def _add_one_memory_routes(router: APIRouter, service: MemoryEngine,
                           check_ready: Callable[[], None],
                           forget_undo: ForgetWithUndo | None) -> None:
    """Show one memory, and forget it (undoably, with ``forget_undo``)."""

    @router.get("/v1/users/{user}/memories/{memory_id}")
    async def show(request: Request, user: UserId, memory_id: MemoryId) -> dict[str, Any]:
        require_user(request, user)
        check_ready()
        m = await service.get(user, memory_id)
        if m is None:
            raise HTTPException(404, f"no memory {memory_id!r} for user {user!r}")
        return json_shapes.shown_memory_json(m, await service.index(user))

    @router.delete("/v1/users/{user}/memories/{memory_id}")
    async def forget(request: Request, user: UserId, memory_id: MemoryId) -> dict[str, Any]:
        require_user(request, user)
        check_ready()
        if forget_undo is not None:
            ticket = await forget_undo.forget(user, memory_id)
            if ticket is None:
                raise HTTPException(404, f"no memory {memory_id!r} for user {user!r}")
            return {"user": user, "forgotten": memory_id, "undo": ticket.to_json()}
        if not await service.forget(user, memory_id):
            raise HTTPException(404, f"no memory {memory_id!r} for user {user!r}")
        return {"user": user, "forgotten": memory_id}


def _add_extraction_routes(router: APIRouter, service: MemoryEngine,
                           check_ready: Callable[[], None]) -> None:
    """Exchanges waiting for extraction, and extracting a person's now (admin)."""

    @router.get("/v1/memory/pending")
    async def pending(request: Request, user: UserId | None = None) -> dict[str, Any]:
        """Pending exchanges per user; a person's token sees only that person's."""
        user = visible_user(request, user)
        check_ready()
        return {"pending": [json_shapes.pending_json(r) for r in await service.pending(user)]}

    @router.post("/v1/memory/extract")
    async def extract(request: Request, body: ExtractRequest) -> dict[str, Any]:
        require_admin(request)
        check_ready()
        return json_shapes.extraction_json(await service.extract_now(body.user))


ExchangeId = Annotated[StrictStr, Field(min_length=1, max_length=200,
                                        pattern=r"^[^\x00-\x1f\x7f]+$")]
"""An exchange id as the journal gave it (no control characters)."""


class DeadLetterRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user: UserId = Field(description="Whose exchanges.")
    exchange_ids: list[ExchangeId] | None = Field(
        None, max_length=10_000, description="Only these exchanges (default: every"
        " quarantined exchange of the user).")


def dead_letter_router(service: MemoryEngine, check_ready: Callable[[], None],
                       ) -> APIRouter:
    """Routes for quarantined exchanges (extraction failed on them alone too often):

        GET  /v1/memory/quarantine[?user=U]   the dead letters with the reason (a person's
                                              token sees only that person's)
        POST /v1/memory/retry  {"user", "exchange_ids"?}   release them (admin)
        POST /v1/memory/skip   {"user", "exchange_ids"?}   set them aside for good (admin)
    """
    router = APIRouter()

    @router.get("/v1/memory/quarantine")
    async def quarantine(request: Request, user: UserId | None = None) -> dict[str, Any]:
        user = visible_user(request, user)
        check_ready()
        return {"quarantined": [json_shapes.dead_letter_json(d)
                                for d in await service.dead_letters(user)]}

    @router.post("/v1/memory/retry")
    async def retry(request: Request, body: DeadLetterRequest) -> dict[str, Any]:
        require_admin(request)
        check_ready()
        released = await service.retry_quarantined(body.user, body.exchange_ids)
        return {"user": body.user, "released": released}

    @router.post("/v1/memory/skip")
    async def skip(request: Request, body: DeadLetterRequest) -> dict[str, Any]:
        require_admin(request)
        check_ready()
        skipped = await service.skip_exchanges(body.user, body.exchange_ids)
        return {"user": body.user, "skipped": skipped}

    return router
