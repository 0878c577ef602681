"""Turns as they happen, for the console: a ring of recent turns and live streams (SSE).

    GET /v1/turns?user=U&limit=N              recent turns (admin; everyone's or U's)
    GET /v1/turns/events                      a Server-Sent Events stream of them (admin)
    GET /v1/users/{user}/turns                that person's recent turns (admin or them)
    GET /v1/users/{user}/turns/events         that person's stream (admin or them)

:class:`TurnFeed` reads each turn's ``Done`` event (:mod:`omoide.components.turn_events`;
it comes after the exchange is journaled) and keeps each turn whole: transcript,
reply, face, the memories injected and the profile, what was degraded, the device and
the trace. The turns live in memory only (a restart
empties the feed; the journal and the trace file keep their own records). With
``database.url`` naming PostgreSQL the feed is every worker's instead
(:mod:`omoide.server.postgres_turns`): the same routes, the turns kept in the database.

A stream first replays the kept turns after the browser's ``Last-Event-ID`` (all kept
ones, up to ``limit``, on a first connection), then sends each new turn as an event
``turn`` whose id is the turn's sequence number, so a reconnecting ``EventSource``
misses nothing the ring still holds. The browser's session cookie authenticates it
(``EventSource`` cannot send headers); the stream ends when that session's token is
revoked or rotated, checked every :data:`CREDENTIAL_CHECK_S`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Query, Request
from sse_starlette import EventSourceResponse, ServerSentEvent

from omoide.components.turn_events import Done, TurnEvent
from omoide.memory.control.json_shapes import profile_fact_json
from omoide.server.auth import Principal, require_admin, require_user
from omoide.server.inputs import UserId

log = logging.getLogger("omoide.server.turns")

KEPT_TURNS = 200
"""Turns the feed keeps for pages that open later."""
SUBSCRIBER_BACKLOG = 64
"""Turns a slow stream may fall behind before it is closed (its browser reconnects)."""
CREDENTIAL_CHECK_S = 15.0
"""How often an open stream checks that its session's token is still valid."""


class TurnFeed:
    """Recent whole turns, and the queues of the streams listening for new ones.

    Subscribe :meth:`on_event` to the assistant's turn events (``Assistant.observers``).
    """

    def __init__(self, kept: int = KEPT_TURNS) -> None:
        self._turns: deque[dict[str, Any]] = deque(maxlen=max(1, kept))
        self._seq = 0
        self._subscribers: set[asyncio.Queue[dict[str, Any] | None]] = set()

    async def on_event(self, event: TurnEvent) -> None:
        """Subscriber of the turns' events: publishes each journaled turn at its
        ``Done``. Never raises (an observer must not disturb a turn)."""
        if not isinstance(event, Done) or event.exchange is None:
            return
        try:
            self.publish(self.turn_json(event))
        except Exception:
            log.exception("the turn feed could not publish turn %s", event.turn_id)

    def turn_json(self, done: Done) -> dict[str, Any]:
        """The console's view of one journaled turn."""
        assert done.exchange is not None
        exchange, result = done.exchange, done.result
        trace = result.trace
        notes = list(result.degraded)
        for name, stage in trace["stages"].items():
            if stage.get("error") and not any(stage["error"] in n for n in notes):
                notes.append(f"{name}: {stage['error']}")
        return {
            "turn_id": trace["turn_id"], "user": exchange.user,
            "device": trace.get("device"), "started_at": trace["started_at"],
            "at": exchange.at.isoformat(),
            "transcript": exchange.user_text, "reply": exchange.assistant_text,
            "face": result.emotion.value, "interrupted": result.interrupted,
            "memories": [{"id": m.memory.id, "text": m.memory.text, "kind": m.memory.kind,
                          "score": round(m.score, 4)} for m in result.memories],
            "profile": [profile_fact_json(f) for f in result.profile],
            "degraded": notes, "stages": trace["stages"], "tools": trace.get("tools", []),
            "speaker": trace.get("speaker")}

    def publish(self, turn: dict[str, Any]) -> None:
        self._seq += 1
        turn = {**turn, "seq": self._seq}
        self._turns.append(turn)
        self._send(turn)

    def _send(self, turn: dict[str, Any]) -> None:
        """Hand ``turn`` to every open stream."""
        for queue in list(self._subscribers):
            try:
                queue.put_nowait(turn)
            except asyncio.QueueFull:
                # too far behind: end its stream; the browser reconnects and catches up
                self._subscribers.discard(queue)
                queue.get_nowait()
                queue.put_nowait(None)

    def recent(self, user: str | None = None, limit: int = 50, after: int = 0,
               ) -> list[dict[str, Any]]:
        """Kept turns (of ``user``), oldest first, the last ``limit`` after seq ``after``."""
        items = [t for t in self._turns
                 if t["seq"] > after and (user is None or t["user"] == user)]
        return items[-limit:] if limit else []

    async def recent_turns(self, user: str | None = None, limit: int = 50, after: int = 0,
                           ) -> list[dict[str, Any]]:
        """:meth:`recent`, as the routes read it (a shared feed reads the database)."""
        return self.recent(user, limit, after)

    async def open_stream(self) -> asyncio.Queue[dict[str, Any] | None]:
        """:meth:`subscribe`, once new turns can reach the queue."""
        return self.subscribe()

    async def close(self) -> None:
        """Release what the feed holds (nothing here; a shared feed its connections)."""

    def subscribe(self) -> asyncio.Queue[dict[str, Any] | None]:
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue(SUBSCRIBER_BACKLOG)
        self._subscribers.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[dict[str, Any] | None]) -> None:
        self._subscribers.discard(queue)

    async def stream(self, user: str | None, after: int, limit: int,
                     still_allowed: Any) -> AsyncIterator[ServerSentEvent]:
        """Events for ``user`` (everyone when None): the kept ones after ``after``, then
        new ones, while ``still_allowed()`` says the session may go on."""
        queue = await self.open_stream()
        try:
            last = after
            for kept in await self.recent_turns(user, limit, after):
                last = kept["seq"]
                yield _event(kept)
            while True:
                try:
                    turn: dict[str, Any] | None = await asyncio.wait_for(
                        queue.get(), CREDENTIAL_CHECK_S)
                except TimeoutError:
                    if not still_allowed():
                        return
                    continue
                if turn is None or not still_allowed():
                    return
                if turn["seq"] <= last or (user is not None and turn["user"] != user):
                    continue
                last = turn["seq"]
                yield _event(turn)
        finally:
            self.unsubscribe(queue)


def _event(turn: dict[str, Any]) -> ServerSentEvent:
    return ServerSentEvent(data=json.dumps(turn, ensure_ascii=False), event="turn",
                           id=str(turn["seq"]))


def _last_event_id(request: Request) -> int:
    raw = request.headers.get("last-event-id", "").strip()
    return int(raw) if raw.isdigit() and len(raw) < 16 else 0


def _still_allowed(request: Request, principal: Principal) -> Any:
    tokens = getattr(request.app.state, "tokens", None)

    def check() -> bool:
        if principal.credential is None or tokens is None:
            return True     # loopback admin (server.auth.loopback_exempt): nothing to revoke
        return bool(tokens.still_valid(principal.credential))
    return check


def turn_feed_router(feed: TurnFeed) -> APIRouter:
    router = APIRouter(tags=["turns"])

    @router.get("/v1/turns")
    async def recent_turns(request: Request, user: UserId | None = None,
                           limit: int = Query(50, ge=1, le=KEPT_TURNS)) -> dict[str, Any]:
        require_admin(request)
        return {"turns": await feed.recent_turns(user, limit)}

    @router.get("/v1/turns/events")
    async def all_events(request: Request, limit: int = Query(50, ge=0, le=KEPT_TURNS),
                         ) -> EventSourceResponse:
        principal = require_admin(request)
        return EventSourceResponse(
            feed.stream(None, _last_event_id(request), limit,
                        _still_allowed(request, principal)), ping=CREDENTIAL_CHECK_S)

    @router.get("/v1/users/{user}/turns")
    async def person_turns(request: Request, user: UserId,
                           limit: int = Query(50, ge=1, le=KEPT_TURNS)) -> dict[str, Any]:
        require_user(request, user)
        return {"user": user, "turns": await feed.recent_turns(user, limit)}

    @router.get("/v1/users/{user}/turns/events")
    async def person_events(request: Request, user: UserId,
                            limit: int = Query(50, ge=0, le=KEPT_TURNS),
                            ) -> EventSourceResponse:
        principal = require_user(request, user)
        return EventSourceResponse(
            feed.stream(user, _last_event_id(request), limit,
                        _still_allowed(request, principal)), ping=CREDENTIAL_CHECK_S)

    return router
