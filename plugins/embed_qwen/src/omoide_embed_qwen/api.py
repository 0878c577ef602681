"""Qwen3-Embedding through an OpenAI-compatible ``/v1/embeddings`` endpoint
(ModelScope API-Inference by default; vLLM, DashScope and others speak the same).

The SDK's own retries are off (``max_retries=0``): the core template retries
retryable failures with backoff, and the fallback wrapper wants to know at once.
Vectors are requested as floats (the SDK would otherwise ask for base64), cut to
``dims`` and L2-normalised, exactly like the local model, so the two can agree.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, ClassVar

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
    Secret,
    space_name,
    to_component_error,
)
from omoide_embed_qwen.local import DEFAULT_TASK, query_text

log = logging.getLogger("omoide.embed.qwen_api")

MODELSCOPE_URL = "https://api-inference.modelscope.cn/v1"


class QwenAPIEmbedderConfig(EmbedderConfig):
    timeout_s: float = Field(10.0, gt=0, description="Time budget of one call, in seconds.")
    base_url: str = Field(MODELSCOPE_URL, description="OpenAI-compatible API base URL.")
    api_key: Secret = Field(None, description="API key, as {$env: MODELSCOPE_API_KEY}.")
    model: str = Field("Qwen/Qwen3-Embedding-0.6B", description="Model name at the API.")
    dims: int = Field(256, ge=8, le=4096,
                      description="Vector length: the first `dims` values, then L2-normalised.")
    send_dimensions: bool = Field(
        False, description="Also send `dimensions` to the API (only if it supports it; the "
                           "vectors are cut and normalised here either way).")
    task: str = Field(DEFAULT_TASK, description="Instruction put before queries (not documents).")


class QwenAPIEmbedder(Embedder):
    """Embeddings from an OpenAI-compatible API (``/v1/embeddings``)."""

    name: ClassVar[str] = "qwen_api"
    Config = QwenAPIEmbedderConfig
    config: QwenAPIEmbedderConfig

    def __init__(self, config: QwenAPIEmbedderConfig) -> None:
        super().__init__(config)
        self._client: Any = None

    @property
    def model_id(self) -> str:
        return space_name(self.config.model)

    @property
    def dims(self) -> int:
        return self.config.dims

    async def _start(self) -> None:
        from openai import AsyncOpenAI

        key = self.config.api_key.get_secret_value() if self.config.api_key else None
        if not key:
            if self.config.base_url.rstrip("/") == MODELSCOPE_URL:
                raise ModelNotAvailable(
                    "embedder qwen_api: ModelScope needs an API key",
                    hint="set api_key: {$env: MODELSCOPE_API_KEY} and export MODELSCOPE_API_KEY")
            key = "EMPTY"  # local OpenAI-compatible servers usually take any key
        self._client = AsyncOpenAI(base_url=self.config.base_url, api_key=key,
                                   max_retries=0, timeout=self.config.timeout_s)

    async def _stop(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def _embed(self, texts: Sequence[str], purpose: EmbedPurpose,
                     priority: Priority) -> FloatArray:
        if self._client is None:
            raise ComponentError("embedder qwen_api: not started")
        inputs = [query_text(self.config.task, t) if purpose == "query" else t for t in texts]
        extra: dict[str, Any] = {}
        if self.config.send_dimensions:
            extra["dimensions"] = self.config.dims
        try:
            response = await self._client.embeddings.create(
                model=self.config.model, input=inputs, encoding_format="float", **extra)
        except Exception as exc:
            raise to_component_error(exc, "embedder qwen_api") from exc
        rows = sorted(response.data, key=lambda d: d.index)
        if len(rows) != len(inputs):
            raise ComponentError(f"embedder qwen_api: {len(rows)} vectors for"
                                 f" {len(inputs)} inputs", retryable=True)
        try:
            full = np.asarray([row.embedding for row in rows], dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise ComponentError(f"embedder qwen_api: malformed vectors ({exc})") from exc
        if full.ndim != 2 or full.shape[1] < self.config.dims:
            raise ComponentError(f"embedder qwen_api: vectors of shape {full.shape}, need at"
                                 f" least {self.config.dims} dims")
        cut = full[:, :self.config.dims]
        norms = np.linalg.norm(cut, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return (cut / norms).astype(np.float32)
