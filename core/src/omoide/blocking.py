"""Run blocking model calls in worker threads, interactive work before batch work.

A component owns one :class:`PriorityRunner` (one worker by default, because a
model on a 2-core CPU gains nothing from running two calls at once). Calls wait in
a priority queue: an interactive call (a query embedding, an ASR of a person who is
waiting) always starts before any queued batch call. Callers split batch work into
small chunks so an interactive call never waits for more than one chunk.

A call that names no priority takes that of the work it is done for: interactive,
unless it is made inside :func:`batch_work` (extraction marks its work so, and the
store searches and reads it makes then queue behind those of a turn).
"""

from __future__ import annotations

import asyncio
import itertools
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from omoide.types import Priority

T = TypeVar("T")

_Job = tuple[Callable[[], Any], Future[Any]]

_WORK_PRIORITY: ContextVar[Priority] = ContextVar("omoide_work_priority",
                                                  default=Priority.INTERACTIVE)


def work_priority() -> Priority:
    """The priority of the work the current task does: :attr:`Priority.INTERACTIVE`
    unless it runs inside :func:`batch_work`."""
    return _WORK_PRIORITY.get()


@contextmanager
def batch_work() -> Iterator[None]:
    """Mark what runs inside (and the tasks it starts) as batch work: a blocking call
    made there that names no priority queues behind every interactive one. Enter and
    leave it in the same task."""
    token = _WORK_PRIORITY.set(Priority.BATCH)
    try:
        yield
    finally:
        _WORK_PRIORITY.reset(token)


class PriorityRunner:
    """A small thread pool whose queue is ordered by :class:`Priority`, then FIFO."""

    def __init__(self, name: str, workers: int = 1) -> None:
        self._name = name
        self._workers = workers
        self._queue: queue.PriorityQueue[tuple[int, int, _Job | None]] = queue.PriorityQueue()
        self._counter = itertools.count()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def _ensure_started(self) -> None:
        with self._lock:
            if self._threads:
                return
            for i in range(self._workers):
                t = threading.Thread(target=self._work, name=f"omoide-{self._name}-{i}",
                                     daemon=True)
                t.start()
                self._threads.append(t)

    def _work(self) -> None:
        while True:
            _, _, item = self._queue.get()
            if item is None:  # stop marker
                return
            fn, fut = item
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - handed to the awaiting caller
                fut.set_exception(exc)

    def submit(self, fn: Callable[[], T], priority: Priority | None = None) -> Future[T]:
        """Queue ``fn`` and return a concurrent future for its result (``priority``
        ``None``: that of the current work, see :func:`work_priority`)."""
        self._ensure_started()
        fut: Future[T] = Future()
        if priority is None:
            priority = work_priority()
        self._queue.put((int(priority), next(self._counter), (fn, fut)))
        return fut

    async def run(self, fn: Callable[[], T], priority: Priority | None = None) -> T:
        """Run ``fn`` on a worker thread and await its result (``priority`` as in
        :meth:`submit`)."""
        return await asyncio.wrap_future(self.submit(fn, priority))

    def close(self) -> None:
        """Let the workers finish what is queued, then stop them."""
        with self._lock:
            for _ in self._threads:
                self._queue.put((99, next(self._counter), None))
            self._threads = []


async def load_on_own_thread(load: Callable[[], T]) -> T:
    """Run ``load`` (loading weights, then one warm-up inference) on a new, short-lived thread.

    Measured on our CPUs (torch 2.13 with oneDNN/AMX, transformers 4.57): the first OS
    thread that runs inference in a process stays many times slower than any other
    (Qwen3-Embedding-0.6B shape, bf16, 2 threads: a 40-token query took 1.7-11 s on that
    thread and 0.15-0.35 s on the others). Components that run torch models load and
    warm up through this, so their real work runs on other threads.
    """
    executor = ThreadPoolExecutor(1, thread_name_prefix="omoide-load")
    try:
        return await asyncio.get_running_loop().run_in_executor(executor, load)
    finally:
        executor.shutdown(wait=False)
