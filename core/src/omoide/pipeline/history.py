"""Short-term history: the last few exchanges, if the conversation is still going on."""

from __future__ import annotations

import threading
from collections import deque
from datetime import datetime, timedelta

from omoide.types import Exchange


class ConversationHistory:
    """Keeps each user's last ``keep`` exchanges in memory.

    :meth:`recent` returns them only when the previous utterance was less than
    ``window`` ago; a conversation resumed later starts fresh (long-term memory
    covers it). With ``database.url`` every worker shares one instead
    (:class:`~omoide.pipeline.postgres_history.PostgresHistory`).
    """

    def __init__(self, keep: int = 3, window: timedelta = timedelta(minutes=10)) -> None:
        self._keep = keep
        self._window = window
        self._by_user: dict[str, deque[Exchange]] = {}
        self._lock = threading.Lock()

    @property
    def keep(self) -> int:
        """How many exchanges are kept per person (0: none)."""
        return self._keep

    @property
    def window(self) -> timedelta:
        """How long after the last utterance the conversation is still going on."""
        return self._window

    def add(self, exchange: Exchange) -> None:
        if self._keep <= 0:
            return
        with self._lock:
            self._by_user.setdefault(exchange.user, deque(maxlen=self._keep)).append(exchange)

    def recent(self, user: str, now: datetime) -> list[Exchange]:
        with self._lock:
            items = list(self._by_user.get(user, ()))
        if not items or now - items[-1].at >= self._window:
            return []
        return items

    async def add_async(self, exchange: Exchange) -> None:
        """:meth:`add`, as a turn calls it (the shared history's waits in a thread)."""
        self.add(exchange)

    async def recent_async(self, user: str, now: datetime) -> list[Exchange]:
        """:meth:`recent`, as a turn calls it (the shared history's waits in a thread)."""
        return self.recent(user, now)

    def erase(self, user: str) -> int:
        """Forget ``user``'s short-term history (a person erased); how many exchanges
        were dropped."""
        with self._lock:
            return len(self._by_user.pop(user, ()))

    def close(self) -> None:
        """Nothing to release in memory (the shared one closes its pool)."""
