"""HTTP routes for memory control (the same operations as ``omoide memory``).

    GET    /v1/users/{user}/memories            list (or ?q=TEXT to search, &limit=N)
    GET    /v1/users/{user}/memories/export     JSON lines
    POST   /v1/users/{user}/memories/import     body: a JSON list or JSON lines
    GET    /v1/users/{user}/memories/{id}       one memory
    DELETE /v1/users/{user}/memories/{id}       forget it
    GET    /v1/memory/pending                   exchanges waiting for extraction
    POST   /v1/memory/extract                   body {"user": U}: extract now
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel, Field

from omoide.memory.engine import MemoryEngine
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
        return {"pending": [{"user": r.user, "exchanges": r.exchanges,
                             "oldest": r.oldest.isoformat(), "newest": r.newest.isoformat(),
                             "attempts": r.attempts, "last_error": r.last_error}
                            for r in rows]}

    @router.post("/v1/memory/extract")
    async def extract(body: ExtractRequest) -> dict[str, Any]:
        report = await service.extract_now(body.user)
        return {"user": report.user, "exchanges": report.exchanges,
                "stored": [to_json(m) for m in report.stored],
                "skipped_duplicates": report.skipped_duplicates,
                "superseded": report.superseded, "pending": report.pending,
                "error": report.error}

    return router
