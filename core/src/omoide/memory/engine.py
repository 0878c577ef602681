"""The memory engine: journal, extraction, dedup, the read path, memory control.

:class:`MemoryEngine` implements :class:`omoide.memory.api.MemoryService` for the turn
pipeline and adds what ``omoide memory`` and the HTTP routes need (search, get,
forget, export, import, pending, reembed).

Two stages are components a config picks (``memory.retrieve``, ``memory.extract``):
the read engine (:class:`omoide.components.RecallEngine`: ``robust``, ``baseline`` or a
plugin's) and the extractor (:class:`omoide.components.Extractor`: ``chat`` or a
plugin's). Everything around them is this engine's: the journal, the extraction
batches with their exactly-once replay, dedup and supersession, quarantine, the store
writes and the per-person indexes.

Every store call names the user; the per-user lexical/temporal index is built from
the store a page at a time on the person's first recall, kept current on writes and
held in a bounded cache (:mod:`omoide.memory.index.cache`); with ``database.url`` every
write and forget is announced to the other workers and theirs are applied to this
worker's indexes (:mod:`omoide.memory.index.peer_writes`). Extraction runs as asyncio
tasks off the turn path; recall never waits for it and never exceeds
``time_budget_ms`` (it degrades to "no memory", with ``Recall.timed_out`` set).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from omoide.components import (
    ChatModel,
    Component,
    ComponentState,
    Embedder,
    ExtractionRequest,
    Extractor,
    RecallEngine,
    RecallRequest,
    VectorStore,
)
from omoide.components.extractor import Fact
from omoide.errors import InvalidInput
from omoide.memory.api import ExtractionReport, Recall
from omoide.memory.config import MemoryConfig
from omoide.memory.control.import_format import (
    ImportFailed,
    ImportReport,
    imported_memory_id,
)
from omoide.memory.control.pending_vectors import (
    FILE_NAME as PENDING_VECTORS_FILE,
)
from omoide.memory.control.pending_vectors import (
    INLINE_EMBED_MAX,
    VECTORS_WAITING,
    FillProgress,
    PendingVectors,
    fill_pending,
    placeholder_vector,
)
from omoide.memory.extract.runner import ExtractionRunner
from omoide.memory.facts.profile import Classification, Profile
from omoide.memory.index.cache import IndexCache, dense_only_index
from omoide.memory.index.dense_path_timing import DensePathTimes
from omoide.memory.index.dense_snapshot_files import SavedSnapshots
from omoide.memory.index.peer_writes import PeerWrites
from omoide.memory.index.person_index import UserIndex
from omoide.memory.index.saved_indexes import IndexStore
from omoide.memory.journal.exchange_log import DeadLetter, PendingSummary
from omoide.memory.journal.keeper import JournalKeeper
from omoide.memory.journal.opening import DatabaseChoice, exchange_journal
from omoide.memory.language.canonical import dedup_key
from omoide.memory.language.lexicon import analyzer
from omoide.memory.memory_json import ImportItem, check_item, to_json
from omoide.memory.recall.robust import prepare
from omoide.memory.stage_loader import build_stage
from omoide.memory.stage_views import ExtractorHostView, PersonView
from omoide.memory.store_payload import from_payload, to_payload
from omoide.private_files import open_private
from omoide.stage_spec import StageSpec
from omoide.types import Exchange, Memory, Priority, RetrievedMemory, VectorRecord
from omoide.user_ids import validate_user_id

log = logging.getLogger("omoide.memory")

IMPORT_BATCH = 64
FILL_RETRY_S = 60.0
"""After a failed vector fill (the embedder down), how long until it is tried again."""
"""Memories an import embeds and stores at a time before letting other work run."""


class MemoryEngine:
    """Long-term memory for every user of one server.

    ``read_engine`` and ``extractor`` are the configured stages (a runtime passes the
    ones it built); when not given they are built from ``config.retrieve`` /
    ``config.extract`` through the plugin registry, started by :meth:`start` and
    stopped by :meth:`stop`.
    """

    def __init__(self, config: MemoryConfig, *, embedder: Embedder, store: VectorStore,
                 chat: ChatModel | None, data_dir: Path, timezone: str,
                 read_engine: RecallEngine | None = None,
                 extractor: Extractor | None = None,
                 database: DatabaseChoice | None = None) -> None:
        self.config = config
        self.read_engine: RecallEngine = read_engine or _read_engine(
            config.retrieve_stage, "memory.retrieve")
        self.extractor: Extractor = extractor or _extractor(
            config.extract, "memory.extract")
        # attached now: a runtime may start the extractor before this engine starts
        self.extractor.attach(ExtractorHostView(lambda: self.chat, timezone))
        self._read_engines: dict[str, asyncio.Future[RecallEngine]] = {}
        self._own_stages: list[Component[Any]] = []
        self.embedder = embedder
        self.store = store
        self.chat = chat
        self.data_dir = Path(data_dir)
        self.timezone = timezone
        self._tz = ZoneInfo(timezone)
        # SQLite in the data dir, or PostgreSQL when database.url names one
        self.journal = exchange_journal(self.data_dir / config.journal, database)
        self.keeper = JournalKeeper(self.data_dir, self.journal,
                                    accept_data_loss=config.accept_data_loss)
        saved = (IndexStore(self.data_dir / "indexes.sqlite3", config.index.keep_max_memories)
                 if config.index.keep_on_disk else None)
        self._indexes = IndexCache(store, timezone, config.index, config.index.refresh_s,
                                   saved, prepare=self._prepare_index,
                                   snapshots=SavedSnapshots(self.data_dir / "dense"))
        self.peers = PeerWrites(
            str(database.url), store=store, indexes=self._indexes,
            written=self._index_written, forgotten=self._index_forgotten,
            versions_path=self.data_dir / "peer_versions.json",
        ) if database is not None and database.url else None
        """Other workers' writes into this one's indexes, and this one's announced to
        them (:mod:`omoide.memory.index.peer_writes`): only with PostgreSQL."""
        self._dense_paths = DensePathTimes()
        """Recent dense recalls from the store, so a recall starts one only if it fits."""
        self._extract_locks: dict[str, asyncio.Lock] = {}
        self._import_locks: dict[str, asyncio.Lock] = {}
        self._write_locks: dict[str, asyncio.Lock] = {}
        self.vectors = PendingVectors(self.data_dir / PENDING_VECTORS_FILE)
        """Memories stored before their vectors (a large import, a repair)."""
        self._fill_task: asyncio.Task[None] | None = None
        self._fill_wanted = asyncio.Event()
        self._extract_tasks: dict[str, asyncio.Task[ExtractionReport]] = {}
        self._idle_timers: dict[str, asyncio.TimerHandle] = {}
        self._count_tasks: set[asyncio.Task[None]] = set()
        self._retry_task: asyncio.Task[None] | None = None
        self._started = False

    # -- lifecycle -----------------------------------------------------------------
    async def start(self) -> None:
        """Check the data against the manifest, open the journal (writing back what the
        spill file kept) and the store (components are already started), and finish the
        extraction batches a crash interrupted. Raises
        :class:`omoide.memory.journal.data_guard.DataMissing` over missing or damaged data."""
        if self._started:
            return
        await self.keeper.open(self.store)
        if self.peers is not None:
            await self.peers.start()
        await self.store.open(await self.embedder.fingerprint())
        for stage in (self.read_engine, self.extractor):
            await self._start_stage(stage)
        await self._extraction_runner().finish_unfinished()
        await asyncio.to_thread(lambda: analyzer().available)  # load the dictionary now
        self._started = True
        if not (self.extractor.capabilities.uses_chat_model and self.chat is None):
            self._retry_task = asyncio.create_task(self._retry_pending_forever())
        # Indexes are built on each person's first recall, not here: start-up stays the
        # same with 10 people or 10,000. A server then calls warm_indexes().

    async def stop(self) -> None:
        for timer in self._idle_timers.values():
            timer.cancel()
        self._idle_timers.clear()
        tasks: list[asyncio.Task[Any]] = list(self._extract_tasks.values())
        for task in (self._retry_task, self._fill_task):
            if task is not None:
                tasks.append(task)
        self._retry_task = self._fill_task = None
        for t in tasks:
            if not t.done():
                t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self.peers is not None:
            await self.peers.stop()
        await self.keeper.close()
        await self._indexes.stop()
        self.journal.close()
        self.vectors.close()
        for stage in reversed(self._own_stages):
            try:
                await stage.stop()
            except Exception:
                log.exception("stopping %s %s failed", stage.kind, stage.name)
        self._own_stages.clear()
        self._read_engines.clear()
        self._started = False

    async def _start_stage(self, stage: Component[Any]) -> None:
        """Start a stage nobody started yet (a runtime starts the ones it built)."""
        if stage.status.state is not ComponentState.READY:
            await stage.start()
            self._own_stages.append(stage)

    # -- read path -----------------------------------------------------------------
    async def recall(self, user: str, query: str, now: datetime, *,
                     engine: str | None = None) -> Recall:
        """Memories to inject for ``query``, and the person's profile, from the configured
        read engine (or the registered engine named ``engine``: evaluation); never
        raises, never exceeds the budget (a recall that runs out of time still carries
        the profile when the person's index is ready: a safety fact is never lost to
        it). See :meth:`omoide.components.RecallEngine.recall`."""
        if now.tzinfo is None:
            now = now.replace(tzinfo=self._tz)
        now = now.astimezone(self._tz)
        try:
            reader = await self.read_engine_named(engine)
        except Exception as exc:  # noqa: BLE001 - an unknown engine: no memory, said why
            return Recall([], engine or self.read_engine.name, {"embed": 0.0, "search": 0.0},
                          error=f"{type(exc).__name__}: {exc}")
        unavailable = self._unavailable(user, reader.name)
        if unavailable is not None:
            return unavailable
        person = self.person(user)
        try:
            with self._indexes.foreground.recalling():  # large index builds step aside
                recall = await reader.recall(person, self._recall_request(query, now))
        finally:
            person.close()
        if recall.timed_out or recall.error:  # the store may have found the damage just now
            return self._unavailable(user, reader.name) or recall
        if await self.vectors.is_waiting(user):
            recall = replace(recall, shortfalls=(*recall.shortfalls, VECTORS_WAITING))
        return recall

    def _unavailable(self, user: str, engine: str) -> Recall | None:
        """"Memory unavailable" for a person whose store is lost (see
        :meth:`VectorStore.check_people`), rather than a recall that fails or times out."""
        damage = self.store.damaged_people.get(user)
        if damage is None:
            return None
        return Recall([], engine, {"embed": 0.0, "search": 0.0},
                      error=f"memory unavailable: the store of {user!r} is lost"
                            f" ({damage.what}); repair it with `omoide memory repair"
                            f" --user {user}`")

    @property
    def dense_paths(self) -> DensePathTimes:
        """How long dense recalls from the store took lately (see its module)."""
        return self._dense_paths

    def person(self, user: str) -> PersonView:
        """``user``'s memory as a read engine sees it (bound to them)."""
        return PersonView(user, store=self.store, embedder=self.embedder,
                          timezone=self.timezone, indexes=self._indexes, config=self.config,
                          dense_paths=self._dense_paths)

    def _recall_request(self, query: str, now: datetime) -> RecallRequest:
        profile = self.config.profile
        return RecallRequest(query, now, self.config.max_results,
                             profile.budget_chars if profile.enabled else None,
                             self.config.time_budget_ms)

    def _prepare_index(self, index: UserIndex) -> None:
        """What every recall of a new index reads, made on the index worker before the
        index is used: its profile block (a person of 100,000 memories has tens of
        thousands of profile facts to sort; made here, they are also kept out of full
        garbage collections with the index, see :mod:`omoide.long_lived`)."""
        if self.config.profile.enabled:
            index.profile(self.config.profile.budget_chars)

    def warm_indexes(self) -> None:
        """Load the saved indexes of the people who talked most recently, in the
        background (``memory.index.warm_people``): for a server, whose next turns are
        theirs; a one-off command has no use for them. Returns at once."""
        self._indexes.warm()
        if self._fill_task is None:
            self._fill_task = asyncio.create_task(self._fill_vectors_forever())

    @property
    def engine_name(self) -> str:
        """The configured read engine's name (the trace's ``retrieve`` stage shows it)."""
        return self.read_engine.name

    async def read_engine_named(self, name: str | None) -> RecallEngine:
        """The configured read engine, or the registered one called ``name`` (built with
        its default options and started on first use: ``omoide eval --engine``)."""
        if name is None or name == self.read_engine.name:
            return self.read_engine
        future = self._read_engines.get(name)
        if future is None:
            future = asyncio.ensure_future(self._started_engine(name))
            self._read_engines[name] = future
        try:
            return await asyncio.shield(future)
        except Exception:
            self._read_engines.pop(name, None)  # e.g. an unknown name: ask again next time
            raise

    async def _started_engine(self, name: str) -> RecallEngine:
        engine = _read_engine(StageSpec(use=name), "memory.retrieve")
        await self._start_stage(engine)
        return engine

    def _known_read_engines(self) -> list[RecallEngine]:
        """The read engines in use (the configured one and any started by name)."""
        out = [self.read_engine]
        out += [f.result() for f in self._read_engines.values()
                if f.done() and not f.cancelled() and f.exception() is None]
        return out

    # -- profile -----------------------------------------------------------------------
    def cached_profile(self, user: str, engine: str | None = None) -> Profile:
        """The profile the read engine has ready for ``user`` (no waiting, no I/O).

        Empty for engines without a profile (the reference ``baseline``) and when
        ``memory.profile.enabled`` is off.
        """
        if not self.config.profile.enabled:
            return Profile()
        reader = self.read_engine
        if engine is not None and engine != reader.name:
            future = self._read_engines.get(engine)
            if future is None or not future.done() or future.exception() is not None:
                return Profile()
            reader = future.result()
        return reader.ready_profile(self.person(user), self.config.profile.budget_chars)

    async def profile(self, user: str) -> Profile:
        """The person's profile within the configured budget (builds the index if needed)."""
        index = await self.index(user)
        return index.profile(self.config.profile.budget_chars)

    async def profile_candidates(self, user: str) -> list[tuple[Memory, Classification]]:
        """Every live memory with its profile-or-episodic decision (for people auditing)."""
        index = await self.index(user)
        out: list[tuple[Memory, Classification]] = []
        for m in index.memories():
            c = index.classification(m.id)
            if c is not None and not m.superseded_by:
                out.append((m, c))
        return sorted(out, key=lambda mc: mc[0].created_at)

    async def index(self, user: str) -> UserIndex:
        """The user's lexical/temporal index, waiting for it to be built (an empty one
        when it does not fit ``memory.index.budget_mb``)."""
        idx = await self._indexes.wait(user, None)
        return idx if idx is not None else dense_only_index(user, self.timezone)

    async def recognition_vocabulary(self, user: str, limit: int) -> list[str]:
        """Names, places and entities of ``user``'s live memories, most frequent and
        recent first, for biasing speech recognition (:meth:`UserIndex.vocabulary`).

        Waits for the user's index if it is being built: callers bound the time.
        """
        return (await self.index(user)).vocabulary(limit)

    @property
    def indexes(self) -> IndexCache:
        """The per-person index cache (statistics for benchmarks)."""
        return self._indexes

    # -- write path ----------------------------------------------------------------
    async def record_exchange(self, exchange: Exchange) -> None:
        """Journal ``exchange``. When the journal fails, the exchange is kept in the spill
        file and :class:`~omoide.memory.journal.keeper.JournalingFailed` is raised (see
        :attr:`problem`)."""
        await self.keeper.record(exchange)

    @property
    def problem(self) -> str | None:
        """What keeps memory from working right now (the journal fails), or None."""
        return self.keeper.problem

    def note_turn_completed(self, exchange: Exchange) -> None:
        """Arm the idle timer; extract at once when enough exchanges wait."""
        user = exchange.user
        loop = asyncio.get_running_loop()
        timer = self._idle_timers.pop(user, None)
        if timer is not None:
            timer.cancel()
        self._idle_timers[user] = loop.call_later(
            self.config.extraction.idle_minutes * 60, self._schedule_extraction, user, "idle")
        task = loop.create_task(self._check_count(user))
        self._count_tasks.add(task)
        task.add_done_callback(self._count_tasks.discard)

    async def _check_count(self, user: str) -> None:
        try:
            if await self.journal.pending_count(user) >= self.config.extraction.max_exchanges:
                self._schedule_extraction(user, "count")
        except Exception as exc:  # noqa: BLE001 - the idle timer will try again
            log.warning("could not count pending exchanges of %s: %s", user, exc)

    async def session_ended(self, user: str) -> None:
        if self.config.extraction.on_disconnect:
            self._schedule_extraction(user, "disconnect")

    def _schedule_extraction(self, user: str, reason: str) -> None:
        running = self._extract_tasks.get(user)
        if running is not None and not running.done():
            return
        log.info("extraction for %s scheduled (%s)", user, reason)
        task = asyncio.get_running_loop().create_task(self.extract_now(user))
        self._extract_tasks[user] = task
        task.add_done_callback(lambda t: self._extraction_done(user, t))

    async def _retry_pending_forever(self) -> None:
        """Pick up what a failure or a restart left pending, once its conversation is idle."""
        cfg = self.config.extraction
        while True:
            await asyncio.sleep(cfg.retry_minutes * 60)
            try:
                await self.retry_pending()
                await self.keeper.flush()
            except Exception as exc:  # noqa: BLE001 - the retry loop must keep running
                log.warning("retrying pending extractions failed: %s", exc)

    async def retry_pending(self) -> list[str]:
        """Schedule extraction for every user whose pending exchanges have gone idle."""
        idle = self.config.extraction.idle_minutes * 60
        now = datetime.now().astimezone()
        users = [p.user for p in await self.journal.pending_summary()
                 if p.newest is not None and (now - p.newest).total_seconds() >= idle]
        for user in users:
            self._schedule_extraction(user, "retry")
        return users

    def _extraction_done(self, user: str, task: asyncio.Task[ExtractionReport]) -> None:
        if self._extract_tasks.get(user) is task:
            del self._extract_tasks[user]
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            log.error("extraction for %s crashed: %s", user, exc)

    async def wait_for_extractions(self) -> None:
        """Wait for scheduled extractions (tests, shutdown)."""
        await asyncio.gather(*self._extract_tasks.values(), return_exceptions=True)

    async def extract_now(self, user: str) -> ExtractionReport:
        """Extract ``user``'s pending exchanges now (after finishing any batch a crash
        left); see :mod:`omoide.memory.extract.runner`. Never raises for a failed
        extraction: the report says what stays pending and what was quarantined."""
        timer = self._idle_timers.pop(user, None)
        if timer is not None:
            timer.cancel()
        lock = self._extract_locks.setdefault(user, asyncio.Lock())
        async with lock:
            started = time.perf_counter()
            report = await self._extraction_runner().run(user)
            if report.exchanges or report.quarantined:
                log.info("extraction for %s: %d exchanges, %d stored, %d duplicates,"
                         " %d superseded, %d quarantined in %.0f ms", user, report.exchanges,
                         len(report.stored), report.skipped_duplicates,
                         len(report.superseded), len(report.quarantined),
                         (time.perf_counter() - started) * 1000)
            return report

    def _extraction_runner(self) -> ExtractionRunner:
        return ExtractionRunner(journal=self.journal, embedder=self.embedder, store=self.store,
                                ask=self._ask_for_facts, put=self._put,
                                settings=self.config.extraction, timezone=self.timezone)

    async def _ask_for_facts(self, exchanges: Sequence[Exchange]) -> list[Fact]:
        """The extractor's facts for one batch, under the core's retries and budget."""
        cfg = self.config.extraction
        request = ExtractionRequest(exchanges[0].user if exchanges else "", tuple(exchanges),
                                    self.timezone, cfg.max_statement_chars)
        return await self.extractor.extract(request, attempts=cfg.attempts,
                                            timeout_s=cfg.timeout_s)

    async def _put(self, user: str, items: Iterable[tuple[Memory, Any]]) -> None:
        items = list(items)
        await self.store.upsert(user, [VectorRecord(m.id, v, to_payload(m)) for m, v in items])
        self.keeper.note_memories_stored()
        await self._index_written(user, items)
        if self.peers is not None:
            await self.peers.announce(user, stored=[m.id for m, _ in items])

    async def _index_written(self, user: str, items: list[tuple[Memory, Any]]) -> None:
        """The index and read engines told of a write (this worker's, or another's)."""
        self._indexes.written(user, items)
        for reader in self._known_read_engines():
            await reader.stored(self.person(user), [m for m, _ in items])

    async def _index_forgotten(self, user: str, memory_ids: Sequence[str]) -> None:
        """The index and read engines told of a forget (this worker's, or another's)."""
        for memory_id in memory_ids:
            self._indexes.forgotten(user, memory_id)
        for reader in self._known_read_engines():
            await reader.forgotten(self.person(user), list(memory_ids))

    # -- memory control --------------------------------------------------------------
    async def add_memories(self, user: str, memories: Sequence[Memory]) -> list[Memory]:
        """Store memories as given (evaluation, import): embedded as documents, no dedup."""
        if not memories:
            return []
        for m in memories:
            if m.user != user:
                raise ValueError(f"memory {m.id} belongs to {m.user!r}, not {user!r}")
        vectors = await self.embedder.embed([m.text for m in memories], "document",
                                            Priority.BATCH)
        await self._put(user, zip(memories, vectors, strict=True))
        await self.vectors.settle(user, [m.id for m in memories])
        if self.journal.is_open:
            await self.journal.note_user(user)
        return list(memories)

    async def store_before_embedding(self, user: str, memories: Sequence[Memory]) -> None:
        """Store memories at once with a placeholder vector, noted as waiting for their
        own (filled in the background: :mod:`omoide.memory.control.pending_vectors`);
        noted before they are written, so a kill between the two loses nothing."""
        if not memories:
            return
        await self.vectors.add(user, [m.id for m in memories])
        placeholder = placeholder_vector(self.embedder.dims)
        await self._put(user, [(m, placeholder) for m in memories])
        if self.journal.is_open:
            await self.journal.note_user(user)
        self._fill_wanted.set()

    def _write_lock(self, user: str) -> asyncio.Lock:
        return self._write_locks.setdefault(user, asyncio.Lock())

    async def fill_vectors(self, report: Any = None) -> FillProgress:
        """Embed every memory still waiting for its vector (see :meth:`store_before_
        embedding`); ``report(progress, waiting)`` is called now and then."""
        async def put(user: str, records: Sequence[VectorRecord]) -> None:
            await self._put(user, [(from_payload(r.id, r.payload), r.vector)
                                   for r in records])
        return await fill_pending(self.vectors, self.store, self.embedder, put,
                                  self._write_lock, report=report)

    async def _fill_vectors_forever(self) -> None:
        """A server's background fill: after an import is done, and at start (what a
        killed server or a one-off command left waiting)."""
        def report(progress: FillProgress, waiting: int) -> None:
            log.info("vectors: %d filled, %d still waiting", progress.filled, waiting)
        self._fill_wanted.set()
        while True:
            await self._fill_wanted.wait()
            self._fill_wanted.clear()
            while any(lock.locked() for lock in self._import_locks.values()):
                await asyncio.sleep(1.0)  # an import first: it stores, then we embed
            try:
                if await self.vectors.count():
                    await self.fill_vectors(report)
            except Exception:  # logged; tried again in a minute (or after an import)
                log.exception("filling vectors failed; they stay waiting")
                asyncio.get_running_loop().call_later(FILL_RETRY_S, self._fill_wanted.set)

    async def list_memories(self, user: str) -> Sequence[Memory]:
        records = await self.store.scroll(user)
        out = [from_payload(r.id, r.payload) for r in records]
        return sorted(out, key=lambda m: m.created_at)

    async def get(self, user: str, memory_id: str) -> Memory | None:
        records = await self.store.get(user, [memory_id])
        return from_payload(records[0].id, records[0].payload) if records else None

    async def search(self, user: str, query: str, limit: int = 10,
                     now: datetime | None = None) -> list[RetrievedMemory]:
        """Memories ranked for ``query`` without the injection gate (for people browsing)."""
        now = (now or datetime.now(self._tz)).astimezone(self._tz)
        prepared = prepare(query, now)
        vector = await self.embedder.embed_query(prepared.text)
        index = await self.index(user)
        hits = await self.store.search(user, vector, max(limit, 20))
        dense = {h.id: h.score for h in hits}
        lexical = index.lexical(prepared.analysis)
        temporal = index.temporal(prepared.spans)
        ids = set(dense) | set(lexical) | set(temporal)
        dense.update(index.cosine([i for i in ids if i not in dense], vector))

        def score(i: str) -> float:
            return (dense.get(i, 0.0) + 0.1 * math.tanh(lexical[i].score / 3 if i in lexical
                                                         else 0.0)
                    + 0.1 * temporal.get(i, 0.0))

        out: list[RetrievedMemory] = []
        for i in sorted(ids, key=lambda i: -score(i))[:limit]:
            m = index.get(i)
            if m is None:
                hit = next((h for h in hits if h.id == i), None)
                if hit is None:
                    continue
                m = from_payload(hit.id, hit.payload)
            out.append(RetrievedMemory(m, score(i), {"dense": dense.get(i, math.nan)}))
        return out

    async def set_kind(self, user: str, memory_id: str, kind: str) -> Memory | None:
        """Change a memory's kind (its profile or episodic decision), keeping its text,
        dates and vector; None if the user has no such memory."""
        records = await self.store.get(user, [memory_id])
        if not records:
            return None
        memory = replace(from_payload(records[0].id, records[0].payload), kind=kind)
        await self._put(user, [(memory, records[0].vector)])
        return memory

    async def forget(self, user: str, memory_id: str) -> bool:
        """Delete a memory from the store and the index; True if it existed."""
        async with self._write_lock(user):  # not written back by a vector fill
            if not await self.store.get(user, [memory_id]):
                return False
            await self.store.delete(user, [memory_id])
        await self._index_forgotten(user, [memory_id])
        if self.peers is not None:
            await self.peers.announce(user, forgotten=[memory_id])
        return True

    async def export(self, user: str) -> list[dict[str, Any]]:
        return [to_json(m) for m in await self.list_memories(user)]

    async def import_memories(self, user: str, items: Sequence[ImportItem | dict[str, Any]],
                              *, batch_size: int = IMPORT_BATCH,
                              embed_inline_max: int = INLINE_EMBED_MAX) -> ImportReport:
        """Import memories (an export, checked by :class:`ImportItem`) into ``user``.

        Idempotent: an item whose id or canonical text is already one of ``user``'s
        memories (or earlier in the same import) is skipped, so importing a file twice
        stores it once. Items are stored under ids derived from ``user`` and the file's
        id (an export of another user can never overwrite anyone's memories);
        superseded links are remapped. Stored in batches of ``batch_size``, embedded at
        batch priority, yielding to interactive work between batches; more than
        ``embed_inline_max`` new memories are stored first and embedded afterwards
        (:meth:`store_before_embedding`). Raises
        :class:`InvalidInput` for an invalid item (nothing stored) and
        :class:`ImportFailed` (with what was stored) when storing fails part-way.
        """
        validate_user_id(user)
        # Two imports for one person at once would both miss each other's texts.
        async with self._import_locks.setdefault(user, asyncio.Lock()):
            return await self._import_checked(user, items, batch_size, embed_inline_max)

    async def _import_checked(self, user: str, items: Sequence[ImportItem | dict[str, Any]],
                              batch_size: int, embed_inline_max: int) -> ImportReport:
        checked: list[ImportItem] = []
        for i, item in enumerate(items, 1):
            result = item if isinstance(item, ImportItem) else check_item(item)
            if isinstance(result, str):
                raise InvalidInput(f"item {i}: {result}")
            checked.append(result)
        existing = await self.list_memories(user)
        known_ids = {m.id for m in existing}
        by_key = {dedup_key(m.text): m.id for m in existing}
        resolved: dict[str, str] = {}
        fresh: list[Memory] = []
        now = datetime.now(self._tz)
        for item in checked:
            key = dedup_key(item.text)
            new_id = imported_memory_id(user, item.id or key)
            same = next((i for i in (item.id, new_id) if i in known_ids), None) \
                or by_key.get(key)
            if same is not None:
                if item.id:
                    resolved[item.id] = same
                continue
            created = item.created_at or now
            if created.tzinfo is None:
                created = created.replace(tzinfo=self._tz)
            fresh.append(Memory(
                id=new_id, user=user, text=item.text, created_at=created,
                event_dates=tuple(item.event_dates), kind=item.kind,
                entities=tuple(item.entities),
                source_exchange_ids=tuple(item.source_exchange_ids),
                superseded_by=item.superseded_by))
            known_ids.add(new_id)
            by_key[key] = new_id
            if item.id:
                resolved[item.id] = new_id
        fresh = [replace(m, superseded_by=resolved.get(m.superseded_by))
                 if m.superseded_by else m for m in fresh]
        skipped = len(checked) - len(fresh)
        later = len(fresh) > embed_inline_max
        stored: list[Memory] = []
        for start in range(0, len(fresh), batch_size * 8 if later else batch_size):
            batch = fresh[start:start + (batch_size * 8 if later else batch_size)]
            try:
                if later:
                    await self.store_before_embedding(user, batch)
                    stored += batch
                else:
                    stored += await self.add_memories(user, batch)
            except Exception as exc:
                raise ImportFailed(ImportReport(stored, skipped), len(fresh), exc) from exc
            await asyncio.sleep(0)  # let waiting turns run between batches
        return ImportReport(stored, skipped, await self.vectors.count(user))

    async def pending(self, user: str | None = None) -> list[PendingSummary]:
        return await self.journal.pending_summary(user)

    async def dead_letters(self, user: str | None = None) -> list[DeadLetter]:
        """Quarantined exchanges (extraction failed on them alone too often)."""
        return await self.journal.dead_letters(user)

    async def retry_quarantined(self, user: str, exchange_ids: Sequence[str] | None = None,
                                ) -> list[str]:
        """Release ``user``'s quarantined exchanges (all, or these) with their attempts
        reset; in a running server their extraction is scheduled at once."""
        released = await self.journal.release(user, exchange_ids)
        if released and self._retry_task is not None:
            self._schedule_extraction(user, "retry")
        return released

    async def skip_exchanges(self, user: str, exchange_ids: Sequence[str] | None = None,
                             ) -> list[str]:
        """Never extract these exchanges of ``user`` (default: every quarantined one);
        they stay in the journal."""
        return await self.journal.skip(user, exchange_ids)

    async def reembed(self, users: Sequence[str] | None = None,
                      backup: Path | None = None) -> dict[str, int]:
        """Re-embed every memory with the configured embedder (after changing it).

        Reads each user's memories, writes a JSONL backup, drops the collection,
        opens it for the current embedder and writes everything back.
        """
        if not self.journal.is_open:
            self.journal.open()
        users = list(users) if users else await self.journal.users()
        saved: dict[str, list[Memory]] = {}
        for u in users:
            saved[u] = [from_payload(r.id, r.payload) for r in await self.store.scroll(u)]
        backup = backup or self.data_dir / f"reembed-backup-{int(time.time())}.jsonl"
        with open_private(backup, "w") as f:  # every memory of everyone: owner only
            for ms in saved.values():
                for m in ms:
                    f.write(json.dumps(to_json(m), ensure_ascii=False) + "\n")
        await self.store.reset()
        await self.store.open(await self.embedder.fingerprint())
        self._indexes.clear()
        counts: dict[str, int] = {}
        for u, ms in saved.items():
            await self.add_memories(u, ms)
            counts[u] = len(ms)
        return counts


def _read_engine(spec: StageSpec, path: str) -> RecallEngine:
    """A new memory engine for ``spec`` (found through the plugin registry)."""
    component = build_stage(RecallEngine.kind, spec, path)
    if not isinstance(component, RecallEngine):
        raise TypeError(f"{path}: {type(component).__name__} is not a RecallEngine")
    return component


def _extractor(spec: StageSpec, path: str) -> Extractor:
    """A new extractor for ``spec`` (found through the plugin registry)."""
    component = build_stage(Extractor.kind, spec, path)
    if not isinstance(component, Extractor):
        raise TypeError(f"{path}: {type(component).__name__} is not an Extractor")
    return component
