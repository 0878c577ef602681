"""One extraction run for one user: finish what a crash left, then extract what waits,
in bounded batches, so that nothing is lost, nothing is stored twice and one bad
exchange never blocks the next.

1. Unfinished batches (:meth:`Journal.open_batches`) are completed first: a batch the
   chat model had answered is planned, a planned one applied again (idempotent).
2. Waiting exchanges are taken oldest first in batches of at most ``batch_exchanges``
   exchanges and ``batch_chars`` characters (statements cut to ``max_statement_chars``
   in the prompt). An exchange that can never be extracted (a time outside the
   calendar) is quarantined at once with the reason.
3. When the chat model's answer cannot be used (unreadable, too many facts, refused),
   the batch is split in halves and each half tried on its own, down to single
   exchanges. A single exchange that fails counts an attempt; after ``max_attempts``
   it is quarantined. An exchange that failed before is extracted on its own.
4. A service outage (a retryable error: the chat API is down, the store times out)
   ends the run without counting attempts: the exchanges wait for the next run. So does
   a chat model that failed every exchange it was asked about, each on its own, with one
   and the same error (a refused API key, a model that answers nothing usable): that is
   the model's fault, not the exchanges', and quarantining them all would only hide it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from omoide.blocking import batch_work
from omoide.components import Embedder, VectorStore
from omoide.errors import ComponentError
from omoide.memory.api import ExtractionReport
from omoide.memory.config import ExtractionSettings
from omoide.memory.extract.planning import BatchPlanner
from omoide.memory.extract.prompt import MAX_FACTS, Fact, TooManyFacts, one_line, unextractable
from omoide.memory.journal.exchange_log import ExchangesTaken, PendingExchange
from omoide.memory.journal.extraction_batches import ExtractionBatch, PlannedFact
from omoide.memory.journal.storage import ExchangeJournal
from omoide.memory.store_payload import from_payload
from omoide.types import Exchange, FloatArray, Memory, Priority

log = logging.getLogger("omoide.memory.extraction")

AskForFacts = Callable[[Sequence[Exchange]], Awaitable[list[Fact]]]
PutMemories = Callable[[str, Iterable[tuple[Memory, Any]]], Awaitable[None]]
WORK_LIMIT = 256


class ServiceOutage(Exception):
    """A component is unavailable for now: stop the run, count nothing against anyone."""


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` says a service is down (retry later) rather than that this input
    cannot be extracted."""
    return isinstance(exc, ComponentError) and exc.retryable


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


@dataclass
class _Tally:
    user: str
    exchanges: int = 0
    stored: list[Memory] = field(default_factory=list)
    skipped: int = 0
    superseded: list[str] = field(default_factory=list)
    quarantined: list[str] = field(default_factory=list)
    failed: set[str] = field(default_factory=set)
    alone: list[tuple[Exchange, str]] = field(default_factory=list)
    """Exchanges that failed on their own in this run, with the error."""
    answered: int = 0
    """Extraction calls the chat model answered usably in this run."""
    elsewhere: set[str] = field(default_factory=set)
    """Exchanges another process claimed while this run asked about them."""
    error: str | None = None
    outage: bool = False

    def report(self) -> ExtractionReport:
        pending = self.outage or bool(self.failed - set(self.quarantined))
        return ExtractionReport(self.user, self.exchanges, self.stored, self.skipped,
                                self.superseded, pending=pending, error=self.error,
                                quarantined=list(self.quarantined))


class ExtractionRunner:
    """Runs extraction for users of one journal and store (see the module docstring)."""

    def __init__(self, *, journal: ExchangeJournal, embedder: Embedder, store: VectorStore,
                 ask: AskForFacts, put: PutMemories, settings: ExtractionSettings,
                 timezone: str) -> None:
        self.journal = journal
        self.embedder = embedder
        self.store = store
        self.ask = ask
        self.put = put
        self.settings = settings
        self.timezone = timezone
        self.planner = BatchPlanner(embedder, store, timezone, settings.dedup_cosine)

    async def run(self, user: str) -> ExtractionReport:
        """Extract everything of ``user`` that can be extracted now, as batch work (the
        store searches and reads it makes queue behind those of turns). The leases it
        takes on a shared journal are kept while it runs, however long the chat model
        takes."""
        with batch_work():
            async with self.journal.leases_kept(user):
                return await self._run(user)

    async def _run(self, user: str) -> ExtractionReport:
        tally = _Tally(user)
        try:
            for batch in await self.journal.open_batches(user):
                await self._complete(batch, tally)
            while True:
                work = [w for w in await self.journal.pending_work(user, WORK_LIMIT)
                        if w.exchange.id not in tally.failed | tally.elsewhere]
                if not work:
                    break
                for group in await self._groups(work, tally):
                    await self._extract(group, tally)
        except ServiceOutage as exc:
            tally.outage, tally.error = True, str(exc)
            log.warning("extraction for %s stopped, exchanges stay pending: %s", user, exc)
        await self._settle_failures(tally)
        return tally.report()

    async def _settle_failures(self, tally: _Tally) -> None:
        """Count an attempt on each exchange that failed alone (quarantining it at the
        limit) — unless the chat model failed every one of them the same way."""
        if not tally.alone:
            return
        errors = {error for _, error in tally.alone}
        if tally.answered == 0 and len(tally.alone) > 1 and len(errors) == 1:
            error = f"the chat model failed every exchange the same way: {errors.pop()}"
            await self.journal.note_error([ex.id for ex, _ in tally.alone], error)
            tally.outage, tally.error = True, error
            log.warning("extraction for %s: %s; nothing is quarantined for it", tally.user,
                        error)
            return
        for ex, error in tally.alone:
            await self._single_failed(ex, error, tally)

    async def finish_unfinished(self) -> int:
        """Complete every batch a crash left unfinished, for every user (at start: the
        chat model's facts are journaled, so this needs only the embedder and the store).
        Returns how many batches were completed; failures stay for the next run."""
        with batch_work():
            async with self.journal.leases_kept():
                return await self._finish_unfinished()

    async def _finish_unfinished(self) -> int:
        done = 0
        for batch in await self.journal.open_batches():
            tally = _Tally(batch.user)
            try:
                await self._complete(batch, tally)
            except ServiceOutage as exc:
                log.warning("finishing extraction batches waits for a service: %s", exc)
                break
            if not tally.failed:
                done += 1
        if done:
            log.warning("finished %d extraction batches a crash had interrupted", done)
        return done

    # -- choosing batches ------------------------------------------------------------
    def _size(self, ex: Exchange) -> int:
        cut = self.settings.max_statement_chars
        return len(one_line(ex.user_text, cut)) + len(one_line(ex.assistant_text, cut))

    async def _groups(self, work: Sequence[PendingExchange], tally: _Tally,
                      ) -> list[list[Exchange]]:
        """``work`` in bounded batches, oldest first; exchanges that failed before go on
        their own; exchanges that can never be extracted are quarantined."""
        groups: list[list[Exchange]] = []
        current: list[Exchange] = []
        size = 0
        cfg = self.settings
        for item in work:
            ex = item.exchange
            reason = unextractable(ex, self.timezone)
            if reason is not None:
                await self.journal.quarantine([ex.id], reason)
                tally.quarantined.append(ex.id)
                tally.failed.add(ex.id)
                log.warning("exchange %s of %s quarantined: %s", ex.id, ex.user, reason)
                continue
            if item.attempts > 0:
                groups.append([ex])
                continue
            if current and (len(current) >= cfg.batch_exchanges
                            or size + self._size(ex) > cfg.batch_chars):
                groups.append(current)
                current, size = [], 0
            current.append(ex)
            size += self._size(ex)
        if current:
            groups.append(current)
        return groups

    # -- one batch -------------------------------------------------------------------
    async def _extract(self, group: list[Exchange], tally: _Tally) -> None:
        """Ask for ``group``'s facts and store them; on a bad answer, split the group."""
        ids = [e.id for e in group]
        try:
            facts = await self.ask(group)
        except Exception as exc:  # sorted into outage / bad input below
            error = describe(exc)
            if is_outage(exc):
                await self.journal.note_error(ids, error)
                raise ServiceOutage(error) from exc
            if isinstance(exc, TooManyFacts) and len(group) == 1:
                # one exchange can't be split further: keep what the limit allows
                log.warning("exchange %s gave %d facts; keeping the first %d", ids[0],
                            len(exc.facts), MAX_FACTS)
                facts = exc.facts[:MAX_FACTS]
            elif len(group) > 1:
                await self.journal.note_error(ids, f"batch of {len(group)} failed: {error}")
                middle = len(group) // 2
                log.info("extraction of %d exchanges of %s failed (%s); trying halves",
                         len(group), group[0].user, error)
                await self._extract(group[:middle], tally)
                await self._extract(group[middle:], tally)
                return
            else:
                tally.alone.append((group[0], error))
                tally.failed.add(ids[0])
                return
        tally.answered += 1
        try:
            batch = await self.journal.open_batch(group[0].user, group, facts)
        except ExchangesTaken as exc:  # another process extracts them: leave them to it
            log.info("extraction for %s: %s", group[0].user, exc)
            tally.elsewhere.update(ids)
            return
        await self._complete(batch, tally)

    async def _single_failed(self, ex: Exchange, error: str, tally: _Tally) -> None:
        attempts = (await self.journal.record_failure([ex.id], error)).get(ex.id, 0)
        tally.failed.add(ex.id)
        tally.error = error
        if attempts >= self.settings.max_attempts:
            reason = f"extraction failed {attempts} times: {error}"
            await self.journal.quarantine([ex.id], reason)
            tally.quarantined.append(ex.id)
            log.warning("exchange %s of %s quarantined: %s", ex.id, ex.user, reason)
        else:
            log.warning("extraction of exchange %s of %s failed (%d of %d attempts): %s",
                        ex.id, ex.user, attempts, self.settings.max_attempts, error)

    async def _complete(self, batch: ExtractionBatch, tally: _Tally) -> None:
        """Plan ``batch`` (if it has no plan yet), apply the plan, mark it done."""
        try:
            vectors: dict[str, FloatArray] = {}
            if batch.plan is None:
                plan, vectors = await self.planner.plan(batch)
                batch = await self.journal.save_plan(batch, plan)
            assert batch.plan is not None
            await self._apply(batch, batch.plan, vectors)
            await self.journal.finish_batch(batch)
        except Exception as exc:  # sorted into outage / retry / abandon
            error = describe(exc)
            if is_outage(exc):
                raise ServiceOutage(error) from exc
            attempts = await self.journal.batch_failed(batch, error)
            tally.error = error
            tally.failed.update(batch.exchange_ids)
            if attempts >= self.settings.max_attempts:
                await self.journal.abandon_batch(batch, error)
                log.error("extraction batch %s of %s abandoned after %d attempts: %s",
                          batch.id, batch.user, attempts, error)
            else:
                log.warning("extraction batch %s of %s failed (%d of %d attempts): %s",
                            batch.id, batch.user, attempts, self.settings.max_attempts,
                            error)
            return
        tally.exchanges += len(batch.exchange_ids)
        for p in batch.plan:
            if p.memory is None:
                tally.skipped += 1
            else:
                tally.stored.append(p.memory)
                tally.superseded.extend(p.supersedes)
        log.info("extraction for %s: %d exchanges -> %d facts stored, %d duplicates,"
                 " %d superseded", batch.user, len(batch.exchange_ids),
                 sum(p.memory is not None for p in batch.plan),
                 sum(p.memory is None for p in batch.plan),
                 sum(len(p.supersedes) for p in batch.plan))

    async def _apply(self, batch: ExtractionBatch, plan: Sequence[PlannedFact],
                     vectors: dict[str, FloatArray]) -> None:
        """Write ``plan`` to the store: each memory, then the marks on what it supersedes.
        Every write is an upsert of a record fully given by the plan: replaying it after a
        crash at any point leaves the store as one uninterrupted run would."""
        keep = [p.memory for p in plan if p.memory is not None]
        missing = [m for m in keep if m.id not in vectors]
        if missing:
            fresh = await self.embedder.embed([m.text for m in missing], "document",
                                              Priority.BATCH)
            vectors = {**vectors, **{m.id: v for m, v in zip(missing, fresh, strict=True)}}
        for p in plan:
            if p.memory is None:
                continue
            await self.put(batch.user, [(p.memory, vectors[p.memory.id])])
            if not p.supersedes:
                continue
            for record in await self.store.get(batch.user, list(p.supersedes)):
                old = from_payload(record.id, record.payload)
                if old.superseded_by != p.memory.id:
                    await self.put(batch.user, [(replace(old, superseded_by=p.memory.id),
                                                 record.vector)])
        if keep:
            await self.journal.note_user(batch.user)
