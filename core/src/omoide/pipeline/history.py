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
    covers it).
    """

    def __init__(self, keep: int = 3, window: timedelta = timedelta(minutes=10)) -> None:
        self._keep = keep
        self._window = window
        self._by_user: dict[str, deque[Exchange]] = {}
        self._lock = threading.Lock()

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
