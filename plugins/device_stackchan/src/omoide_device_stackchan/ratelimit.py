"""Requests per source address on the unauthenticated device endpoints (OTA, activation).

Anyone on the network can call them, and each call may create a pending activation
(a file write): a moving window per source address bounds that. The window comes
from the ``limits`` library (in memory; entries expire with their window).

Robots need little: the firmware asks OTA once per boot and, while it waits to be
paired, polls activation every 3 s (py-xiaozhi every 5 s). Behind a reverse proxy
every robot shares the proxy's address unless the server is told to trust
``X-Forwarded-For`` (uvicorn ``--forwarded-allow-ips``).
"""

from __future__ import annotations

import time

from limits import RateLimitItem, parse
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter


def parse_rate(text: str) -> RateLimitItem:
    """``"60/minute"``, ``"5 per second"``... (raises ValueError when unreadable)."""
    return parse(text)


class SourceRateLimiter:
    """One moving window per source address."""

    def __init__(self, rate: str) -> None:
        self.rate = parse_rate(rate)
        self._limiter = MovingWindowRateLimiter(MemoryStorage())

    def allow(self, source: str) -> bool:
        """Count one request from ``source``; False when it is over the limit."""
        return self._limiter.hit(self.rate, "stackchan-ota", source)

    def retry_after_s(self, source: str) -> int:
        """Seconds until ``source`` may ask again (at least 1)."""
        stats = self._limiter.get_window_stats(self.rate, "stackchan-ota", source)
        return max(1, int(stats.reset_time - time.time()) + 1)
