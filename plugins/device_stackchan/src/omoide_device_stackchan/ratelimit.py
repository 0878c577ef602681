"""Requests per source address on the unauthenticated device endpoints (OTA, activation).

Anyone on the network can call them, and each call may create a pending activation
(a file write): a moving window per source address bounds that. The window comes
from the ``limits`` library (in memory; entries expire with their window).

Robots need little: the firmware asks OTA once per boot and, while it waits to be
paired, polls activation every 3 s (py-xiaozhi every 5 s). Behind a reverse proxy
every robot shares the proxy's address unless the server is told to trust
``X-Forwarded-For`` (uvicorn ``--forwarded-allow-ips``).

With a shared database (``database.url``, several workers) the requests are counted
there (``omoide.api.SharedCounters``: one row per source address and window, a sliding
window over two fixed ones), so a client spreading its requests over the workers meets
the same limit as on one. The endpoints ask :meth:`SourceRateLimiter.refusal`, which
counts there in a worker thread: the event loop keeps serving while the database answers.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import TYPE_CHECKING

from limits import RateLimitItem, parse
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

if TYPE_CHECKING:
    from omoide.api import SharedCounters


def parse_rate(text: str) -> RateLimitItem:
    """``"60/minute"``, ``"5 per second"``... (raises ValueError when unreadable)."""
    return parse(text)


class SourceRateLimiter:
    """One moving window per source address: in this process, or with
    ``database_url`` in the shared database (``namespace`` tells the device plugins'
    counts apart, as their pairings are)."""

    def __init__(self, rate: str, *, database_url: str | None = None,
                 namespace: str = "stackchan") -> None:
        self.rate = parse_rate(rate)
        self._limiter = MovingWindowRateLimiter(MemoryStorage())
        self._shared: SharedCounters | None = None
        self._scope = f"stackchan-ota/{namespace}"
        self._waits: dict[str, float] = {}
        if database_url:
            from omoide.api import SharedCounters
            self._shared = SharedCounters.open(database_url)

    def allow(self, source: str) -> bool:
        """Count one request from ``source``; False when it is over the limit."""
        if self._shared is None:
            return self._limiter.hit(self.rate, "stackchan-ota", source)
        wait = self._shared.hit(self._scope, source, self.rate.amount,
                                float(self.rate.get_expiry()))
        if wait is None:
            return True
        self._waits[source] = wait
        return False

    async def refusal(self, source: str) -> int | None:
        """Count one request from ``source``: None when allowed, else the seconds until
        it may ask again (the shared count runs in a worker thread)."""
        if self._shared is None:
            allowed = self.allow(source)
        else:
            allowed = await asyncio.to_thread(self.allow, source)
        return None if allowed else self.retry_after_s(source)

    def retry_after_s(self, source: str) -> int:
        """Seconds until ``source`` may ask again (at least 1)."""
        if self._shared is not None:
            return max(1, math.ceil(self._waits.pop(source, 1.0)))
        stats = self._limiter.get_window_stats(self.rate, "stackchan-ota", source)
        return max(1, int(stats.reset_time - time.time()) + 1)

    def close(self) -> None:
        """Close the shared counters' pool (nothing in memory)."""
        if self._shared is not None:
            self._shared.close()
