"""Keeps the journal honest: start-up checks, the spill file, recovery, the manifest.

- :meth:`JournalKeeper.open` checks the journal and the store against the manifest
  (:mod:`omoide.memory.journal.data_guard`) and refuses to start over missing or damaged data
  unless told to accept it; then opens the journal and writes back what the spill file
  kept.
- :meth:`JournalKeeper.record` journals an exchange. When the journal fails, the
  exchange goes to the spill file (:mod:`omoide.memory.journal.spill`), :attr:`problem` says what
  failed (the memory component's health is *failed* meanwhile) and
  :class:`JournalingFailed` tells the turn; a probe retries the journal every few seconds
  and, once it works, the spilled exchanges are written to it.
- The manifest's high-water marks follow the data: the first exchange and the first
  stored memory are recorded at once, the exchange count again on :meth:`flush`.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from omoide.components import VectorStore
from omoide.errors import OmoideError
from omoide.memory.journal.data_guard import DataGuard, DataMissing
from omoide.memory.journal.spill import SpillFile
from omoide.memory.journal.storage import ExchangeJournal
from omoide.types import Exchange

log = logging.getLogger("omoide.memory.journal")

PROBE_SECONDS = 5.0
UPGRADE_USERS_CHECKED = 50


class JournalingFailed(OmoideError):
    """An exchange could not be journaled (it was kept in the spill file, or lost)."""


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def store_in_local_files(store: VectorStore) -> str | None:
    """Where ``store`` keeps its data in this machine's files (its ``path:``), or None
    for a store server or one in memory: only a store server can be shared by several
    workers."""
    path = getattr(store.config, "path", None)
    return str(path) if path else None


class JournalKeeper:
    """The journal of one data directory, with its spill file and manifest."""

    def __init__(self, data_dir: Path, journal: ExchangeJournal, *, accept_data_loss: bool,
                 probe_seconds: float = PROBE_SECONDS) -> None:
        self.data_dir = Path(data_dir)
        self.journal = journal
        self.accept_data_loss = accept_data_loss
        self.probe_seconds = probe_seconds
        self.spill = SpillFile(journal.path.with_name(journal.path.stem + "-spill.jsonl"))
        self._guard = DataGuard(self.data_dir, journal.path)
        self._store: VectorStore | None = None
        self._problem: str | None = None
        self._exchanges = 0
        self._memories_stored = False
        self._probe: asyncio.Task[None] | None = None
        self._flushes: set[asyncio.Task[None]] = set()

    @property
    def problem(self) -> str | None:
        """What is wrong with journaling right now (None when it works)."""
        return self._problem

    # -- start and stop ----------------------------------------------------------------
    async def open(self, store: VectorStore) -> None:
        """Check the data, open the journal, write back spilled exchanges, record the
        manifest. Raises :class:`DataMissing` (see :mod:`omoide.memory.journal.data_guard`)."""
        guard = self._guard
        self._store = store
        # A journal on a database server is not a file of this data dir to check.
        file_problems = (await asyncio.to_thread(guard.journal_problems)
                         if self.journal.file_backed else [])
        problems = [*file_problems, *await guard.store_problems(store)]
        moved = None
        if problems:
            if not self.accept_data_loss:
                raise DataMissing(problems, guard.manifest_path)
            for p in problems:
                log.warning("accepted as lost (memory.accept_data_loss): %s", p)
            moved = guard.set_aside(problems)
            guard.accepted()
        await asyncio.to_thread(self.journal.open)
        local = store_in_local_files(store)
        if not self.journal.file_backed and local is not None:
            log.warning("the journal is shared (database.url) but the store keeps its data"
                        " in %s: memories this worker stores are not seen by another"
                        " worker. Several workers need a store server (Qdrant url:,"
                        " Chroma host:)", local)
        if moved is not None:
            await asyncio.to_thread(guard.salvage, moved, self.journal)
        spilled = await asyncio.to_thread(self.spill.replay, self.journal.append_sync)
        if spilled:
            log.warning("%d exchanges kept in %s while the journal failed are now journaled",
                        spilled, self.spill.path)
        self._exchanges = await self.journal.count_exchanges()
        self._memories_stored = await self._had_memories(store)
        await self.flush()

    async def _had_memories(self, store: VectorStore) -> bool:
        manifest = self._guard.manifest
        if manifest is not None:
            return manifest.store.memories_stored
        # no manifest yet (a fresh directory, or one from before manifests): look
        if store.damaged_people:  # accepted as lost: they had memories
            return True
        if await store.fingerprint() is None:
            return False
        for user in (await self.journal.users())[:UPGRADE_USERS_CHECKED]:
            if await store.count(user) > 0:
                return True
        return False

    async def flush(self) -> None:
        """Write the manifest's marks (the exchange count seen, memories stored)."""
        if self._store is None or not self.journal.is_open:
            return
        try:
            count = await self.journal.count_exchanges()
            self._exchanges = max(self._exchanges, count)
            await asyncio.to_thread(self._guard.record, self._exchanges, self._store,
                                    self._memories_stored)
        except Exception as exc:  # noqa: BLE001 - the manifest must never break memory
            log.warning("could not write %s: %s", self._guard.manifest_path, exc)

    async def close(self) -> None:
        await asyncio.gather(*self._flushes, return_exceptions=True)
        if self._probe is not None:
            self._probe.cancel()
            await asyncio.gather(self._probe, return_exceptions=True)
            self._probe = None
        if self._problem is None:
            await self.flush()

    # -- writing -------------------------------------------------------------------------
    async def record(self, exchange: Exchange) -> None:
        """Journal ``exchange``; on failure keep it in the spill file and raise
        :class:`JournalingFailed` saying where it is."""
        try:
            await self.journal.append(exchange)
        except Exception as exc:  # noqa: BLE001 - any failure must spill, not lose
            await self._spill(exchange, exc)
            return
        first = self._exchanges == 0
        self._exchanges += 1
        if self._problem is not None or self.spill.path.exists():
            await self._recover()
        if first:
            await self.flush()

    async def _spill(self, exchange: Exchange, exc: BaseException) -> None:
        error = _describe(exc)
        self._problem = f"journal {self.journal.path} fails: {error}"
        log.error("journaling the exchange of %s failed: %s", exchange.user, error)
        try:
            await asyncio.to_thread(self.spill.append, exchange)
        except Exception as spill_exc:  # noqa: BLE001 - reported to the turn
            self._start_probe()
            raise JournalingFailed(
                f"the journal failed ({error}) and so did the spill file {self.spill.path}"
                f" ({_describe(spill_exc)}): this exchange is lost") from exc
        self._start_probe()
        raise JournalingFailed(f"the journal failed ({error}); this exchange is kept in"
                               f" {self.spill.path} until the journal works again") from exc

    def note_memories_stored(self) -> None:
        """A memory was written to the store: record it in the manifest (once)."""
        if self._memories_stored:
            return
        self._memories_stored = True
        try:
            task = asyncio.get_running_loop().create_task(self.flush())
        except RuntimeError:
            return  # no loop: the next flush records it
        self._flushes.add(task)
        task.add_done_callback(self._flushes.discard)

    # -- recovery ----------------------------------------------------------------------
    def _start_probe(self) -> None:
        if self._probe is None or self._probe.done():
            self._probe = asyncio.get_running_loop().create_task(self._probe_until_fixed())

    async def _probe_until_fixed(self) -> None:
        while self._problem is not None:
            await asyncio.sleep(self.probe_seconds)
            await self._recover()

    async def _recover(self) -> bool:
        """Try the journal; when it works, write the spilled exchanges to it."""
        try:
            try:
                await asyncio.to_thread(self.journal.probe_sync)
            except Exception:  # noqa: BLE001 - a fresh connection may do better
                await asyncio.to_thread(self.journal.reopen)
                await asyncio.to_thread(self.journal.probe_sync)
            replayed = await asyncio.to_thread(self.spill.replay, self.journal.append_sync)
        except Exception as exc:  # noqa: BLE001 - still failing; the probe tries again
            self._problem = f"journal {self.journal.path} fails: {_describe(exc)}"
            return False
        if self._problem is not None or replayed:
            log.warning("the journal works again; %d spilled exchanges journaled", replayed)
        self._problem = None
        self._exchanges += replayed
        return True
