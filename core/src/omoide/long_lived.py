"""Long-lived objects and CPython's cyclic garbage collector.

A full (generation-2) collection walks every container object the collector tracks.
omoide keeps millions of them for as long as it runs: the loaded models and, above
all, the per-person indexes (a person of 100,000 memories is about 2.2 million
tracked objects). Measured on the 2-core machine with such a person: one full
collection took 1.7 s; building the index set off 16 of them (11 s of a 51 s build,
CPython starts one each time the long-lived objects grow by a quarter), and one fell
at a random moment on the read path later (a recall of 1.78 s where the others took
16 ms).

:func:`settle` calls :func:`gc.freeze`: every object tracked at that moment moves to
the permanent generation, which collections never walk again (freezing itself is a
constant-time list splice). Callers settle right after they made a large batch of
objects that live on: a server once it is ready (the models), the index cache after a
person's index was built or loaded, and every few thousand memories during a build.
With that, the same recalls ran at most 29 ms and the full collections went.

What it costs: garbage *in a reference cycle* that exists at the moment of a freeze
is never collected. Reference counting still frees everything else, frozen or not,
as soon as nothing refers to it: an index dropped from the cache is freed (it holds
no cycles; a test keeps it so). To keep what a freeze holds back small, the young
generations are collected first (cheap: only objects made since the last
collection), so the short-lived cycles of the turns under way are not frozen.
"""

from __future__ import annotations

import gc
import logging
import threading
import time

log = logging.getLogger("omoide.long_lived")

_lock = threading.Lock()


def settle(what: str) -> None:
    """Keep the objects that exist now out of every later collection (see the module
    docstring); ``what`` made them (for the debug log). Safe from any thread.

    Costs a young collection (a few milliseconds after an index of 100 memories), so
    call it after a batch, not per object. It does not count the frozen objects:
    :func:`gc.get_freeze_count` walks all of them (22 ms in a server process).
    """
    with _lock:
        started = time.perf_counter()
        gc.collect(1)  # the young generations: cycles of the turns under way go first
        gc.freeze()
    log.debug("%s: long-lived objects kept out of collections (%.1f ms)", what,
              (time.perf_counter() - started) * 1000)


__all__ = ["settle"]
