"""Cooperative pre-emption of a batch forward pass by interactive ones.

A query embedding must not wait for a whole extraction batch. Splitting batches into
small chunks bounds the wait by one chunk; this gate bounds it by one *decoder layer*
of one chunk: the batch thread checks the gate before every layer and parks while an
interactive call is pending, and the interactive call starts only once the batch thread
is parked or idle (so the two never fight for the same cores).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class LayerGate:
    """Lets interactive model calls overtake a batch call at layer boundaries."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._pending = 0          # interactive calls waiting or running
        self._batch_busy = False   # a batch call is inside the model and not parked
        self._batch_thread: int | None = None

    @contextmanager
    def interactive(self) -> Iterator[None]:
        """Wrap an interactive forward pass: waits until the batch pass is parked."""
        with self._cond:
            self._pending += 1
            self._cond.wait_for(lambda: not self._batch_busy)
        try:
            yield
        finally:
            with self._cond:
                self._pending -= 1
                self._cond.notify_all()

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Wrap a batch forward pass (the pass calls :meth:`checkpoint` between layers)."""
        with self._cond:
            self._cond.wait_for(lambda: self._pending == 0)
            self._batch_busy = True
            self._batch_thread = threading.get_ident()
        try:
            yield
        finally:
            with self._cond:
                self._batch_busy = False
                self._batch_thread = None
                self._cond.notify_all()

    def checkpoint(self) -> None:
        """Called before each layer; parks the batch thread while interactive work is due."""
        if threading.get_ident() != self._batch_thread:
            return  # interactive passes never park
        with self._cond:
            if self._pending == 0:
                return
            self._batch_busy = False
            self._cond.notify_all()
            self._cond.wait_for(lambda: self._pending == 0)
            self._batch_busy = True
