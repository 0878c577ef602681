"""Keeping indexes current with a store other processes write (:attr:`VectorStore.shared`).

A ready index older than ``refresh_s`` is rebuilt in the background when the store's
count of the person's memories differs; that count waits, up to another ``refresh_s``,
until no recall runs (on a Chroma server sharing the machine each count costs it
60-210 ms of CPU).
"""

from __future__ import annotations

import asyncio
import math
import time

from omoide.components import VectorStore
from omoide.memory.index.foreground_recalls import Foreground
from omoide.memory.index.person_index import UserIndex

RENEW_PAUSE_S = 0.5
"""How often the renewal of outdated saved indexes, and the check of a ready index against
a shared store, look again whether recalls still run."""


class SharedStoreRefresh:
    """When each ready index was last checked against the store, and the check itself."""

    def __init__(self, store: VectorStore, refresh_s: float, foreground: Foreground) -> None:
        self.store = store
        self.refresh_s = refresh_s
        self.foreground = foreground
        self._checked_at: dict[str, float] = {}

    def take_due(self, user: str) -> bool:
        """Whether ``user``'s ready index is due for a check against a shared store; if
        so it counts as checked from now (the caller starts the check)."""
        if self.store.shared and \
                time.monotonic() - self._checked_at.get(user, -math.inf) > self.refresh_s:
            self._checked_at[user] = time.monotonic()
            return True
        return False

    def checked_now(self, user: str) -> None:
        """``user``'s index is as current as the store now (just built or loaded)."""
        self._checked_at[user] = time.monotonic()

    def due_now(self, user: str) -> None:
        """Over a shared store, check ``user``'s index (loaded from its saved copy) at the
        next read."""
        if self.store.shared:
            self._checked_at[user] = -math.inf

    def forget(self, user: str) -> None:
        self._checked_at.pop(user, None)

    def clear(self) -> None:
        self._checked_at.clear()

    async def unchanged(self, user: str, current: UserIndex) -> bool:
        """Whether the store holds as many of ``user``'s memories as ``current``: nothing
        was added or deleted elsewhere."""
        return await self.store.count(user) == len(current)

    async def until_quiet(self, most_s: float = math.inf) -> None:
        """Wait until no recall runs (looking every :data:`RENEW_PAUSE_S`), at most
        ``most_s``: for background work no turn waits for."""
        deadline = time.monotonic() + most_s
        while self.foreground.busy and time.monotonic() < deadline:
            await asyncio.sleep(RENEW_PAUSE_S)
