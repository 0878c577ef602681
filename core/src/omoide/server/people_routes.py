"""The people omoide knows, for the console.

    GET  /v1/users?limit=N&cursor=C   everyone (the admin) or only yourself (a person's
                             token), a page at a time: at most ``limit`` people (default
                             100, at most 500) sorted by id, after the ``cursor`` a
                             previous page gave as ``next`` (null on the last page)
    POST /v1/users {"user"}  add a person (admin): 201, or 200 when they exist already
    GET  /v1/users/{user}    one person (admin, or that person); 404 for an unknown id
    GET  /v1/users/{user}/exchanges?ids=A,B   what was said in those exchanges (a
                             memory's ``source_exchange_ids``), from the journal

The answers also say which of the console's optional panels this server can fill
(``features``: ``profile``, ``quarantine``, ``devices``), read from the app's routes, so
the page never probes a route that is not there.

Each person: ``first_seen``, ``last_turn`` (their newest journaled exchange),
``exchanges``, ``memories`` (``live`` and ``superseded``), ``memory_unavailable`` (null, or
why their memories cannot be read: their store is lost, see ``omoide memory repair``),
``pending`` (exchanges waiting for extraction) and ``quarantined`` (exchanges extraction
set aside; null when this memory engine keeps no quarantine). The answer also names the assistant's
``timezone``, in which the console shows every time. People come from the journal's
users table: whoever talked, had memories imported, or was added here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from omoide.memory.engine import MemoryEngine
from omoide.memory.journal.activity import PersonActivity, exchanges_by_id, people_activity
from omoide.server.auth import current_principal, require_admin, require_user
from omoide.server.inputs import UserId
from omoide.types import Memory

PAGE_SIZE = 100
"""People on a page of ``GET /v1/users`` when the caller names no ``limit``."""
MAX_PAGE_SIZE = 500


class NewPerson(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user: UserId = Field(description="The new person's id (see omoide.user_ids).")


def people_router(engine: MemoryEngine, *, timezone: str,
                  know_user: Callable[[Iterable[str]], None] | None = None,
                  ready: Callable[[], bool] | None = None) -> APIRouter:
    """``know_user`` is told of people added here (the new-user limit then never counts
    them); ``ready`` gates the routes with 503 while the server starts."""
    router = APIRouter(tags=["people"])

    def check_ready() -> None:
        if ready is not None and not ready():
            raise HTTPException(503, "omoide is still starting; try again in a moment",
                                headers={"Retry-After": "2"})

    async def describe(people: list[PersonActivity]) -> list[dict[str, Any]]:
        return await _described(engine, people)

    @router.get("/v1/users")
    async def list_people(
            request: Request,
            limit: int = Query(PAGE_SIZE, ge=1, le=MAX_PAGE_SIZE,
                               description="People on one page."),
            cursor: UserId | None = None) -> dict[str, Any]:
        """A page of people; ``cursor`` is the previous page's ``next`` (the page
        starts after that person)."""
        principal = current_principal(request)
        check_ready()
        only = None if principal.is_admin else principal.user
        people = await people_activity(engine.journal, only, after=cursor,
                                       limit=limit + 1)
        more = len(people) > limit
        people = people[:limit]
        return {"timezone": timezone, "features": _features(request),
                "people": await describe(people),
                "next": people[-1].user if more else None}

    @router.post("/v1/users", response_model=None)
    async def add_person(request: Request, body: NewPerson) -> JSONResponse:
        require_admin(request)
        check_ready()
        existed = bool(await people_activity(engine.journal, body.user))
        if not existed:
            await engine.journal.note_user(body.user)
        if know_user is not None:
            know_user([body.user])
        [person] = await describe(await people_activity(engine.journal, body.user))
        return JSONResponse({"timezone": timezone, "created": not existed, "person": person},
                            200 if existed else 201)

    @router.get("/v1/users/{user}")
    async def show_person(request: Request, user: UserId) -> dict[str, Any]:
        require_user(request, user)
        check_ready()
        people = await people_activity(engine.journal, user)
        if not people:
            raise HTTPException(404, f"omoide knows no person {user!r} (add them first)")
        [person] = await describe(people)
        return {"timezone": timezone, "features": _features(request), "person": person}

    @router.get("/v1/users/{user}/exchanges")
    async def said(request: Request, user: UserId,
                   ids: str = Query(max_length=4000, description="Comma-separated ids."),
                   ) -> dict[str, Any]:
        require_user(request, user)
        check_ready()
        wanted = [i for i in (p.strip() for p in ids.split(",")) if i][:50]
        found = await exchanges_by_id(engine.journal, user, wanted)
        return {"user": user, "exchanges": [
            {"id": e.id, "at": e.at.isoformat() if e.at else None, "user_text": e.user_text,
             "assistant_text": e.assistant_text} for e in found]}

    return router


async def _described(engine: MemoryEngine, people: list[PersonActivity]) -> list[dict[str, Any]]:
    """What the people routes say of each person: activity, memory counts, pending and
    quarantined exchanges, and whether their store is lost."""
    pending = {p.user: p for p in
               await engine.journal.pending_summary(users=[p.user for p in people])}
    quarantine = await _quarantined_counts(engine)

    async def one(p: PersonActivity) -> dict[str, Any]:
        lost = engine.store.damaged_people.get(p.user)
        memories = [] if lost is not None else await _memories_of(engine, p.user)
        superseded = sum(1 for m in memories if m.superseded_by)
        waiting = pending.get(p.user)
        return {"user": p.user,
                "memory_unavailable": None if lost is None else (
                    f"their store is lost ({lost.what}); repair with `omoide memory"
                    f" repair --user {p.user}`"),
                "first_seen": p.first_seen.isoformat() if p.first_seen else None,
                "last_turn": p.last_turn.isoformat() if p.last_turn else None,
                "exchanges": p.exchanges,
                "memories": {"live": len(memories) - superseded, "superseded": superseded},
                "pending": waiting.exchanges if waiting else 0,
                "quarantined": (None if quarantine is None
                                else quarantine.get(p.user, 0))}
    return list(await asyncio.gather(*(one(p) for p in people)))


_FEATURE_ROUTES = {"profile": "/v1/users/{user}/profile",
                   "quarantine": "/v1/memory/quarantine", "devices": "/v1/devices"}


def _features(request: Request) -> dict[str, bool]:
    """Which optional console panels have their routes on this server (read from the
    app's OpenAPI paths, which FastAPI builds once and caches)."""
    paths = request.app.openapi().get("paths", {})
    return {name: path in paths for name, path in _FEATURE_ROUTES.items()}


async def _memories_of(engine: MemoryEngine, user: str) -> Sequence[Memory]:
    """``user``'s memories (superseded ones too): from their index when it is in memory,
    else read from the store, so paging through everyone neither builds nor caches an
    index per person."""
    index = engine.indexes.peek(user)
    if index is not None:
        return index.memories()
    return await engine.list_memories(user)


async def _quarantined_counts(engine: MemoryEngine) -> dict[str, int] | None:
    """Quarantined exchanges per person, or None when the engine keeps no quarantine."""
    dead_letters = getattr(engine, "dead_letters", None)
    if dead_letters is None:
        return None
    counts: dict[str, int] = {}
    for letter in await dead_letters(None):
        counts[letter.user] = counts.get(letter.user, 0) + 1
    return counts
