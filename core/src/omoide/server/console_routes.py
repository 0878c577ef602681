"""The console: its page and static files, and the services behind its panels.

    GET  /                                        the page (public: it holds no data)
    GET  /console/app.js, gantt.js, app.css, icon.svg, /favicon.ico   its files (public)
    GET  /v1/users/{user}/forgotten               memories that can still be restored
    POST /v1/users/{user}/forgotten/{ticket}/restore   undo a forget (admin or them)

The page is dependency-free HTML, CSS and JavaScript modules served as files: nothing
to build, nothing fetched from elsewhere. :class:`ConsoleServices` holds what its
panels need beyond the memory routes: the live turn feed
(:mod:`omoide.server.turn_feed`), relevance search (:mod:`omoide.memory.control.relevance`) and
forgetting with undo (:mod:`omoide.memory.control.forget_undo`), plus the people routes
(:mod:`omoide.server.people_routes`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any, Protocol

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from omoide.memory.control.forget_undo import ForgetWithUndo
from omoide.memory.control.relevance import RelevanceJudge
from omoide.server.auth import require_user
from omoide.server.console_assets import CONSOLE_ASSETS
from omoide.server.inputs import UserId
from omoide.server.postgres_turns import turn_feed_for
from omoide.server.turn_feed import TurnFeed, turn_feed_router

if TYPE_CHECKING:
    from pathlib import Path

    from omoide.components.turn_events import TurnEventSubscriber
    from omoide.config import Settings
    from omoide.memory.api import MemoryService
    from omoide.moments.delivery import Delivery
    from omoide.server.limits import NewUserLimiter

log = logging.getLogger("omoide.server.console")

FORGOTTEN_FILE = "recently_forgotten.sqlite3"
"""Where forgotten memories wait out their undo window (in ``server.data_dir``)."""


class ConsoleServer(Protocol):
    """What the console needs of the server it serves
    (:class:`omoide.server.app.OmoideServer`), and no more."""

    @property
    def settings(self) -> Settings: ...

    @property
    def memory(self) -> MemoryService: ...

    @property
    def data_dir(self) -> Path:
        """Where the undo copies of forgotten memories wait."""
        ...

    @property
    def turn_observers(self) -> list[TurnEventSubscriber]:
        """Who reads every turn's events (the turn feed joins them)."""
        ...

    @property
    def new_users(self) -> NewUserLimiter: ...

    @property
    def ready(self) -> asyncio.Event:
        """Set once the server has started (the people routes answer 503 before)."""
        ...


@dataclass
class ConsoleServices:
    """The console's services for one server. ``relevance`` and ``forget_undo`` are None
    when the memory service is not omoide's engine (tests, embedding)."""

    feed: TurnFeed
    relevance: RelevanceJudge | None = None
    forget_undo: ForgetWithUndo | None = None
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    @classmethod
    def build(cls, server: ConsoleServer) -> ConsoleServices:
        from omoide.memory.engine import MemoryEngine

        memory = server.memory
        feed = turn_feed_for(server.settings.envelope.database.url)
        if not isinstance(memory, MemoryEngine):
            return cls(feed)
        # with a shared database the undo copies are there: an undo on any worker
        return cls(feed, RelevanceJudge(memory),
                   ForgetWithUndo(memory, server.data_dir / FORGOTTEN_FILE,
                                  database_url=server.settings.envelope.database.url))

    def _publish_moment(self, delivery: Delivery) -> None:
        self.feed.publish(delivery.feed_json())

    def start(self, server: ConsoleServer) -> None:
        """Listen for completed turns and start the purger of expired undo copies (call
        inside the server's loop, when it starts)."""
        if self.feed.on_event not in server.turn_observers:
            server.turn_observers.append(self.feed.on_event)
        moments = getattr(server, "moments", None)   # the moments said feed it too
        if moments is not None and self._publish_moment not in moments.listeners:
            moments.listeners.append(self._publish_moment)
        if self.forget_undo is not None:
            self._tasks.append(asyncio.create_task(self.forget_undo.run_purger()))

    async def stop(self, server: ConsoleServer) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        if self.feed.on_event in server.turn_observers:
            server.turn_observers.remove(self.feed.on_event)
        await self.feed.close()
        if self.forget_undo is not None:
            self.forget_undo.close()


def _static(name: str) -> bytes:
    return resources.files("omoide.server").joinpath(f"static/{name}").read_bytes()


def console_router(server: ConsoleServer, services: ConsoleServices) -> APIRouter:
    """The page, its files, the live turns, people and undo routes."""
    from omoide.memory.engine import MemoryEngine
    from omoide.server.people_routes import people_router

    router = APIRouter()

    @router.get("/", include_in_schema=False)
    async def page() -> HTMLResponse:
        """The console's shell; everything it shows comes from routes that need a token
        or the session cookie."""
        return HTMLResponse(_static("index.html").decode("utf-8"))

    def asset_route(path: str, name: str, media_type: str) -> None:
        async def asset() -> Response:
            return Response(_static(name), media_type=media_type)
        router.add_api_route(path, asset, methods=["GET"], include_in_schema=False)

    for path, (name, media_type) in CONSOLE_ASSETS.items():
        asset_route(path, name, media_type)
    asset_route("/favicon.ico", "icon.svg", "image/svg+xml")

    router.include_router(turn_feed_router(services.feed))
    if hasattr(server, "moments"):
        from omoide.server.moments_routes import moments_router
        router.include_router(moments_router(server))  # type: ignore[arg-type]
    engine = server.memory
    if isinstance(engine, MemoryEngine):
        router.include_router(people_router(
            engine, timezone=server.settings.assistant.timezone,
            know_user=server.new_users.know, ready=server.ready.is_set))
    if services.forget_undo is not None:
        router.include_router(_undo_router(services.forget_undo))
    return router


def _undo_router(undo: ForgetWithUndo) -> APIRouter:
    router = APIRouter(tags=["memories"])

    @router.get("/v1/users/{user}/forgotten")
    async def restorable(request: Request, user: UserId) -> dict[str, Any]:
        require_user(request, user)
        return {"user": user, "window_s": undo.window_s,
                "forgotten": [t.to_json() for t in await undo.pending(user)]}

    @router.post("/v1/users/{user}/forgotten/{ticket}/restore", response_model=None)
    async def restore(request: Request, user: UserId, ticket: str) -> JSONResponse:
        require_user(request, user)
        if not ticket or len(ticket) > 64:
            raise HTTPException(404, "no such undo ticket")
        outcome, memory = await undo.restore(user, ticket)
        if outcome == "unknown":
            raise HTTPException(404, "no such undo ticket (or it was used already)")
        if outcome == "expired":
            raise HTTPException(410, f"the undo window ({undo.window_s:.0f} s) has passed; "
                                     "the memory is gone")
        assert memory is not None
        return JSONResponse({"user": user, "outcome": outcome, "memory_id": memory.id,
                             "text": memory.text})

    return router
