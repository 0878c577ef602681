"""What every component kind shares: config, capabilities, lifecycle, call policy.

A component class is registered by a plugin (see :mod:`omoide.hookspecs`) under a
``name`` for one ``kind``; the YAML picks it with ``use: <name>``. Construction
is cheap and must not load weights or open connections; :meth:`Component.start`
does that. The public methods of each kind are template methods: the core times,
traces, bounds and retries the call; the plugin implements one ``_`` primitive.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import random
import time
from abc import ABC
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from omoide.blocking import PriorityRunner
from omoide.errors import ComponentError, ComponentTimeout
from omoide.types import Priority

log = logging.getLogger("omoide.components")

T = TypeVar("T")


class StrictConfig(BaseModel):
    """Base of every component's config: strict (unknown keys are errors) and frozen.

    Subclasses describe every field (``Field(description=...)``); the package
    contract checks both. Most kinds extend :class:`ComponentConfig`, which adds the
    call policy; a kind whose calls the core bounds by its own settings (the memory
    engines, by ``memory.time_budget_ms``) extends this one.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)


class ComponentConfig(StrictConfig):
    """A component config with the call policy the template methods apply."""

    timeout_s: float = Field(30.0, gt=0, description="Time budget of one call, in seconds.")
    retries: int = Field(1, ge=0, le=10,
                         description="Extra attempts after a retryable failure.")


@dataclass(frozen=True)
class Capabilities:
    """What a component can do; contracts skip tests for what it cannot."""

    streaming: bool = False


class ComponentState(enum.StrEnum):
    """Lifecycle state shown by ``GET /healthz``."""

    CREATED = "created"
    STARTING = "starting"
    READY = "ready"
    FAILED = "failed"
    STOPPED = "stopped"


@dataclass(frozen=True)
class ComponentStatus:
    state: ComponentState
    reason: str | None = None


ConfigT = TypeVar("ConfigT", bound=StrictConfig)


class Component(ABC, Generic[ConfigT]):
    """Base class of all components.

    Class attributes a plugin sets: ``name`` (what ``use:`` selects), ``Config``
    (a :class:`ComponentConfig` subclass), ``capabilities`` and optionally
    ``stand_in`` (a sentence saying what real part this one stands in for; shown by
    the server and the demo so nobody mistakes it for the real thing).
    """

    kind: ClassVar[str] = "component"
    name: ClassVar[str]
    Config: ClassVar[type[StrictConfig]] = ComponentConfig
    capabilities: ClassVar[Capabilities] = Capabilities()
    stand_in: ClassVar[str | None] = None

    def __init__(self, config: ConfigT) -> None:
        self.config: ConfigT = config
        self._status = ComponentStatus(ComponentState.CREATED)
        self._runner: PriorityRunner | None = None

    # -- lifecycle -----------------------------------------------------------------
    @property
    def status(self) -> ComponentStatus:
        return self._status

    async def start(self) -> None:
        """Load weights, open clients. Idempotent; records failure in ``status``."""
        if self._status.state is ComponentState.READY:
            return
        self._status = ComponentStatus(ComponentState.STARTING)
        try:
            await self._start()
        except BaseException as exc:
            self._status = ComponentStatus(ComponentState.FAILED, f"{type(exc).__name__}: {exc}")
            raise
        self._status = ComponentStatus(ComponentState.READY)

    async def stop(self) -> None:
        """Release what :meth:`start` acquired."""
        try:
            await self._stop()
        finally:
            if self._runner is not None:
                self._runner.close()
                self._runner = None
            self._status = ComponentStatus(ComponentState.STOPPED)

    async def _start(self) -> None:
        """Override to load heavy things. Import torch & co here, never at module level."""

    async def _stop(self) -> None:
        """Override to release resources."""

    # -- helpers for primitives ------------------------------------------------------
    async def run_blocking(self, fn: Callable[[], T],
                           priority: Priority | None = None) -> T:
        """Run a blocking call (a model forward pass) on this component's worker thread.

        Interactive calls start before any queued batch call; with no ``priority``
        the call has that of the work it is done for (:func:`omoide.blocking.work_priority`:
        batch inside extraction, else interactive).
        """
        if self._runner is None:
            self._runner = PriorityRunner(f"{self.kind}-{self.name}")
        return await self._runner.run(fn, priority)

    async def _call(self, what: str, attempt: Callable[[], Awaitable[T]], *,
                    timeout_s: float | None = None, retries: int | None = None) -> T:
        """Run ``attempt`` under this component's time budget and retry policy.

        Retries only :class:`ComponentError` with ``retryable`` set, with jittered
        exponential backoff. Anything else propagates at once. A component whose
        config has no call policy (not a :class:`ComponentConfig`) must pass both.
        """
        if timeout_s is None or retries is None:
            if not isinstance(self.config, ComponentConfig):
                raise TypeError(f"{self.kind} {self.name}: _call needs timeout_s and retries")
            timeout_s = self.config.timeout_s if timeout_s is None else timeout_s
            retries = self.config.retries if retries is None else retries
        budget, tries = timeout_s, 1 + retries
        delay = 0.2
        for i in range(tries):
            started = time.perf_counter()
            try:
                return await asyncio.wait_for(attempt(), timeout=budget)
            except TimeoutError as exc:
                err: ComponentError = ComponentTimeout(
                    f"{self.kind} {self.name}: {what} took longer than {budget:.1f}s")
                err.__cause__ = exc
            except ComponentError as exc:
                err = exc
            if not err.retryable or i == tries - 1:
                raise err
            log.warning("%s %s: %s failed after %.0f ms (%s); retrying", self.kind, self.name,
                        what, (time.perf_counter() - started) * 1000, err)
            await asyncio.sleep(delay * (1 + random.random()))
            delay *= 2
        raise AssertionError("unreachable")

    def describe(self) -> dict[str, Any]:
        """A JSON-able summary for ``/healthz`` and ``omoide plugins``."""
        return {"kind": self.kind, "name": self.name,
                "state": self._status.state.value, "reason": self._status.reason,
                "stand_in": self.stand_in}
