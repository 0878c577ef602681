"""Extractors: exchanges in, short facts about the person out (the write path's model step).

The YAML picks one (``use:``) and gives its options beside it::

    memory:
      extract: {use: chat}      # the configured chat model with omoide's prompt

An extractor only turns a batch of one person's exchanges into :class:`Fact` s. The
core owns everything around it, so every extractor inherits "nothing lost": the
journal (exchanges are journaled before anything reads them), the batches and their
journaled answers and plans (exactly-once replay after a crash), dedup and
supersession, the store, and what happens to a batch that fails (halves, then single
exchanges, then quarantine with the reason). See :mod:`omoide.memory.extract.runner`.

The core owns :meth:`Extractor.extract`: the isolation check (every exchange is the
request's person's), the time budget of a call (``memory.extraction.timeout_s``), the
retries (``memory.extraction.attempts``: a retryable :class:`ComponentError` or an
answer that cannot be used is asked again) and the bounds on what comes back (at most
:data:`MAX_FACTS` facts of at most :data:`MAX_FACT_CHARS` characters). A plugin
implements :meth:`Extractor._extract` and raises

- :class:`ExtractionFormatError` when its model's answer cannot be read as facts (the
  core asks again, then splits the batch, then quarantines the one exchange that keeps
  failing),
- :class:`ComponentError` with ``retryable=True`` when a service is down (the
  exchanges wait for the next run; nobody's attempts are counted).
"""

from __future__ import annotations

import asyncio
import re
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

from omoide.components.base import Capabilities, Component, StrictConfig
from omoide.errors import ComponentError, ComponentTimeout, InvalidInput
from omoide.text_controls import strip_controls
from omoide.types import Exchange

if TYPE_CHECKING:
    from omoide.components.chat import ChatModel

FACT_KINDS = ("plan", "event", "preference", "habit", "person", "profile", "other")
"""Kinds a fact may have besides ``profile_<category>`` (a profile decision: see
:func:`omoide.memory.facts.profile.stored_kind`). A dated plan or event is never profile."""
MAX_FACTS = 30
"""Facts one call may return at most; more is an error (:class:`TooManyFacts`)."""
MAX_FACT_CHARS = 200
"""Characters of one fact at most; a longer one makes the answer unusable."""
MAX_ENTITIES = 30
MAX_ENTITY_CHARS = 100
_KIND = re.compile(r"[a-z_]{1,40}")


class ExtractionFormatError(ValueError):
    """The model's answer could not be read as facts (the core asks again, then
    isolates the exchange)."""


@dataclass(frozen=True)
class Fact:
    """One short fact about the person, as extraction found it.

    ``text`` is one sentence about the person (omoide's Japanese prompt writes
    「あなたは…」), with any relative date kept and the absolute date in （） after it;
    ``kind`` one of :data:`FACT_KINDS` or ``profile_<category>``; ``entities`` the
    names in it (people, places, things) in their own spelling.

    ``replaces`` (optional, None by default) says that this fact updates an earlier
    one: the earlier value in a few words as the person would say it (「コーヒーを飲む
    習慣」 for 「あなたはコーヒーをやめて紅茶を飲むようになった。」, 「箱根旅行の日程」 for
    a moved plan, 「広告代理店の仕事」 for a new job). The extractor sees only the
    conversation, not the stored memories, so it names what changed, not a memory id;
    supersession matches it against the person's older memories (and still works
    when an extractor never fills it). At most :data:`MAX_FACT_CHARS` characters.
    """

    text: str
    kind: str
    entities: tuple[str, ...]
    replaces: str | None = None


class TooManyFacts(ExtractionFormatError):
    """The answer holds more than :data:`MAX_FACTS` facts; ``facts`` has all of them
    (for one exchange on its own the core keeps the first :data:`MAX_FACTS`)."""

    def __init__(self, facts: list[Fact]) -> None:
        super().__init__(f"{len(facts)} facts is more than {MAX_FACTS}")
        self.facts = facts


class ExtractorConfig(StrictConfig):
    """Base of extractor configs (the options beside ``use:`` in ``memory.extract``).

    No call policy of its own: the core's ``memory.extraction`` settings bound and
    retry every extractor's calls alike.
    """


@dataclass(frozen=True)
class ExtractorCapabilities(Capabilities):
    uses_chat_model: bool = False
    """Asks the configured chat model (:attr:`ExtractorHost.chat`): without one, the
    exchanges wait (and the core does not keep retrying them)."""


class ExtractorHost(Protocol):
    """What the core offers an extractor (attached before it starts)."""

    @property
    def chat(self) -> ChatModel | None:
        """The configured chat model, if any."""
        ...

    @property
    def timezone(self) -> str:
        """The assistant's IANA time zone (the exchanges' times are aware)."""
        ...


@dataclass(frozen=True)
class ExtractionRequest:
    """A batch of one person's exchanges, oldest first."""

    user: str
    exchanges: tuple[Exchange, ...]
    timezone: str
    """The zone to read the exchanges' times (and so relative dates) in."""
    max_statement_chars: int
    """A statement longer than this should be cut before it reaches a model, so one
    monologue cannot make the answer unbounded (the core sizes batches by it)."""


class Extractor(Component[ExtractorConfig]):
    """Base class of extractors (kind ``extractor``). Implement :meth:`_extract`."""

    kind: ClassVar[str] = "extractor"
    Config: ClassVar[type[ExtractorConfig]] = ExtractorConfig
    capabilities: ClassVar[ExtractorCapabilities] = ExtractorCapabilities()

    def __init__(self, config: ExtractorConfig) -> None:
        super().__init__(config)
        self._host: ExtractorHost | None = None

    def attach(self, host: ExtractorHost) -> None:
        """Called by the core once, before :meth:`start`."""
        self._host = host

    @property
    def host(self) -> ExtractorHost:
        if self._host is None:
            raise ComponentError(f"extractor {self.name} is not attached to a memory engine")
        return self._host

    @abstractmethod
    async def _extract(self, request: ExtractionRequest) -> Sequence[Fact]:
        """The facts about ``request.user`` in ``request.exchanges`` (an empty list when
        there is nothing worth remembering). See the module doc for what to raise."""

    # -- the template method the core calls -------------------------------------------
    async def extract(self, request: ExtractionRequest, *, attempts: int = 1,
                      timeout_s: float = 300.0) -> list[Fact]:
        """The facts of ``request``, checked and bounded.

        Empty exchanges give no facts without calling the plugin. Up to ``attempts``
        calls of at most ``timeout_s`` each: a retryable :class:`ComponentError` (a
        call past ``timeout_s`` is one) or an :class:`ExtractionFormatError` is asked
        again, with a short backoff; any other :class:`ComponentError` ends at once.
        Raises the last error. Exceptions of other types propagate at once (the core
        treats them as this batch's fault).
        """
        if not request.exchanges:
            return []
        strangers = {ex.user for ex in request.exchanges if ex.user != request.user}
        if strangers:
            raise InvalidInput(f"an extraction request for {request.user!r} holds exchanges"
                               f" of {len(strangers)} other person(s)")
        last: Exception | None = None
        for attempt in range(max(1, attempts)):
            try:
                return checked_facts(await self._bounded(request, timeout_s))
            except (ComponentError, ExtractionFormatError) as exc:
                last = exc
                if isinstance(exc, ComponentError) and not exc.retryable:
                    break
                if attempt < attempts - 1:
                    await asyncio.sleep(min(4.0, 0.25 * 2 ** attempt))
        assert last is not None
        raise last

    async def _bounded(self, request: ExtractionRequest, timeout_s: float) -> Sequence[Fact]:
        try:
            return await asyncio.wait_for(self._extract(request), timeout=timeout_s)
        except TimeoutError as exc:
            raise ComponentTimeout(f"extractor {self.name}: a call took longer than"
                                   f" {timeout_s:g}s") from exc


def checked_facts(facts: object) -> list[Fact]:
    """``facts`` if they are a list of well-formed :class:`Fact` within the bounds;
    control characters are removed from texts (:func:`omoide.text_controls.strip_controls`),
    kinds outside ``[a-z_]`` become ``other``, blank facts and entities are dropped, a
    blank ``replaces`` becomes None and a long one is cut.
    Raises :class:`ExtractionFormatError` (:class:`TooManyFacts` for too many)."""
    if not isinstance(facts, list | tuple):
        raise ExtractionFormatError(f"an extractor returned {type(facts).__name__},"
                                    " not a list of facts")
    out: list[Fact] = []
    for fact in facts:
        if not isinstance(fact, Fact) or not isinstance(fact.text, str):
            raise ExtractionFormatError(f"not a fact: {fact!r:.80}")
        text = strip_controls(fact.text).strip()
        if not text:
            continue
        if len(text) > MAX_FACT_CHARS:
            raise ExtractionFormatError(f"a fact of {len(text)} characters is too long")
        kind = fact.kind.strip().lower() if isinstance(fact.kind, str) else ""
        if not isinstance(fact.entities, list | tuple):
            raise ExtractionFormatError(f"the entities of a fact are not a list: "
                                        f"{fact.entities!r:.80}")
        entities = tuple(e for e in (strip_controls(e).strip() for e in fact.entities
                                     if isinstance(e, str)) if e)
        if len(entities) > MAX_ENTITIES or any(len(e) > MAX_ENTITY_CHARS for e in entities):
            raise ExtractionFormatError(f"a fact names too many or too long entities:"
                                        f" {entities!r:.80}")
        replaces = (strip_controls(fact.replaces).strip() if isinstance(fact.replaces, str)
                    else "")
        out.append(Fact(text, kind if _KIND.fullmatch(kind) else "other", entities,
                        replaces[:MAX_FACT_CHARS] or None))
    if len(out) > MAX_FACTS:
        raise TooManyFacts(out)
    return out
