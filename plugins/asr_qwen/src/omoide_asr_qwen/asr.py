"""Qwen3-ASR on CPU through the ``qwen-asr`` package (its transformers backend).

``Qwen3ASRModel.from_pretrained(dir, dtype=...)`` loads the weights; each utterance is
``transcribe(audio=(samples, 16000), language=..., context=...)``, the context string
being the configured ``context`` text, the hotwords and the person's memory vocabulary
(Qwen3-ASR is trained to use such context for names and terms). Long audio is
cut at quiet points into ``chunk_seconds`` pieces transcribed one after another, so
memory stays bounded whatever ``max_seconds`` allows. Output is NFKC-normalised.
"""

from __future__ import annotations

import logging
import unicodedata
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from omoide.api import (
    ASR,
    ASRConfig,
    AudioClip,
    ComponentError,
    ConfigError,
    ConfigProblem,
    InvalidInput,
    ModelNotAvailable,
    RecognitionContext,
    Transcript,
    WeightSource,
    load_on_own_thread,
    resolve_weights,
)

log = logging.getLogger("omoide.asr.qwen")

MIN_SECONDS = 0.5      # shorter clips are padded with silence (the encoder needs frames)


class QwenASRConfig(ASRConfig):
    model: str = Field("Qwen/Qwen3-ASR-0.6B",
                       description="Hub model id (ModelScope or Hugging Face) or a local "
                                   "directory.")
    source: WeightSource = Field(
        "auto", description="Where to look for hub ids: auto (ModelScope cache when the "
                            "modelscope package is installed, then Hugging Face), modelscope, "
                            "huggingface.")
    cache_dir: str | None = Field(None, description="Hub cache directory (default: the hub's).")
    dtype: Literal["float32", "bfloat16"] = Field(
        "float32", description="Weights dtype on CPU (bfloat16 halves memory; it is only "
                               "faster on CPUs with bf16 instructions).")
    max_new_tokens: int = Field(256, ge=1, le=4096,
                                description="Upper bound on generated tokens per chunk.")
    context: str = Field("", description="Extra context text given to the model before the "
                                         "hotwords and memory vocabulary (e.g. a topic).")
    chunk_seconds: float = Field(30.0, ge=5, le=1200,
                                 description="Long audio is transcribed in pieces this long.")
    threads: int | None = Field(None, ge=1, le=256,
                                description="torch intra-op threads (default: torch's choice).")


class QwenASR(ASR):
    """Qwen3-ASR (0.6B / 1.7B) via qwen-asr on CPU."""

    name: ClassVar[str] = "qwen"
    Config = QwenASRConfig
    config: QwenASRConfig

    def __init__(self, config: QwenASRConfig) -> None:
        super().__init__(config)
        self._model: Any = None
        self._language: str | None = None

    async def _start(self) -> None:
        path = resolve_weights(self.config.model, self.config.source, self.config.cache_dir,
                               "asr qwen")
        self._model = await load_on_own_thread(lambda: self._load(path))

    def _load(self, path: str) -> Any:
        import torch
        from qwen_asr import Qwen3ASRModel
        from qwen_asr.inference.utils import normalize_language_name, validate_language

        if self.config.language.strip().lower() not in ("", "auto"):
            language = normalize_language_name(self.config.language)
            try:
                validate_language(language)
            except ValueError as exc:
                raise ConfigError([ConfigProblem(
                    "asr.language", f"{exc} (names are in English, e.g. Japanese; or auto)")]) \
                    from exc
            self._language = language
        if self.config.threads:
            torch.set_num_threads(self.config.threads)
        dtype = torch.bfloat16 if self.config.dtype == "bfloat16" else torch.float32
        try:
            model = Qwen3ASRModel.from_pretrained(path, dtype=dtype,
                                                  max_new_tokens=self.config.max_new_tokens)
        except OSError as exc:
            raise ModelNotAvailable(f"asr qwen: cannot load {self.config.model} from {path}:"
                                    f" {exc}", hint=f"omoide download {self.config.model}") \
                from exc
        # the first inference of the process happens here, on the loading thread: see
        # loading.py for why the worker threads must not be the first
        model.transcribe(audio=(np.zeros(int(MIN_SECONDS * 16000), dtype=np.float32), 16000),
                         language=self._language, context="")
        log.info("asr qwen: loaded %s (%s, language %s)", self.config.model, self.config.dtype,
                 self._language or "auto")
        return model

    async def _stop(self) -> None:
        self._model = None

    def prompt_context(self, context: RecognitionContext) -> str:
        """The context string given to the model: the configured ``context`` text, then
        the request's vocabulary (the configured hotwords and the person's memory words)."""
        return " ".join(p for p in [self.config.context, " ".join(context.vocabulary)] if p)

    async def _transcribe(self, audio: AudioClip, context: RecognitionContext) -> Transcript:
        if self._model is None:
            raise ComponentError("asr qwen: not started")
        from qwen_asr.inference.utils import split_audio_into_chunks

        samples = np.ascontiguousarray(audio.samples, dtype=np.float32)
        minimum = int(MIN_SECONDS * audio.sample_rate)
        if samples.size < minimum:
            samples = np.pad(samples, (0, minimum - samples.size))
        texts: list[str] = []
        language = self._language
        prompt = self.prompt_context(context)
        for piece, _offset in split_audio_into_chunks(samples, audio.sample_rate,
                                                      self.config.chunk_seconds):
            result = await self.run_blocking(
                lambda p=piece: self._run(p, audio.sample_rate, prompt))
            texts.append(result.text)
            language = language or (result.language or None)
        text = unicodedata.normalize("NFKC", "".join(texts)).strip()
        return Transcript(text, language)

    def _run(self, samples: np.ndarray, rate: int, prompt: str) -> Any:
        try:
            results = self._model.transcribe(audio=(samples, rate), language=self._language,
                                             context=prompt)
        except (ValueError, RuntimeError) as exc:
            raise InvalidInput(f"asr qwen: the model could not process this audio ({exc})") \
                from exc
        return results[0]
