"""An embedder that uses a secondary (an API) only while it is proven to agree with
the primary (the local model): the reference's API switch, made safe.

The secondary serves calls only while it answers AND a probe sentence embedded by
both (as a document and as a query) agrees at cosine >= ``min_agreement``. It is
probed at start and every ``recheck_seconds`` in the background; the first failure of
a call switches back to the primary at once, and the failed call is answered by the
primary. A vector from a backend that is not verified at the moment it returns is
discarded, so the store only ever receives vectors of the primary's space. The model
id, dims and fingerprint are always the primary's.

The runtime builds it from ``embed: {use: ..., fallback: {use: ..., min_agreement,
recheck_seconds}}``; it is not registered as a plugin component.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from omoide.components.embedder import PROBE_TEXT, Embedder, EmbedderConfig
from omoide.errors import ComponentError
from omoide.types import EmbedderFingerprint, EmbedPurpose, FloatArray, Priority

log = logging.getLogger("omoide.embed.fallback")

PROBE_QUERY = "週末の予定、覚えてる?"
PROBES: tuple[tuple[EmbedPurpose, str], ...] = (("document", PROBE_TEXT), ("query", PROBE_QUERY))


@dataclass(frozen=True)
class SecondaryCheck:
    """The outcome of the latest probe of the secondary."""

    verified: bool
    agreement: float | None    # min cosine over the probes; None if it did not answer
    reason: str
    at: float                  # clock time of the check


class FallbackEmbedder(Embedder):
    """Primary embedder with a verified secondary; see the module docstring."""

    name: ClassVar[str] = "fallback"

    def __init__(self, primary: Embedder, secondary: Embedder, *,
                 min_agreement: float = 0.99, recheck_seconds: float = 300.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(EmbedderConfig(
            batch_size=primary.config.batch_size, retries=0,
            timeout_s=primary.config.timeout_s + secondary.config.timeout_s))
        if primary.dims != secondary.dims:
            raise ComponentError(f"embed fallback: {secondary.name} gives {secondary.dims} dims,"
                                 f" {primary.name} gives {primary.dims}; they must match")
        self.primary = primary
        self.secondary = secondary
        self.min_agreement = min_agreement
        self.recheck_seconds = recheck_seconds
        self._clock = clock
        self._epoch = 0                      # bumped whenever the secondary loses trust
        self._check = SecondaryCheck(False, None, "not probed yet", clock())
        self._probes: dict[EmbedPurpose, FloatArray] = {}
        self._recheck_task: asyncio.Task[SecondaryCheck] | None = None
        self._last_backend: str | None = None

    # -- identity: always the primary's space -------------------------------------------
    @property
    def model_id(self) -> str:
        return self.primary.model_id

    @property
    def dims(self) -> int:
        return self.primary.dims

    async def fingerprint(self) -> EmbedderFingerprint:
        return await self.primary.fingerprint()

    @property
    def using_secondary(self) -> bool:
        """True while the secondary is verified and serves calls."""
        return self._check.verified

    @property
    def last_check(self) -> SecondaryCheck:
        return self._check

    @property
    def last_backend(self) -> str | None:
        """Name of the embedder that served the most recent call (``None`` before any)."""
        return self._last_backend

    # -- lifecycle ----------------------------------------------------------------------
    async def _start(self) -> None:
        await self.primary.start()
        for purpose, text in PROBES:
            self._probes[purpose] = (await self.primary.embed([text], purpose,
                                                              Priority.INTERACTIVE))[0]
        await self.recheck()

    async def _stop(self) -> None:
        if self._recheck_task is not None:
            self._recheck_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._recheck_task
            self._recheck_task = None
        for comp in (self.secondary, self.primary):
            with contextlib.suppress(Exception):
                await comp.stop()

    async def recheck(self) -> SecondaryCheck:
        """Probe the secondary now and switch to it or away from it accordingly."""
        started = self._clock()
        try:
            if self.secondary.status.state.value != "ready":
                await self.secondary.start()
            agreement = 1.0
            for purpose, text in PROBES:
                vec = await self._secondary_call([text], purpose, Priority.INTERACTIVE)
                agreement = min(agreement, float(vec[0] @ self._probes[purpose]))
        except Exception as exc:  # noqa: BLE001 - any failure means "not usable now"
            self._distrust(f"{type(exc).__name__}: {exc}", None, started)
            return self._check
        if agreement >= self.min_agreement:
            if not self._check.verified:
                log.info("embed fallback: %s agrees with %s (probe cosine %.4f >= %.2f);"
                         " using it", self.secondary.name, self.primary.name, agreement,
                         self.min_agreement)
            self._check = SecondaryCheck(True, agreement, "agrees", started)
        else:
            self._distrust(f"probe cosine {agreement:.4f} < {self.min_agreement}", agreement,
                           started)
        return self._check

    def _distrust(self, reason: str, agreement: float | None, at: float) -> None:
        if self._check.verified or self._check.reason == "not probed yet":
            log.warning("embed fallback: not using %s (%s); %s serves embeddings",
                        self.secondary.name, reason, self.primary.name)
        self._epoch += 1
        self._check = SecondaryCheck(False, agreement, reason, at)

    def _schedule_recheck(self) -> None:
        due = self._clock() - self._check.at >= self.recheck_seconds
        if due and (self._recheck_task is None or self._recheck_task.done()):
            self._recheck_task = asyncio.get_running_loop().create_task(self.recheck())

    # -- the primitive --------------------------------------------------------------------
    async def _secondary_call(self, texts: Sequence[str], purpose: EmbedPurpose,
                              priority: Priority) -> FloatArray:
        """One call of the secondary, no retries (a failure should switch at once)."""
        out = await asyncio.wait_for(self.secondary._embed(texts, purpose, priority),
                                     timeout=self.secondary.config.timeout_s)
        arr = np.asarray(out, dtype=np.float32)
        if arr.shape != (len(texts), self.dims):
            raise ComponentError(f"{self.secondary.name}: shape {arr.shape}, expected"
                                 f" {(len(texts), self.dims)}")
        norms = np.linalg.norm(arr, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        unit: FloatArray = (arr / norms).astype(np.float32)
        return unit

    async def _embed(self, texts: Sequence[str], purpose: EmbedPurpose,
                     priority: Priority) -> FloatArray:
        self._schedule_recheck()
        if self._check.verified:
            epoch = self._epoch
            try:
                vectors = await self._secondary_call(texts, purpose, priority)
            except Exception as exc:  # noqa: BLE001 - fall back at the first failure
                self._distrust(f"call failed: {type(exc).__name__}: {exc}", None, self._clock())
            else:
                if self._check.verified and epoch == self._epoch:
                    self._last_backend = self.secondary.name
                    return vectors
                # trust was withdrawn while this call ran: its vectors are not used
        local: FloatArray = await self.primary.embed(texts, purpose, priority)
        self._last_backend = self.primary.name
        return local

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info.update({"primary": self.primary.describe(), "secondary": self.secondary.describe(),
                     "using_secondary": self._check.verified,
                     "secondary_agreement": self._check.agreement,
                     "secondary_reason": self._check.reason})
        return info
