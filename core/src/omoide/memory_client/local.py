"""The local backend of :class:`omoide.memory_client.MemoryClient`: the store itself.

Used when no server holds the data dir (the caller has claimed it). Starts only the
components a command needs (``pending`` needs none: the journal is enough).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from omoide.config import Settings
from omoide.memory.control import json_shapes
from omoide.memory.control.import_format import chunks_of
from omoide.memory.engine import MemoryEngine
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
        return [json_shapes.memory_json(m) for m in await self.engine.list_memories(user)]

    async def search(self, user: str, text: str, limit: int) -> list[dict[str, Any]]:
        return [json_shapes.scored_memory_json(r)
                for r in await self.engine.search(user, text, limit=limit)]

    async def show(self, user: str, memory_id: str) -> dict[str, Any] | None:
        m = await self.engine.get(user, memory_id)
        if m is None:
            return None
        return json_shapes.shown_memory_json(m, await self.engine.index(user))

    async def forget(self, user: str, memory_id: str) -> bool:
        return await self.engine.forget(user, memory_id)

    async def export(self, user: str) -> list[dict[str, Any]]:
        return await self.engine.export(user)

    async def import_file(self, user: str, data: bytes, *, skip_invalid: bool,
                          ) -> tuple[bool, dict[str, Any]]:
        limits = self.settings.server.limits
        status, body = await json_shapes.run_import(
            self.engine, user, chunks_of(data), max_items=limits.max_import_items,
            max_bytes=limits.max_import_bytes, skip_invalid=skip_invalid)
        return status == 200, body

    async def pending(self, user: str | None) -> list[dict[str, Any]]:
        return [json_shapes.pending_json(r) for r in await self.engine.pending(user)]

    async def extract(self, user: str) -> dict[str, Any]:
        return json_shapes.extraction_json(await self.engine.extract_now(user))

    async def dead_letters(self, user: str | None) -> list[dict[str, Any]]:
        return [json_shapes.dead_letter_json(d) for d in await self.engine.dead_letters(user)]

    async def retry(self, user: str, exchange_ids: list[str] | None) -> list[str]:
        return await self.engine.retry_quarantined(user, exchange_ids)

    async def skip(self, user: str, exchange_ids: list[str] | None) -> list[str]:
        return await self.engine.skip_exchanges(user, exchange_ids)

    async def reembed(self, users: list[str] | None) -> dict[str, int]:
        return await self.engine.reembed(users or None)

    async def profile(self, user: str, everything: bool) -> dict[str, Any]:
        from omoide.memory.control.profile_edit import view
        data = (await view(self.engine, user)).to_json()
        return {"user": user, **(data if everything else
                                 {k: data[k] for k in ("budget_chars", "chars", "facts")})}

    async def profile_set(self, user: str, text: str | None, memory_id: str | None,
                          category: str | None) -> dict[str, Any]:
        from omoide.memory.control.profile_edit import ProfileEditError, mark, set_fact
        from omoide.memory_client.interface import MemoryClientError
        try:
            m = await (mark(self.engine, user, memory_id, True, category) if memory_id
                       else set_fact(self.engine, user, text or "", category))
        except ProfileEditError as exc:
            raise MemoryClientError(str(exc)) from None
        return json_shapes.memory_json(m)

    async def profile_forget(self, user: str, memory_id: str, keep_memory: bool) -> bool:
        from omoide.memory.control.profile_edit import forget
        return await forget(self.engine, user, memory_id, keep_memory=keep_memory)
