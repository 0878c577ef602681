"""Recalls under way, so that a large index build steps aside for them.

Building an index is pure Python and holds the interpreter lock; a recall's store
search, embedding and SQLite reads release the lock and must win it back at every
step. With a build running, the search that answers a person whose index is not ready
(Qdrant local, 100,000 memories) took 666 ms instead of 110 ms: each time it released
the lock it waited for the builder's next switch. A build that is past its first
memories (:data:`LARGE_BUILD`) cannot be ready within the turn anyway, so while any
recall runs it pauses between its slices, for at most :data:`MAX_PAUSE_S` each time
(it still progresses under constant load, at a tenth of its speed or so); small
builds, which the turn that started them waits for, never pause.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

LARGE_BUILD = 1_000
"""Memories a build has analysed after which it steps aside for recalls."""

MAX_PAUSE_S = 0.02
"""Longest pause between two slices of a large build while recalls run."""


class Foreground:
    """Counts the recalls under way (on the event loop); read from worker threads."""

    def __init__(self) -> None:
        self._running = 0
        self._idle = threading.Event()
        self._idle.set()

    @property
    def busy(self) -> bool:
        return not self._idle.is_set()

    @contextmanager
    def recalling(self) -> Iterator[None]:
        """Mark one recall as under way for the duration of the block."""
        self._running += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._running -= 1
            if not self._running:
                self._idle.set()

    def step_aside(self, analysed: int) -> None:
        """Between two slices of a build that has ``analysed`` memories so far (on its
        worker thread): wait while recalls run, up to :data:`MAX_PAUSE_S`, if it is a
        large build."""
        if analysed >= LARGE_BUILD:
            self._idle.wait(MAX_PAUSE_S)


__all__ = ["LARGE_BUILD", "MAX_PAUSE_S", "Foreground"]
