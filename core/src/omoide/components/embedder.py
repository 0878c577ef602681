"""Text embedders: sentences in, L2-normalised float32 vectors out.

Queries and documents (memories) may be embedded differently (Qwen3-Embedding's
instruction, e5's ``query:``/``passage:`` prefixes); callers say which with
``purpose``. Batch work is split into ``batch_size`` chunks, each queued at
:class:`Priority.BATCH`, so a query (interactive) never waits for more than one chunk.
"""

from __future__ import annotations

import functools
from abc import abstractmethod
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from pydantic import Field

from omoide.components.base import Component, ComponentConfig
from omoide.errors import ComponentError
from omoide.types import EmbedderFingerprint, EmbedPurpose, FloatArray, Priority

PROBE_TEXT = "あなたは来週の土曜日に友達と箱根に行く予定だ。"


class EmbedderConfig(ComponentConfig):
    batch_size: int = Field(16, ge=1, le=1024,
                            description="Sentences per model call for batch (document) work.")


class Embedder(Component[EmbedderConfig]):
    """Template: chunking, priorities, timing, shape and norm checks."""

    kind: ClassVar[str] = "embedder"
    Config: ClassVar[type[EmbedderConfig]] = EmbedderConfig

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
        """Embed ``texts`` (at most ``batch_size``) -> array (len(texts), dims).

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
        parts: list[FloatArray] = []
        for i in range(0, len(texts), size):
            chunk = list(texts[i:i + size])
            out = await self._call("embed", functools.partial(self._embed, chunk, purpose,
                                                              priority))
            arr = np.asarray(out, dtype=np.float32)
            if arr.shape != (len(chunk), self.dims):
                raise ComponentError(f"embedder {self.name}: returned shape {arr.shape},"
                                     f" expected {(len(chunk), self.dims)}")
            parts.append(arr)
        vectors = np.concatenate(parts)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        normalised: FloatArray = (vectors / norms).astype(np.float32)
        return normalised

    async def embed_query(self, text: str) -> FloatArray:
        """One query vector, interactive priority."""
        vector: FloatArray = (await self.embed([text], "query", Priority.INTERACTIVE))[0]
        return vector

    async def fingerprint(self) -> EmbedderFingerprint:
        """The identity of this embedding space (model, dims, a probe vector)."""
        vec = (await self.embed([PROBE_TEXT], "document", Priority.INTERACTIVE))[0]
        return EmbedderFingerprint(self.model_id, self.dims, PROBE_TEXT,
                                   tuple(round(float(x), 6) for x in vec))
