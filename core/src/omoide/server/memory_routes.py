"""HTTP routes for memory control (the same operations as ``omoide memory``).

    GET    /v1/users/{user}/memories            list (or ?q=TEXT to search, &limit=N)
    GET    /v1/users/{user}/memories/export     JSON lines
    POST   /v1/users/{user}/memories/import     body: a JSON list or JSON lines
    GET    /v1/users/{user}/memories/{id}       one memory
    DELETE /v1/users/{user}/memories/{id}       forget it
    GET    /v1/memory/pending                   exchanges waiting for extraction
    POST   /v1/memory/extract                   body {"user": U}: extract now

and, for quarantined exchanges, :func:`dead_letter_router`.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel, ConfigDict, Field

from omoide.memory.engine import MemoryEngine
from omoide.memory.journal import DeadLetter, PendingSummary
from omoide.memory.records import to_json


class ExtractRequest(BaseModel):
    user: str = Field(min_length=1, description="Whose pending exchanges to extract.")


def memory_router(service: MemoryEngine) -> APIRouter:
    router = APIRouter()

    @router.get("/v1/users/{user}/memories")
    async def list_or_search(user: str, q: str | None = None, limit: int = 10,
                             ) -> dict[str, Any]:
        if q:
            results = await service.search(user, q, limit=max(1, min(limit, 100)))
            return {"user": user, "query": q,
                    "memories": [{"score": round(r.score, 4), **to_json(r.memory)}
                                 for r in results]}
        return {"user": user, "memories": [to_json(m) for m in await service.list_memories(user)]}

    @router.get("/v1/users/{user}/memories/export")
    async def export(user: str) -> PlainTextResponse:
        items = await service.export(user)
        return PlainTextResponse("".join(json.dumps(i, ensure_ascii=False) + "\n"
                                         for i in items), media_type="application/x-ndjson")

    @router.post("/v1/users/{user}/memories/import")
    async def import_(user: str, request: Request) -> dict[str, Any]:
        raw = (await request.body()).decode("utf-8")
        try:
            text = raw.strip()
            items = json.loads(text) if text.startswith("[") else \
                [json.loads(line) for line in text.splitlines() if line.strip()]
            if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
                raise ValueError("expected a list of memories")
            stored = await service.import_memories(user, items)
        except (ValueError, KeyError) as exc:
            raise HTTPException(400, f"not an export: {exc}") from exc
        return {"user": user, "imported": len(stored), "ids": [m.id for m in stored]}

    @router.get("/v1/users/{user}/memories/{memory_id}")
    async def show(user: str, memory_id: str) -> dict[str, Any]:
        m = await service.get(user, memory_id)
        if m is None:
            raise HTTPException(404, f"no memory {memory_id} for user {user}")
        return to_json(m)

    @router.delete("/v1/users/{user}/memories/{memory_id}")
    async def forget(user: str, memory_id: str) -> dict[str, Any]:
        if not await service.forget(user, memory_id):
            raise HTTPException(404, f"no memory {memory_id} for user {user}")
        return {"user": user, "forgotten": memory_id}

    @router.get("/v1/memory/pending")
    async def pending(user: str | None = None) -> dict[str, Any]:
        rows = await service.pending(user)
        return {"pending": [pending_json(r) for r in rows],
                "quarantined": [dead_letter_json(d) for d in await service.dead_letters(user)]}

    @router.post("/v1/memory/extract")
    async def extract(body: ExtractRequest) -> dict[str, Any]:
        report = await service.extract_now(body.user)
        return {"user": report.user, "exchanges": report.exchanges,
                "stored": [to_json(m) for m in report.stored],
                "skipped_duplicates": report.skipped_duplicates,
                "superseded": report.superseded, "pending": report.pending,
                "error": report.error, "quarantined": report.quarantined}

    router.include_router(dead_letter_router(service))
    return router


def pending_json(r: PendingSummary) -> dict[str, Any]:
    """One user's row of ``GET /v1/memory/pending``."""
    return {"user": r.user, "exchanges": r.exchanges,
            "oldest": r.oldest.isoformat() if r.oldest else None,
            "newest": r.newest.isoformat() if r.newest else None,
            "attempts": r.attempts, "last_error": r.last_error,
            "quarantined": r.quarantined}


def dead_letter_json(d: DeadLetter) -> dict[str, Any]:
    return {"exchange_id": d.exchange_id, "user": d.user, "at": d.at,
            "user_text": d.user_text, "attempts": d.attempts, "reason": d.reason,
            "quarantined_at": d.quarantined_at}


class DeadLetterRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user: str = Field(min_length=1, max_length=200, description="Whose exchanges.")
    exchange_ids: list[str] | None = Field(
        None, max_length=10_000, description="Only these exchanges (default: every"
        " quarantined exchange of the user).")


def dead_letter_router(service: MemoryEngine) -> APIRouter:
    """Routes for quarantined exchanges (extraction failed on them alone too often):

        GET  /v1/memory/quarantine[?user=U]   the dead letters, with the reason
        POST /v1/memory/retry  {"user", "exchange_ids"?}   release them, extract again
        POST /v1/memory/skip   {"user", "exchange_ids"?}   set them aside for good
    """
    router = APIRouter()

    @router.get("/v1/memory/quarantine")
    async def quarantine(user: str | None = None) -> dict[str, Any]:
        return {"quarantined": [dead_letter_json(d) for d in await service.dead_letters(user)]}

    @router.post("/v1/memory/retry")
    async def retry(body: DeadLetterRequest) -> dict[str, Any]:
        released = await service.retry_quarantined(body.user, body.exchange_ids)
        return {"user": body.user, "released": released}

    @router.post("/v1/memory/skip")
    async def skip(body: DeadLetterRequest) -> dict[str, Any]:
        skipped = await service.skip_exchanges(body.user, body.exchange_ids)
        return {"user": body.user, "skipped": skipped}

    return router
