"""Memory engines: the read path, what a turn recalls of the person's long-term memory.

The YAML picks one engine (``use:``) and gives its options beside it::

    memory:
      retrieve: {use: robust}          # or {use: baseline}, or a plugin's engine

For each turn the core hands the engine one person's memory, a :class:`PersonMemory`
bound to the person the turn is for (the engine cannot name anyone else: every store
read and index it reaches is theirs), and a :class:`RecallRequest` (what they said,
now, how many memories at most, the profile budget, the time budget). The engine
returns a :class:`RecallResult`: the episodic memories to inject and, if it keeps
one, the person's profile (the lasting facts that go into every prompt).

The core owns :meth:`RecallEngine.recall`: the time budget (``memory.time_budget_ms``;
an engine that runs past it, hangs or raises gives "no memory this turn", never a
failed turn), the isolation check (a memory of anyone else is dropped), the cap of
``max_results``, no profile fact repeated among the episodic memories, and the
timings. The core also renders what the engine chose into the prompt, escaped
(memory text is data, never markup): an engine returns memories, never prompt text.
A plugin implements :meth:`RecallEngine._recall` and, when it keeps a profile,
:meth:`RecallEngine._ready_profile`.

Writes stay the core's: extraction, dedup, supersession and the store. An engine that
keeps its own copy of the memories (a graph, another index) hears of every write
through :meth:`RecallEngine._stored` and :meth:`RecallEngine._forgotten` and can read
everything again with :meth:`PersonMemory.memories`; engines that read the core's
store and per-person index (``baseline``, ``robust``) need neither.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from abc import abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from omoide.components.base import Capabilities, Component, StrictConfig
from omoide.components.memory_types import Profile, ReadInputs, Recall
from omoide.errors import ComponentError
from omoide.types import FloatArray, Memory, RetrievedMemory

if TYPE_CHECKING:
    from omoide.components.embedder import Embedder
    from omoide.memory.index.person_index import UserIndex

log = logging.getLogger("omoide.memory")

NOTICE_BUDGET_S = 5.0
"""Longest the core waits for an engine to take note of a write (:meth:`RecallEngine.
stored`); past it the notice is abandoned and logged (the store has the write)."""


class MemoryEngineConfig(StrictConfig):
    """Base of memory engine configs (the options beside ``use:`` in ``memory.retrieve``).

    No call policy of its own: every engine's recall is bounded by the core's
    ``memory.time_budget_ms``.
    """


@dataclass(frozen=True)
class MemoryEngineCapabilities(Capabilities):
    """What an engine does; the contract skips what it does not."""

    profile: bool = False
    """Returns the person's profile (lasting facts, every turn) with each recall."""
    contextual: bool = False
    """Recalls for remarks that ask nothing about the past (「箱根って寒いかな」)."""
    uses_index: bool = False
    """Reads the core's per-person index (:meth:`PersonMemory.index`); ``omoide eval
    --misses`` then explains a miss channel by channel from that index."""


@dataclass(frozen=True)
class MemoryHit:
    """One of the person's memories found by a dense search, with its cosine."""

    memory: Memory
    score: float


class PersonMemory(Protocol):
    """One person's memory as an engine sees it: bound by the core to that person."""

    @property
    def user(self) -> str:
        """Whose memory this is."""
        ...

    @property
    def timezone(self) -> str:
        """The IANA time zone the person's dates are read in."""
        ...

    @property
    def embedder(self) -> Embedder:
        """The configured embedder (queries: ``embed_query``; the memories in the store
        were embedded as documents by it)."""
        ...

    async def search(self, vector: FloatArray, limit: int) -> list[MemoryHit]:
        """The person's ``limit`` memories nearest ``vector`` by cosine, best first
        (superseded ones included: they carry ``superseded_by``)."""
        ...

    async def get(self, ids: Sequence[str]) -> list[Memory]:
        """The person's memories with these ids (unknown ids are left out)."""
        ...

    async def memories(self) -> list[Memory]:
        """Every memory of the person (for an engine that keeps its own copy)."""
        ...

    def prepare_index(self) -> None:
        """Start building the person's index if it is not ready (returns at once)."""
        ...

    def ready_index(self) -> UserIndex | None:
        """The person's index if it is built (no waiting, no I/O), else None."""
        ...

    async def index(self) -> UserIndex:
        """The person's lexical, temporal and dense index (:mod:`omoide.memory.index.person_index`),
        built from the store on first use and kept current on writes; waits for it."""
        ...

    async def index_and_vector(self, query_text: str, wants_vector: bool,
                               started: float) -> ReadInputs:
        """The person's index and the query vector of ``query_text`` (when
        ``wants_vector``), each waited for only within the core's shares of the time
        budget of a recall that began at ``started`` (``time.perf_counter()``); either
        may be None (see :mod:`omoide.memory.recall.budgeted_inputs`). Call :meth:`prepare_index`
        first, as early as possible."""
        ...

    async def index_of_nearest(self, vector: FloatArray, limit: int) -> UserIndex:
        """A throwaway index of the person's ``limit`` memories nearest ``vector`` (for a
        recall whose index is not ready) — or the person's own index when its saved copy,
        being loaded, is ready before the store answers (then it is :meth:`ready_index`)."""
        ...


@dataclass(frozen=True)
class RecallRequest:
    """One recall: what the person said and what the core allows."""

    query: str
    """The utterance as recognised (not canonicalised)."""
    now: datetime
    """The turn's time, aware, in the person's zone."""
    max_results: int
    """Episodic memories to inject at most (the core cuts what is beyond)."""
    profile_budget_chars: int | None
    """Characters of profile lines at most; None when the profile block is off."""
    time_budget_ms: float
    """The recall's whole budget; an engine may use it to stop waiting early."""


@dataclass
class RecallNotes:
    """What an engine reports beside its result: timings and details for the trace and
    ``omoide eval --misses``. Kept even when the recall runs out of time."""

    timings_ms: dict[str, float] = field(
        default_factory=lambda: {"embed": 0.0, "search": 0.0})
    """At least ``embed`` (the query embedding) and ``search`` (everything after it)."""
    details: dict[str, Any] = field(default_factory=dict)
    """Anything JSON-able that explains the decision (``gate``, ``matched``...)."""
    shortfalls: list[str] = field(default_factory=list)
    """What a recall that did answer had to do without (a query vector too late, an
    index not built yet): the turn reports each as degraded."""

    @contextlib.contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        """Add the time the ``with`` block takes to ``timings_ms[phase]``."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.timings_ms[phase] = (self.timings_ms.get(phase, 0.0)
                                      + (time.perf_counter() - started) * 1000)


@dataclass(frozen=True)
class RecallResult:
    """What an engine chose: episodic memories, best first, and the person's profile."""

    memories: Sequence[RetrievedMemory]
    profile: Profile = field(default_factory=Profile)


class RecallEngine(Component[MemoryEngineConfig]):
    """Base class of memory engines (kind ``memory_engine``).

    Implement :meth:`_recall`. Override :meth:`_ready_profile` when the engine keeps a
    profile, and :meth:`_stored` / :meth:`_forgotten` when it keeps its own copy of
    the memories.
    """

    kind: ClassVar[str] = "memory_engine"
    Config: ClassVar[type[MemoryEngineConfig]] = MemoryEngineConfig
    capabilities: ClassVar[MemoryEngineCapabilities] = MemoryEngineCapabilities()

    @abstractmethod
    async def _recall(self, memory: PersonMemory, request: RecallRequest,
                      notes: RecallNotes) -> RecallResult:
        """Choose what to inject for ``request.query``. Write timings and details into
        ``notes`` as you go. May raise; may be cancelled when the budget runs out."""

    def _ready_profile(self, memory: PersonMemory, budget_chars: int) -> Profile:
        """The person's profile from what is ready now, without waiting or I/O (used
        when a recall ran out of time or failed, so a safety fact is never lost to
        it). Default: no profile."""
        return Profile()

    async def _stored(self, memory: PersonMemory, memories: Sequence[Memory]) -> None:
        """The core wrote these memories of the person (new ones, a supersession mark,
        a changed kind). Must return quickly. Default: nothing to do."""

    async def _forgotten(self, memory: PersonMemory, ids: Sequence[str]) -> None:
        """The core deleted these memories of the person. Default: nothing to do."""

    # -- the template methods the core calls ------------------------------------------
    async def recall(self, memory: PersonMemory, request: RecallRequest) -> Recall:
        """What to inject for ``request``; never raises, never runs past the budget.

        A recall that runs out of time or fails carries no episodic memory but still
        the profile from :meth:`_ready_profile` (``Recall.timed_out`` / ``error`` say
        which). A cancelled caller cancels the engine's work.
        """
        notes = RecallNotes()
        started = time.perf_counter()
        work = asyncio.ensure_future(self._recall(memory, request, notes))
        try:
            done, _ = await asyncio.wait({work}, timeout=request.time_budget_ms / 1000.0)
        except asyncio.CancelledError:
            work.cancel()
            raise
        if not done:
            # Not awaited: an engine that ignores its cancellation still cannot hold
            # the turn past the budget.
            work.cancel()
            work.add_done_callback(_retrieve_quietly)
            notes.timings_ms["total"] = (time.perf_counter() - started) * 1000
            log.warning("recall for %s ran past %.0f ms: no memory this turn", memory.user,
                        request.time_budget_ms)
            return Recall([], self.name, notes.timings_ms, timed_out=True,
                          details=notes.details,
                          profile=self.ready_profile(memory, request.profile_budget_chars))
        try:
            memories, profile = self._checked(work.result(), memory.user, request)
        except Exception as exc:  # noqa: BLE001 - the turn goes on without memory
            notes.timings_ms["total"] = (time.perf_counter() - started) * 1000
            log.warning("recall for %s failed: %s", memory.user, exc)
            return Recall([], self.name, notes.timings_ms, error=f"{type(exc).__name__}: {exc}",
                          details=notes.details,
                          profile=self.ready_profile(memory, request.profile_budget_chars))
        notes.timings_ms["total"] = (time.perf_counter() - started) * 1000
        return Recall(memories, self.name, notes.timings_ms, details=notes.details,
                      profile=profile, shortfalls=tuple(notes.shortfalls))

    def ready_profile(self, memory: PersonMemory, budget_chars: int | None) -> Profile:
        """The profile :meth:`_ready_profile` gives within ``budget_chars`` (empty when
        that is None: the profile block is off); never raises."""
        if budget_chars is None:
            return Profile()
        try:
            profile = self._ready_profile(memory, budget_chars)
        except Exception:
            log.exception("memory engine %s: the ready profile failed", self.name)
            return Profile()
        return self._own_profile(profile, memory.user)

    async def stored(self, memory: PersonMemory, memories: Sequence[Memory]) -> None:
        """Tell the engine about written memories of ``memory.user``; never raises."""
        mine = [m for m in memories if m.user == memory.user]
        if mine and type(self)._stored is not RecallEngine._stored:
            await self._notice("stored", self._stored(memory, mine))

    async def forgotten(self, memory: PersonMemory, ids: Sequence[str]) -> None:
        """Tell the engine about deleted memories of ``memory.user``; never raises."""
        if ids and type(self)._forgotten is not RecallEngine._forgotten:
            await self._notice("forgotten", self._forgotten(memory, list(ids)))

    # -- checks ------------------------------------------------------------------------
    async def _notice(self, what: str, call: Any) -> None:
        try:
            await asyncio.wait_for(call, timeout=NOTICE_BUDGET_S)
        except TimeoutError:
            log.error("memory engine %s took more than %.0f s to take note of memories %s;"
                      " abandoned", self.name, NOTICE_BUDGET_S, what)
        except Exception:
            log.exception("memory engine %s failed to take note of memories %s", self.name,
                          what)

    def _checked(self, result: object, user: str, request: RecallRequest,
                 ) -> tuple[list[RetrievedMemory], Profile]:
        if not isinstance(result, RecallResult):
            raise ComponentError(f"memory engine {self.name} returned"
                                 f" {type(result).__name__}, not a RecallResult")
        profile = Profile()
        if request.profile_budget_chars is not None:
            if not isinstance(result.profile, Profile):
                raise ComponentError(f"memory engine {self.name} returned a profile of type"
                                     f" {type(result.profile).__name__}")
            profile = self._own_profile(result.profile, user)
        chosen: list[RetrievedMemory] = []
        seen: set[str] = set()
        for item in result.memories:
            if not isinstance(item, RetrievedMemory):
                raise ComponentError(f"memory engine {self.name} returned"
                                     f" {type(item).__name__}, not a RetrievedMemory")
            if item.memory.user != user:
                log.error("memory engine %s returned a memory of another person for %s;"
                          " dropped", self.name, user)
                continue
            if item.memory.id in seen or item.memory.id in profile.ids:
                continue  # the profile block already carries it
            seen.add(item.memory.id)
            chosen.append(item)
            if len(chosen) >= request.max_results:
                break
        return chosen, profile

    def _own_profile(self, profile: Profile, user: str) -> Profile:
        """``profile`` without any fact about another person."""
        if all(f.memory.user == user for f in profile.facts):
            return profile
        log.error("memory engine %s put a memory of another person in the profile of %s;"
                  " dropped", self.name, user)
        facts = tuple(f for f in profile.facts if f.memory.user == user)
        return replace(profile, facts=facts, ids=frozenset(f.memory.id for f in facts))


def _retrieve_quietly(task: asyncio.Future[Any]) -> None:
    """Consume the outcome of an abandoned recall, so asyncio does not log it as lost."""
    if not task.cancelled():
        task.exception()
