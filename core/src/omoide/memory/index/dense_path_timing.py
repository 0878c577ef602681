"""How long dense recall from the store takes now, so a recall starts it only if it fits.

A recall of a person whose index is not ready answers from a search of the store: the
query vector in hand, the store's nearest memories, their analysis for the index
channels. Alone that takes 10-20 ms. Under load the search waits behind other
people's (the store serves one call at a time) and the analysis competes for the
interpreter: at 32 clients on 2 cores, 100-200 ms. A path begun with less than that
left of the recall's budget ends after the recall has given up: it finds nothing in
time, delays the searches queued behind it, and keeps its turn waiting to the end of
the budget (18-31 % of such first turns ran out of time so).

:class:`DensePathTimes` keeps how long the recent paths took, queueing included (a
path cut short by the budget counts the time it had so far), and
:meth:`DensePathTimes.fits` tells a recall whether one begun now is likely to end
within its budget: the median of the paths of the last :data:`WINDOW_S` seconds. With
none that recent (no load, or none started because none fitted), it fits: the next
paths measure the load again.
"""

from __future__ import annotations

import time
from collections import deque

WINDOW_S = 2.0
"""How far back the paths that tell the current load go."""

KEPT = 64
"""Most paths kept (the newest)."""


class DensePathTimes:
    """Recent durations of dense recall from the store (use from the event loop)."""

    def __init__(self) -> None:
        self._paths: deque[tuple[float, float]] = deque(maxlen=KEPT)

    def record(self, seconds: float) -> None:
        """A path took ``seconds`` (or had taken them when its recall ran out of time)."""
        self._paths.append((time.monotonic(), seconds))

    def expected_s(self) -> float:
        """What a path begun now is likely to take: the median of the recent ones (0.0
        with none recent)."""
        since = time.monotonic() - WINDOW_S
        recent = sorted(s for at, s in self._paths if at >= since)
        return recent[len(recent) // 2] if recent else 0.0

    def fits(self, left_s: float) -> bool:
        """Whether a path begun now is likely to end within ``left_s`` seconds."""
        return self.expected_s() <= left_s


__all__ = ["KEPT", "WINDOW_S", "DensePathTimes"]
