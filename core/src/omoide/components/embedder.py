"""Text embedders: sentences in, L2-normalised float32 vectors out.

Queries and documents (memories) may be embedded differently (Qwen3-Embedding's
instruction, e5's ``query:``/``passage:`` prefixes); callers say which with
``purpose``. Batch work is split into ``batch_size`` chunks, each queued at
:class:`Priority.BATCH`, so a query (interactive) never waits for more than one chunk.

Queries (:meth:`Embedder.embed_query`) go through a :class:`~omoide.components.
query_lane.QueryLane`: queries that arrive together share one model call (up to
``query_batch``), identical ones share one result, and recent ones are cached — so
every embedder keeps up with many people asking at once. An embedder whose model can
run a query beside a batch call (a second thread, a separate lane) does that in
:meth:`Embedder._embed` when ``priority`` is interactive.
"""

from __future__ import annotations

import dataclasses
import functools
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from omoide.components.base import Component, ComponentConfig
from omoide.components.query_lane import QueryLane, QueryLaneStats
from omoide.errors import ComponentError
from omoide.types import EmbedderFingerprint, EmbedPurpose, FloatArray, Priority

PROBE_TEXT = "あなたは来週の土曜日に友達と箱根に行く予定だ。"


class EmbedderConfig(ComponentConfig):
    batch_size: int = Field(16, ge=1, le=1024,
                            description="Sentences per model call for batch (document) work.")
    query_batch: int = Field(
        16, ge=1, le=256, description="Queries embedded together in one model call when"
        " several people ask at once (the first never waits for others).")
    query_cache: int = Field(
        1024, ge=0, le=1_000_000, description="Recent query vectors kept, so a repeated"
        " question is not embedded again (0: no cache).")


class Embedder(Component[EmbedderConfig]):
    """Template: chunking, priorities, timing, shape and norm checks."""

    kind: ClassVar[str] = "embedder"
    Config: ClassVar[type[EmbedderConfig]] = EmbedderConfig
    _query_lane: QueryLane | None = None

    @property
    @abstractmethod
    def model_id(self) -> str:
        """Identity of the embedding space (model id and anything that changes vectors)."""

    @property
    @abstractmethod
    def dims(self) -> int:
        """Length of the vectors returned."""

    @abstractmethod
    async def _embed(self, texts: Sequence[str], purpose: EmbedPurpose,
                     priority: Priority) -> FloatArray:
        """Embed ``texts`` (at most ``batch_size`` documents, or ``query_batch``
        queries) -> array (len(texts), dims).

        Use :meth:`run_blocking` with ``priority`` for local model calls.
        """

    async def embed(self, texts: Sequence[str], purpose: EmbedPurpose = "document",
                    priority: Priority | None = None) -> FloatArray:
        """Embed ``texts`` for ``purpose``; rows are L2-normalised float32."""
        if priority is None:
            priority = Priority.INTERACTIVE if purpose == "query" else Priority.BATCH
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        size = self.config.batch_size
        parts = [await self._embed_chunk(list(texts[i:i + size]), purpose, priority)
                 for i in range(0, len(texts), size)]
        return _unit_rows(np.concatenate(parts))

    async def embed_query(self, text: str, *, urgent: bool = False) -> FloatArray:
        """One query vector, interactive priority, through the query lane (batched with
        other people's queries, shared with identical ones, cached). ``urgent``: ahead
        of the queries waiting that are not (a recall with nothing else to go on)."""
        lane = self._query_lane
        if lane is None:
            lane = self._query_lane = QueryLane(self._embed_queries, self.config.query_batch,
                                                self.config.query_cache)
        return await lane.embed(text, urgent=urgent)

    def query_stats(self) -> QueryLaneStats | None:
        """What the query lane did so far (None before the first query)."""
        return None if self._query_lane is None else self._query_lane.stats()

    async def _embed_queries(self, texts: Sequence[str]) -> FloatArray:
        return _unit_rows(await self._embed_chunk(list(texts), "query", Priority.INTERACTIVE))

    async def _embed_chunk(self, chunk: list[str], purpose: EmbedPurpose,
                           priority: Priority) -> FloatArray:
        out = await self._call("embed", functools.partial(self._embed, chunk, purpose, priority))
        arr = np.asarray(out, dtype=np.float32)
        if arr.shape != (len(chunk), self.dims):
            raise ComponentError(f"embedder {self.name}: returned shape {arr.shape},"
                                 f" expected {(len(chunk), self.dims)}")
        return arr

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        stats = self.query_stats()
        if stats is not None:
            info["queries"] = dataclasses.asdict(stats)
        return info

    async def stop(self) -> None:
        if self._query_lane is not None:
            self._query_lane.close()
            self._query_lane = None
        await super().stop()

    async def fingerprint(self) -> EmbedderFingerprint:
        """The identity of this embedding space (model, dims, a probe vector)."""
        vec = (await self.embed([PROBE_TEXT], "document", Priority.INTERACTIVE))[0]
        return EmbedderFingerprint(self.model_id, self.dims, PROBE_TEXT,
                                   tuple(round(float(x), 6) for x in vec))


def _unit_rows(vectors: FloatArray) -> FloatArray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalised: FloatArray = (vectors / norms).astype(np.float32)
    return normalised
