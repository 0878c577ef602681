"""A warm start: saved indexes loaded before anyone asks, outdated ones renewed.

Both at batch priority, so a turn's own request goes first.
"""

from __future__ import annotations

import asyncio
import functools
import logging

from omoide.memory.config import IndexSettings
from omoide.memory.index.builds import IndexBuilds
from omoide.memory.index.cache_worker import CacheWorker
from omoide.memory.index.lru import ReadyIndexes
from omoide.memory.index.saved_indexes import IndexStore
from omoide.memory.index.shared_store_refresh import SharedStoreRefresh
from omoide.types import Priority

log = logging.getLogger("omoide.memory.index")


async def warm_from_saved(saved: IndexStore, settings: IndexSettings, worker: CacheWorker,
                          ready: ReadyIndexes, builds: IndexBuilds,
                          refresh: SharedStoreRefresh) -> None:
    """Load saved indexes, most recently written first, up to ``warm_people`` people and
    half the memory budget; then, with ``renew_outdated``, rebuild the saved indexes an
    upgrade made outdated, one at a time while no recall runs, the most recently written
    first (each is saved, and kept in memory only where the budget has room)."""
    try:
        people = await worker.run(
            functools.partial(saved.recent, settings.warm_people), Priority.BATCH)
        outdated = await worker.run(saved.outdated, Priority.BATCH) \
            if settings.renew_outdated else []
    except Exception as exc:  # noqa: BLE001 - a cold start is slower, not broken
        log.warning("could not list the saved indexes: %s", exc)
        return
    room = ready.budget_bytes // 2
    for user, memories in people:
        room -= ready.estimate(memories)
        if room < 0:
            break
        build = None if user in ready else builds.start(user, Priority.BATCH)
        if build is not None:
            await asyncio.gather(build.task, return_exceptions=True)
    if outdated:
        log.info("renewing %d saved indexes made by an earlier version", len(outdated))
    for user, memories in outdated:
        if memories > saved.max_memories:
            continue  # not kept on disk anyway
        await refresh.until_quiet()  # people are talking: their turns come first
        if user in ready or user in builds:
            continue
        build = builds.start(user, Priority.BATCH, renewal=True)
        if build is not None:
            await asyncio.gather(build.task, return_exceptions=True)
