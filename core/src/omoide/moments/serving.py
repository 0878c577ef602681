"""Moments in a running server: the scheduler built on the server's memory engine, its
chat model and its announcer, listening to the turns and opening conversations.

:class:`MomentsService` is created with the server (cheap: nothing opens until
:meth:`start`) so the console can subscribe to deliveries before the server has
started; :meth:`start` builds the :class:`~omoide.moments.delivery.MomentScheduler`
when ``moments.enabled`` and the memory service is omoide's engine, adds its presence
to the turn observers and its opener to the assistant, journals what it pushes in the
engine's journal and the assistant's short-term history, and looks for moments every
``check_seconds``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omoide.moments.config import MomentsSettings
from omoide.moments.delivery import Delivery, MomentScheduler
from omoide.moments.journaling import MomentJournal
from omoide.moments.ledgers import open_ledger
from omoide.moments.planning import EngineMemories, IndexedEngine
from omoide.types import Emotion

if TYPE_CHECKING:
    from omoide.announcements import Announcer
    from omoide.components import ChatModel
    from omoide.components.turn_events import TurnEventSubscriber
    from omoide.pipeline.assistant import Assistant

log = logging.getLogger("omoide.moments")

LEDGER_FILE = "moments.sqlite3"


class AnnouncerSpeaker:
    """Says a moment through the announcer's devices, now or not at all (a moment that
    no robot can hear waits for the person's next conversation, never in the queue)."""

    def __init__(self, announcer: Announcer) -> None:
        self._announcer = announcer

    def reaches(self, person: str) -> bool:
        return any(d.reaches(person) for d in self._announcer.devices)

    async def say(self, person: str, text: str) -> bool:
        from omoide.announcements import Announcement
        reachable = [d for d in self._announcer.devices if d.reaches(person)]
        if not reachable:
            return False
        spoken = await self._announcer.render(Announcement(
            uuid.uuid4().hex[:12], person, text, Emotion.HAPPY, datetime.now(UTC)))
        for device in reachable:
            try:
                if await device.announce(person, spoken):
                    return True
            except Exception:
                log.exception("device %s failed to say a moment", device.name)
        return False


class MomentsService:
    """The server's moments (see the module)."""

    def __init__(self, settings: MomentsSettings, data_dir: Path, timezone: str,
                 announcer: Announcer, database_url: str | None = None) -> None:
        self.settings = settings
        self.ledger = open_ledger(Path(data_dir) / LEDGER_FILE, database_url)
        self.timezone = timezone
        self.announcer = announcer
        self.listeners: list[Callable[[Delivery], None]] = []
        """Told of every delivered moment (the console's turn feed)."""
        self.scheduler: MomentScheduler | None = None
        self._task: asyncio.Task[None] | None = None
        self._observers: list[TurnEventSubscriber] | None = None

    def _delivered(self, delivery: Delivery) -> None:
        for listener in list(self.listeners):
            listener(delivery)

    def start(self, memory: Any, chat: ChatModel | None, assistant: Assistant,
              observers: list[TurnEventSubscriber]) -> None:
        """Plan and deliver from ``memory`` (omoide's engine; anything else: off)."""
        if not self.settings.enabled or not hasattr(memory, "index"):
            return
        engine: IndexedEngine = memory

        async def people() -> Iterable[str]:
            users = getattr(getattr(memory, "journal", None), "users", None)
            return list(await users()) if users is not None else []

        self.scheduler = MomentScheduler(
            self.settings, self.ledger, EngineMemories(engine), people,
            timezone=self.timezone, chat=chat, speaker=AnnouncerSpeaker(self.announcer),
            on_delivered=self._delivered, journal=MomentJournal(memory, assistant.history))
        observers.append(self.scheduler.on_event)
        self._observers = observers
        assistant.openers.append(self.scheduler.opener)
        self._task = asyncio.create_task(self.scheduler.run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        if self.scheduler is not None and self._observers is not None:
            with contextlib.suppress(ValueError):
                self._observers.remove(self.scheduler.on_event)
        self.ledger.close()
