"""The index cache's worker thread, and the background work it does for the event loop."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from omoide.blocking import PriorityRunner
from omoide.types import Priority

log = logging.getLogger("omoide.memory.index")

T = TypeVar("T")


class CacheWorker:
    """One worker thread for the cache's analysis, loads and saves (by priority), and the
    background tasks that await it: their failures are logged, never raised."""

    def __init__(self) -> None:
        self._runner = PriorityRunner("memory-index")
        self._background: set[asyncio.Task[None]] = set()

    def run(self, fn: Callable[[], T], priority: Priority) -> Awaitable[T]:
        """Run ``fn`` on the worker thread, before any work of a lower priority."""
        return self._runner.run(fn, priority)

    def in_background(self, work: Awaitable[Any]) -> None:
        """Await ``work`` in a task of its own (call on the event loop)."""
        async def run() -> None:
            try:
                await work
            except Exception as exc:  # noqa: BLE001 - logged; the cache carries on
                log.warning("index cache background work failed: %s", exc)

        task = asyncio.get_running_loop().create_task(run())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def background(self) -> list[asyncio.Task[None]]:
        """The background tasks under way now."""
        return list(self._background)

    def close(self) -> None:
        """Release the worker thread."""
        self._runner.close()
