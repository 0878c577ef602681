"""Qwen3-Embedding on this machine's CPU, through transformers.

How the vectors are made (what a reader of the model card expects):
left padding, the tokenizer appends the end token, the embedding is the last token's
hidden state; queries get ``Instruct: {task}\\nQuery:{text}``, documents nothing; the
vector is cut to ``dims`` (Matryoshka) and L2-normalised.

Interactive first: batch (document) work runs on the component's worker at BATCH
priority; queries run on a separate interactive lane, and with ``preempt`` on, a batch
forward pass parks before the next attention or MLP block while a query is pending
(see :mod:`omoide_embed_qwen.preemption`), so a query waits for at most half a layer
of one batch chunk.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from omoide.api import (
    Embedder,
    EmbedderConfig,
    EmbedPurpose,
    FloatArray,
    ModelNotAvailable,
    Priority,
    PriorityRunner,
    WeightSource,
    load_on_own_thread,
    resolve_weights,
    space_name,
)
from omoide_embed_qwen.preemption import LayerGate

log = logging.getLogger("omoide.embed.qwen")

DEFAULT_TASK = "Given a web search query, retrieve relevant passages that answer the query"


class QwenEmbedderConfig(EmbedderConfig):
    model: str = Field("Qwen/Qwen3-Embedding-0.6B",
                       description="Hub model id (ModelScope or Hugging Face) or a local "
                                   "directory.")
    source: WeightSource = Field(
        "auto", description="Where to look for hub ids: auto (ModelScope cache when the "
                            "modelscope package is installed, then Hugging Face), modelscope, "
                            "huggingface.")
    cache_dir: str | None = Field(None, description="Hub cache directory (default: the hub's).")
    dims: int = Field(256, ge=8, le=4096,
                      description="Vector length: the first `dims` values, then L2-normalised.")
    dtype: Literal["float32", "bfloat16"] = Field("bfloat16", description="Weights dtype on CPU.")
    quantize: Literal["none", "int8"] = Field(
        "none", description="int8 = dynamic int8 quantisation of the linear layers (float32 "
                            "model; faster on CPU, slightly different vectors).")
    task: str = Field(DEFAULT_TASK, description="Instruction put before queries (not documents).")
    max_length: int = Field(512, ge=8, le=32768, description="Longest input, in tokens.")
    threads: int | None = Field(None, ge=1, le=256,
                                description="torch intra-op threads (default: torch's choice).")
    preempt: bool = Field(True, description="Let queries overtake a running batch at layer "
                                            "boundaries (a separate interactive lane).")


def last_token_pool(hidden: Any, attention_mask: Any) -> Any:
    """Hidden state of each sequence's last real token (left or right padding)."""
    import torch

    if bool(attention_mask[:, -1].all()):
        return hidden[:, -1]
    lengths = attention_mask.sum(dim=1) - 1
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), lengths]


def query_text(task: str, text: str) -> str:
    """The instruction format Qwen3-Embedding was trained with for queries."""
    return f"Instruct: {task}\nQuery:{text}"


class QwenEmbedder(Embedder):
    """Qwen3-Embedding (any size) run locally with transformers."""

    name: ClassVar[str] = "qwen"
    Config = QwenEmbedderConfig
    config: QwenEmbedderConfig

    def __init__(self, config: QwenEmbedderConfig) -> None:
        super().__init__(config)
        self._model: Any = None
        self._tokenizer: Any = None
        self._gate = LayerGate()
        self._lane: PriorityRunner | None = None

    @property
    def model_id(self) -> str:
        suffix = "" if self.config.quantize == "none" else f"+{self.config.quantize}"
        return space_name(self.config.model) + suffix

    @property
    def dims(self) -> int:
        return self.config.dims

    async def _start(self) -> None:
        path = resolve_weights(self.config.model, self.config.source, self.config.cache_dir,
                               "embedder qwen")
        self._model, self._tokenizer = await load_on_own_thread(lambda: self._load(path))

    def _load(self, path: str) -> tuple[Any, Any]:
        import torch
        from transformers import AutoModel, AutoTokenizer

        if self.config.threads:
            torch.set_num_threads(self.config.threads)
        dtype = torch.bfloat16 if (self.config.dtype == "bfloat16"
                                   and self.config.quantize == "none") else torch.float32
        try:
            tokenizer = AutoTokenizer.from_pretrained(path, padding_side="left")
            model = AutoModel.from_pretrained(path, dtype=dtype)
        except OSError as exc:
            raise ModelNotAvailable(f"embedder qwen: cannot load {self.config.model} from"
                                    f" {path}: {exc}",
                                    hint=f"omoide download {self.config.model}") from exc
        hidden = int(model.config.hidden_size)
        if self.config.dims > hidden:
            raise ModelNotAvailable(
                f"embedder qwen: dims={self.config.dims} is more than the model's {hidden}",
                hint=f"set embed.dims to at most {hidden}")
        model.eval()
        if self.config.quantize == "int8":
            import warnings

            from torch.ao.quantization import quantize_dynamic

            with warnings.catch_warnings():  # deprecated in torch, still the CPU-fast path
                warnings.simplefilter("ignore")
                model = quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
        with torch.inference_mode():   # the first inference runs here: see loading.py
            model(**tokenizer(["warm up"], return_tensors="pt"))
        for block in _checkpoint_blocks(model):
            block.register_forward_pre_hook(lambda _m, _a: self._gate.checkpoint())
        log.info("embedder qwen: loaded %s (%s%s, %d dims, %d threads)", self.config.model,
                 self.config.dtype, "" if self.config.quantize == "none" else " int8",
                 self.config.dims, torch.get_num_threads())
        return model, tokenizer

    async def _stop(self) -> None:
        if self._lane is not None:
            self._lane.close()
            self._lane = None
        self._model = self._tokenizer = None

    async def _embed(self, texts: Sequence[str], purpose: EmbedPurpose,
                     priority: Priority) -> FloatArray:
        items = list(texts)
        if not self.config.preempt:
            return await self.run_blocking(lambda: self.encode(items, purpose), priority)
        if priority is Priority.INTERACTIVE:
            if self._lane is None:
                self._lane = PriorityRunner("embedder-qwen-interactive")
            return await self._lane.run(lambda: self._encode_gated(items, purpose, True))
        return await self.run_blocking(lambda: self._encode_gated(items, purpose, False),
                                       priority)

    def _encode_gated(self, texts: list[str], purpose: EmbedPurpose,
                      interactive: bool) -> FloatArray:
        with self._gate.interactive() if interactive else self._gate.batch():
            return self.encode(texts, purpose)

    def encode(self, texts: Sequence[str], purpose: EmbedPurpose) -> FloatArray:
        """Embed synchronously on the calling thread (benchmarks and tools; the server
        goes through :meth:`embed`)."""
        import torch

        if self._model is None:
            raise RuntimeError("embedder qwen: not started")
        if self.config.threads and torch.get_num_threads() != self.config.threads:
            torch.set_num_threads(self.config.threads)  # per OS thread with OpenMP
        inputs = [query_text(self.config.task, t) if purpose == "query" else t for t in texts]
        batch = self._tokenizer(inputs, padding=True, truncation=True,
                                max_length=self.config.max_length, return_tensors="pt")
        with torch.inference_mode():
            hidden = self._model(**batch).last_hidden_state
        pooled = last_token_pool(hidden, batch["attention_mask"])[:, :self.config.dims]
        vectors = torch.nn.functional.normalize(pooled.float(), p=2, dim=1)
        return np.ascontiguousarray(vectors.numpy(), dtype=np.float32)


def _checkpoint_blocks(model: Any) -> list[Any]:
    """Where a batch pass may park: before each decoder layer's attention and its MLP
    (so a query waits for at most half a layer of one batch chunk)."""
    layers = getattr(model, "layers", None)
    if layers is None and hasattr(model, "model"):
        layers = getattr(model.model, "layers", None)
    blocks: list[Any] = []
    for layer in layers or []:
        parts = [getattr(layer, name, None) for name in ("self_attn", "mlp")]
        if all(p is not None for p in parts):
            blocks.extend(parts)
        else:
            blocks.append(layer)
    return blocks
