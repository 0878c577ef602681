"""The local backend of :class:`omoide.memory_client.MemoryClient`: the store itself.

Used when no server holds the data dir (the caller has claimed it). Starts only the
components a command needs (``pending`` needs none: the journal is enough).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from omoide.config import Settings
from omoide.memory import wire
from omoide.memory.engine import MemoryEngine
from omoide.memory.import_format import chunks_of
from omoide.runtime import Runtime


class LocalMemoryClient:
    """Memory control on the data dir's own store and journal."""

    def __init__(self, settings: Settings, engine: MemoryEngine) -> None:
        self.settings = settings
        self.engine = engine
        self.where = f"the store in {settings.data_dir} (no server is running)"

    @classmethod
    @asynccontextmanager
    async def open(cls, settings: Settings, needs: tuple[str, ...],
                   ) -> AsyncIterator[LocalMemoryClient]:
        runtime = Runtime(settings)
        engine = runtime.memory
        assert isinstance(engine, MemoryEngine)
        try:
            if needs:
                await runtime.start(*needs)
                await engine.start()
            else:
                engine.journal.open()
            yield cls(settings, engine)
        finally:
            await engine.stop()
            await runtime.stop()

    async def list_memories(self, user: str) -> list[dict[str, Any]]:
        return [wire.memory_json(m) for m in await self.engine.list_memories(user)]

    async def search(self, user: str, text: str, limit: int) -> list[dict[str, Any]]:
        return [wire.scored_memory_json(r)
                for r in await self.engine.search(user, text, limit=limit)]

    async def show(self, user: str, memory_id: str) -> dict[str, Any] | None:
        m = await self.engine.get(user, memory_id)
        return wire.memory_json(m) if m is not None else None

    async def forget(self, user: str, memory_id: str) -> bool:
        return await self.engine.forget(user, memory_id)

    async def export(self, user: str) -> list[dict[str, Any]]:
        return await self.engine.export(user)

    async def import_file(self, user: str, data: bytes, *, skip_invalid: bool,
                          ) -> tuple[bool, dict[str, Any]]:
        limits = self.settings.server.limits
        status, body = await wire.run_import(
            self.engine, user, chunks_of(data), max_items=limits.max_import_items,
            max_bytes=limits.max_import_bytes, skip_invalid=skip_invalid)
        return status == 200, body

    async def pending(self, user: str | None) -> list[dict[str, Any]]:
        return [wire.pending_json(r) for r in await self.engine.pending(user)]

    async def extract(self, user: str) -> dict[str, Any]:
        return wire.extraction_json(await self.engine.extract_now(user))

    async def reembed(self, users: list[str] | None) -> dict[str, int]:
        return await self.engine.reembed(users or None)
