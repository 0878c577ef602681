"""Blocking calls take the priority of the work they are done for: a call made inside
``batch_work()`` (extraction) that names no priority queues behind interactive calls."""

from __future__ import annotations

import asyncio
import contextlib
import threading

from omoide.blocking import PriorityRunner, batch_work, work_priority
from omoide.types import Priority


async def _order_of(calls: list[tuple[str, bool, Priority | None]]) -> list[str]:
    """Queue ``calls`` (name, made as batch work, priority named) behind a call that
    holds the runner's one worker, then let them run; the order they ran in."""
    runner = PriorityRunner("test")
    gate = threading.Event()
    ran: list[str] = []
    holder = asyncio.ensure_future(runner.run(gate.wait))
    tasks = []
    for name, as_batch, priority in calls:
        def call(name: str = name) -> None:
            ran.append(name)
        with batch_work() if as_batch else contextlib.nullcontext():
            tasks.append(asyncio.ensure_future(runner.run(call, priority)))
        await asyncio.sleep(0)  # queued in this order
    gate.set()
    await asyncio.gather(holder, *tasks)
    runner.close()
    return ran


async def test_work_is_interactive_unless_marked_as_batch_work() -> None:
    assert work_priority() is Priority.INTERACTIVE
    with batch_work():
        assert work_priority() is Priority.BATCH
    assert work_priority() is Priority.INTERACTIVE


async def test_a_call_made_as_batch_work_waits_behind_a_later_interactive_one() -> None:
    order = await _order_of([("extraction", True, None), ("turn", False, None)])
    assert order == ["turn", "extraction"]


async def test_a_priority_named_by_the_caller_wins_over_the_work_it_is_done_for() -> None:
    order = await _order_of([("batch, named", False, Priority.BATCH),
                             ("interactive inside batch work", True, Priority.INTERACTIVE)])
    assert order == ["interactive inside batch work", "batch, named"]
