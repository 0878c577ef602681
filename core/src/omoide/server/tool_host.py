"""What the server offers tool components (:class:`omoide.components.ToolHost`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from omoide.components import AnnounceOutcome
from omoide.types import Emotion

if TYPE_CHECKING:
    from omoide.announcements import Announcer
    from omoide.config import Settings
    from omoide.memory.api import MemoryService


class ToolHostServer(Protocol):
    """What a tool host reads from the server (:class:`omoide.server.app.OmoideServer`),
    each time a tool asks: the memory service is there only once the server started."""

    @property
    def settings(self) -> Settings: ...

    @property
    def memory(self) -> MemoryService: ...


class ServerToolHost:
    """One per tool plugin: its own data folder, the shared memory and announcer."""

    def __init__(self, server: ToolHostServer, announcer: Announcer, data_dir: Path) -> None:
        self._server = server
        self._announcer = announcer
        self._data_dir = data_dir

    @property
    def data_dir(self) -> Path:
        self._data_dir.mkdir(parents=True, exist_ok=True)
        return self._data_dir

    @property
    def timezone(self) -> str:
        return self._server.settings.assistant.timezone

    @property
    def memory(self) -> MemoryService | None:
        return self._server.memory

    @property
    def database_url(self) -> str | None:
        return self._server.settings.envelope.database.url or None

    def reaches(self, user: str) -> bool:
        return any(device.reaches(user) for device in self._announcer.devices)

    async def announce(self, user: str, text: str,
                       emotion: Emotion = Emotion.NEUTRAL) -> AnnounceOutcome:
        return await self._announcer.announce(user, text, emotion)
