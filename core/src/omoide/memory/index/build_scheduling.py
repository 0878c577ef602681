"""Slots for index builds that go to whoever is waiting for one now.

An index build holds a slot while it reads and analyses a person's records (about
50 ms for 100 memories on the 2-core machine). When more people start talking at once
than the slots serve in a recall's time budget, a plain queue serves them in arrival
order, including builds whose turn already went ahead without them: each new turn then
waits behind the backlog, and under a steady overload almost no first turn has its
index in time. Here a freed slot goes to the waiting build of the most urgent
priority (read when the slot is handed over, so a build can be demoted or promoted
while it waits) and, among equals, to the one that asked last: under overload the
newest request is the one most likely to be answered within its turn's budget; the
others still get their slot as soon as the newer ones are served.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

from omoide.types import Priority


class BuildSlots:
    """At most ``size`` holders at once; see the module docstring for who goes next."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"build slots: at least one slot, not {size}")
        self._free = size
        self._waiting: list[tuple[Callable[[], Priority], asyncio.Future[None]]] = []

    @property
    def waiting(self) -> int:
        """Holders waiting for a slot."""
        return len(self._waiting)

    @property
    def full(self) -> bool:
        """Whether a new holder would wait (every slot held, or others waiting)."""
        return not self._free or bool(self._waiting)

    @contextlib.asynccontextmanager
    async def held(self, priority: Callable[[], Priority]) -> AsyncIterator[None]:
        """Hold a slot for the block; ``priority()`` is asked whenever one is handed out
        while this holder waits."""
        if self._free and not self._waiting:
            self._free -= 1
        else:
            granted = asyncio.get_running_loop().create_future()
            entry = (priority, granted)
            self._waiting.append(entry)
            try:
                await granted
            except asyncio.CancelledError:
                if granted.done() and not granted.cancelled():
                    self._release()  # handed over as the waiter was cancelled: pass it on
                elif entry in self._waiting:
                    self._waiting.remove(entry)
                raise
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        while self._waiting:
            # the most urgent priority; among equals the newest (the last in the list)
            at = min(range(len(self._waiting)),
                     key=lambda i: (self._waiting[i][0](), -i))
            _, granted = self._waiting.pop(at)
            if not granted.done():
                granted.set_result(None)
                return
        self._free += 1


__all__ = ["BuildSlots"]
