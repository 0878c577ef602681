"""Tools: things the chat model may call during a turn (a timer, the weather, a light).

A tool component is one configured skill that offers one or more *functions* to the
chat model (the timers skill offers ``set_timer``, ``list_timers``, ``cancel_timer``;
an MCP server offers whatever it lists). The YAML enables a tool by listing it::

    tools:
      - {use: clock}
      - {use: home_assistant, url: http://ha.local:8123, token: {$env: HA_TOKEN}}

The plugin implements :meth:`Tool.functions` and :meth:`Tool._invoke`; the core owns
:meth:`Tool.invoke` (unknown function and argument checks, the time budget) and the
tool loop around it (:mod:`omoide.pipeline.tools`), which turns every failure into a
bounded error the model can talk about.

Functions that change something the person cares about (forget a memory, switch a
light) set ``needs_confirmation``. The core never runs such a call straight away: it
asks :meth:`Tool.prepare` for a question to put to the person ("「箱根の予定」を忘れて
いい？"), the model asks it, and only a "yes" in the person's *next* utterance makes the
core call :meth:`Tool.invoke` with the prepared arguments and ``confirmed=True``.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

from pydantic import Field

from omoide.components.base import Component, ComponentConfig
from omoide.components.memory_types import MemoryService
from omoide.errors import ComponentError
from omoide.types import Emotion, ToolSpec

TOOL_NAME_CHARS = "A-Za-z0-9_-"
"""Function names must match ``^[A-Za-z0-9_-]{1,64}$`` (what the chat APIs accept)."""


class ToolConfig(ComponentConfig):
    timeout_s: float = Field(10.0, gt=0, le=300,
                             description="Time budget of one call of one of this tool's "
                                         "functions, in seconds.")
    retries: int = Field(0, ge=0, le=5,
                         description="Extra attempts after a retryable failure (tools may "
                                     "have side effects: none by default).")


@dataclass(frozen=True)
class ToolFunction:
    """One function offered to the chat model.

    ``parameters`` is a JSON schema of the arguments object. ``needs_confirmation``
    marks a function whose call the person must confirm first (see the module doc).
    """

    name: str
    description: str
    parameters: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}})
    needs_confirmation: bool = False

    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, dict(self.parameters))


@dataclass(frozen=True)
class ToolContext:
    """Who is asking and when: what a function may need besides its arguments."""

    user: str
    now: datetime
    """The turn's clock (timezone-aware)."""
    timezone: str
    """The assistant's IANA time zone (a tool may know a user's own zone better)."""
    device: str | None = None
    session_id: str | None = None
    confirmed: bool = False
    """True only when the person said yes to this call's confirmation question."""


@dataclass(frozen=True)
class ConfirmationRequest:
    """What :meth:`Tool.prepare` returns: a question for the person, and the exact
    arguments to run with once they say yes (``None``: the ones given)."""

    question: str
    arguments: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class AnnounceOutcome:
    """What happened to an unsolicited message: ``delivered`` to a connected device,
    ``queued`` until the person's device is back, or ``dropped`` (with the reason)."""

    status: Literal["delivered", "queued", "dropped"]
    reason: str | None = None


class ToolHost(Protocol):
    """What the server offers tool components (attached before they start)."""

    @property
    def data_dir(self) -> Path:
        """A folder of the tool's own plugin for state that must survive restarts."""
        ...

    @property
    def timezone(self) -> str:
        """The assistant's IANA time zone."""
        ...

    @property
    def memory(self) -> MemoryService | None:
        """The memory service (omoide's engine, or None when memory is off)."""
        ...

    @property
    def database_url(self) -> str | None:
        """The shared database's URL (``database.url``: PostgreSQL, several workers)
        for state every worker must see, or None: keep it in :attr:`data_dir`. Open it
        with ``omoide.api.open_pool`` and migrate with ``omoide.api.apply_migrations``."""
        ...

    def reaches(self, user: str) -> bool:
        """Whether a device of ``user`` is connected to this worker now (an
        :meth:`announce` would be heard at once rather than queued here): with several
        workers, the one that reaches the person says what is due to them."""
        ...

    async def announce(self, user: str, text: str,
                       emotion: Emotion = Emotion.NEUTRAL) -> AnnounceOutcome:
        """Say ``text`` to ``user`` through their device without being asked (a timer
        went off). When no device of theirs is connected it is queued and said when
        one is back; never raises."""
        ...


class ToolError(ComponentError):
    """A function refused or failed in a way the person should hear about (an unknown
    entity, a time in the past). The message is shown to the chat model verbatim."""


class Tool(Component[ToolConfig]):
    """Base class of tool components.

    Implement :meth:`functions` (may change over time: an MCP server's list does) and
    :meth:`_invoke`; override :meth:`_prepare` for functions that need confirmation
    when the question needs work (the forget skill first finds the memory).
    ``_invoke`` returns anything JSON-serialisable; a ``str`` is passed on as is.
    """

    kind: ClassVar[str] = "tool"
    Config: ClassVar[type[ToolConfig]] = ToolConfig
    recognition_phrases: ClassVar[tuple[str, ...]] = ()
    """Short words and phrases people say to use this tool (「タイマー」, 「3分」), added to
    the speech recogniser's context while the tool is ready: a small recogniser hears
    「10秒タイマー」 as nothing without them. Keep it to a handful."""

    def __init__(self, config: ToolConfig) -> None:
        super().__init__(config)
        self._host: ToolHost | None = None

    def attach(self, host: ToolHost) -> None:
        """Called by the server once, before :meth:`start`."""
        self._host = host

    @property
    def host(self) -> ToolHost:
        if self._host is None:
            raise ComponentError(f"tool {self.name} is not attached to a server")
        return self._host

    @property
    def attached(self) -> bool:
        return self._host is not None

    @abstractmethod
    def functions(self) -> Sequence[ToolFunction]:
        """The functions offered right now (cheap: called at every turn)."""

    @abstractmethod
    async def _invoke(self, function: str, arguments: dict[str, Any],
                      context: ToolContext) -> Any:
        """Run one function. Raise :class:`ToolError` for a refusal the person should
        hear; any other exception is reported to the model as a failure."""

    async def _prepare(self, function: ToolFunction, arguments: dict[str, Any],
                       context: ToolContext) -> ConfirmationRequest:
        """The question for a call that needs confirmation. Default: the function's
        description and arguments, which a model can rephrase for the person."""
        shown = ", ".join(f"{k}={v}" for k, v in arguments.items())
        return ConfirmationRequest(f"{function.description}（{shown}）を実行していい？")

    # -- the template methods the core calls ------------------------------------------
    def function(self, name: str) -> ToolFunction:
        for fn in self.functions():
            if fn.name == name:
                return fn
        raise ToolError(f"{self.name} has no function {name!r}")

    async def invoke(self, function: str, arguments: dict[str, Any],
                     context: ToolContext) -> Any:
        """Run ``function`` under this tool's time budget.

        A function that needs confirmation runs only with ``context.confirmed``.
        Raises :class:`ComponentError` (a :class:`ComponentTimeout` past the budget).
        """
        fn = self.function(function)
        if fn.needs_confirmation and not context.confirmed:
            raise ToolError(f"{function} needs the person's confirmation first")
        if not isinstance(arguments, dict):
            raise ToolError(f"arguments of {function} must be a JSON object")
        return await self._call(function, lambda: self._invoke(function, arguments, context))

    async def prepare(self, function: str, arguments: dict[str, Any],
                      context: ToolContext) -> ConfirmationRequest:
        """The confirmation question for a call of a function that needs one."""
        fn = self.function(function)
        return await self._call(f"{function} (preparing)",
                                lambda: self._prepare(fn, arguments, context))
