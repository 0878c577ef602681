"""Index builds share a few slots; a freed slot goes to a build someone waits for now,
the newest such first, so that under load the builds made are the ones still in time."""

from __future__ import annotations

import asyncio

import pytest

from omoide.memory.index.build_scheduling import BuildSlots
from omoide.types import Priority


class Holder:
    """One build wanting a slot: it records when it got one and holds it until let go."""

    def __init__(self, slots: BuildSlots, name: str, order: list[str],
                 priority: Priority = Priority.INTERACTIVE) -> None:
        self.name, self.priority = name, priority
        self.release = asyncio.Event()
        self.task = asyncio.create_task(self._hold(slots, order))

    async def _hold(self, slots: BuildSlots, order: list[str]) -> None:
        async with slots.held(lambda: self.priority):
            order.append(self.name)
            await self.release.wait()


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_no_more_builds_than_slots_hold_one_at_once() -> None:
    slots, order = BuildSlots(2), []
    holders = [Holder(slots, f"b{i}", order) for i in range(4)]
    await settle()
    assert order == ["b0", "b1"] and slots.waiting == 2
    holders[0].release.set()
    await settle()
    assert len(order) == 3
    for h in holders:
        h.release.set()
    await asyncio.gather(*(h.task for h in holders))
    assert sorted(order) == ["b0", "b1", "b2", "b3"] and slots.waiting == 0


async def test_a_freed_slot_goes_to_the_most_urgent_build_then_to_the_newest() -> None:
    slots, order = BuildSlots(1), []
    first = Holder(slots, "first", order)
    await settle()
    background = Holder(slots, "refresh", order, Priority.BATCH)
    await settle()
    older = Holder(slots, "older", order)
    await settle()
    newer = Holder(slots, "newer", order)
    await settle()
    for h in (first, newer, older, background):
        h.release.set()
        await settle()
    assert order == ["first", "newer", "older", "refresh"]


async def test_a_priority_changed_while_waiting_decides_who_goes_next() -> None:
    slots, order = BuildSlots(1), []
    first = Holder(slots, "first", order)
    await settle()
    still_waited_for = Holder(slots, "still waited for", order)
    await settle()
    given_up = Holder(slots, "given up", order)
    await settle()
    given_up.priority = Priority.BATCH  # its turn went ahead without it
    first.release.set()
    await settle()
    assert order == ["first", "still waited for"]
    for h in (still_waited_for, given_up):
        h.release.set()
    await asyncio.gather(first.task, given_up.task, still_waited_for.task)
    assert order[-1] == "given up"


async def test_a_build_cancelled_while_waiting_takes_no_slot_with_it() -> None:
    slots, order = BuildSlots(1), []
    first = Holder(slots, "first", order)
    await settle()
    cancelled = Holder(slots, "cancelled", order)
    last = Holder(slots, "last", order)
    await settle()
    cancelled.task.cancel()
    first.release.set()
    await settle()
    with pytest.raises(asyncio.CancelledError):
        await cancelled.task
    assert order == ["first", "last"]
    last.release.set()
    await last.task
    again = Holder(slots, "again", order)  # the slot is free again
    await settle()
    assert order[-1] == "again"
    again.release.set()
    await again.task


def test_slots_need_at_least_one() -> None:
    with pytest.raises(ValueError, match="at least one slot"):
        BuildSlots(0)
