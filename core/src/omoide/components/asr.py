"""Speech recognition: one finished utterance in, one transcript out, or one utterance
heard while it is spoken (:meth:`ASR.open_stream`, :class:`RecognitionStream`).

A request may carry a :class:`RecognitionContext`: words this person is likely to say
(the names, places and things in their memories). Recognisers that can be biased
(an initial prompt, hotwords, a context string) use it; the others ignore it.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import unicodedata
from abc import abstractmethod
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, NoReturn

import numpy as np
from pydantic import Field

from omoide.audio import resample
from omoide.components.base import Component, ComponentConfig
from omoide.errors import InvalidInput
from omoide.text_controls import strip_controls
from omoide.types import AudioClip, Transcript

log = logging.getLogger("omoide.components.asr")

MAX_WORD_CHARS = 32
"""Longer "words" are not vocabulary (a sentence pasted as a name): they are dropped."""


@dataclass(frozen=True)
class RecognitionContext:
    """What one utterance's recognition may be biased towards.

    ``vocabulary`` lists words (names, places, entities), most useful first. A context
    biases recognition; it never asserts that a word was said.
    """

    vocabulary: tuple[str, ...] = ()

    @classmethod
    def of(cls, words: Iterable[str], limit: int | None = None) -> RecognitionContext:
        """A context of ``words``: NFKC-normalised, stripped, without blanks, duplicates
        or overlong entries, at most ``limit`` of them (in the order given)."""
        seen: dict[str, None] = {}
        for word in words:
            clean = unicodedata.normalize("NFKC", word).strip()
            if clean and len(clean) <= MAX_WORD_CHARS:
                seen.setdefault(clean, None)
            if limit is not None and len(seen) >= limit:
                break
        return cls(tuple(seen))

    def __bool__(self) -> bool:
        return bool(self.vocabulary)


NO_CONTEXT = RecognitionContext()


def recognised(result: Transcript) -> Transcript:
    """A recogniser's transcript as the turn takes it: NFKC, trimmed, and without control
    characters (:mod:`omoide.text_controls`: a model's output is cleaned, not refused)."""
    text = strip_controls(unicodedata.normalize("NFKC", result.text)).strip()
    return Transcript(text, result.language)


class ASRConfig(ComponentConfig):
    language: str = Field("Japanese", description="Spoken language, in English (e.g. Japanese).")
    hotwords: list[str] = Field(default_factory=list,
                                description="Words to bias recognition towards (names, places),"
                                            " always, before the person's own vocabulary.")
    memory_vocabulary: int = Field(
        32, ge=0, le=200,
        description="How many words of the person's memory vocabulary (names, places,"
                    " entities) each request is biased with; 0 turns memory-biased"
                    " recognition off.")
    max_seconds: float = Field(60.0, gt=0, le=900,
                               description="Longest utterance accepted; longer audio is refused.")


class ASR(Component[ASRConfig]):
    """Template: validates and resamples audio, merges the context with the configured
    hotwords, bounds the call, normalises the text.

    ``capabilities.streaming`` says whether :meth:`open_stream` recognises while the
    audio arrives; every recogniser supports :meth:`open_stream` either way.
    """

    kind: ClassVar[str] = "asr"
    Config: ClassVar[type[ASRConfig]] = ASRConfig
    input_sample_rate: ClassVar[int] = 16000

    async def transcribe(self, audio: AudioClip,
                         context: RecognitionContext | None = None) -> Transcript:
        """Transcribe ``audio``, biased towards ``context`` when the recogniser can be.

        Raises :class:`InvalidInput` for empty, overlong or non-finite audio.
        """
        if audio.samples.size == 0 or audio.sample_rate <= 0:
            raise InvalidInput("asr: empty audio")
        if audio.duration_s > self.config.max_seconds:
            raise InvalidInput(f"asr: {audio.duration_s:.1f}s of audio is longer than"
                               f" asr.max_seconds={self.config.max_seconds:g}")
        clip = resample(audio, self.input_sample_rate)
        if not np.isfinite(clip.samples).all():
            raise InvalidInput("asr: audio contains NaN or infinite samples")
        merged = self.request_context(context)
        result = await self._call("transcribe", lambda: self._transcribe(clip, merged))
        return recognised(result)

    def request_context(self, context: RecognitionContext | None) -> RecognitionContext:
        """The configured hotwords, then the request's vocabulary (cleaned, deduplicated,
        at most ``hotwords + memory_vocabulary`` words)."""
        extra = context.vocabulary if context is not None else ()
        limit = len(self.config.hotwords) + self.config.memory_vocabulary
        return RecognitionContext.of([*self.config.hotwords, *extra], limit)

    @abstractmethod
    async def _transcribe(self, audio: AudioClip, context: RecognitionContext) -> Transcript:
        """Transcribe mono float32 audio at ``input_sample_rate``.

        ``context`` is already cleaned and bounded; a recogniser that cannot be biased
        ignores it.
        """

    # -- streaming ---------------------------------------------------------------------
    def open_stream(self, context: RecognitionContext | None = None,
                    sample_rate: int | None = None) -> RecognitionStream:
        """A stream for one utterance heard as it arrives (see :class:`RecognitionStream`).

        ``sample_rate`` is that of the audio to be fed (default: ``input_sample_rate``).
        Cheap and synchronous: nothing is decoded until audio arrives. Recognisers whose
        ``capabilities.streaming`` is false return the default stream, which buffers and
        calls :meth:`transcribe` at :meth:`RecognitionStream.finish`.
        """
        rate = self.input_sample_rate if sample_rate is None else sample_rate
        if rate <= 0:
            raise InvalidInput(f"asr: sample rate {rate} is not positive")
        return self._open_stream(context, rate)

    def _open_stream(self, context: RecognitionContext | None,
                     sample_rate: int) -> RecognitionStream:
        """Override to return a :class:`StreamingRecognition` of this recogniser
        (``context`` is the caller's, not yet merged: see :meth:`request_context`)."""
        return RecognitionStream(self, context, sample_rate)


class _StreamState(enum.Enum):
    OPEN = "open"
    FINISHING = "finishing"
    CLOSED = "closed"


class RecognitionStream:
    """One utterance recognised while it is spoken: :meth:`feed` audio as it arrives,
    read :attr:`stable_text` (or iterate :meth:`partials`), then ``await``
    :meth:`finish` for the final transcript.

    This class is the default stream of every recogniser: it keeps the audio and at
    :meth:`finish` calls :meth:`ASR.transcribe` on all of it, so the result is the one
    collecting the utterance and calling ``transcribe`` gives, byte for byte, and
    :attr:`stable_text` stays empty. Streaming recognisers return a
    :class:`StreamingRecognition` instead.

    What a caller must know:

    - A stream belongs to the event loop it is used on and is not thread-safe: call
      :meth:`feed`, :meth:`finish` and :meth:`cancel` from that loop (other tasks of the
      same loop may read :attr:`stable_text` and iterate :meth:`partials`). :meth:`feed`
      never blocks: it validates, keeps the samples and may schedule background work.
    - Audio is mono float32 at the stream's ``sample_rate``, in chunks of any size.
      Non-finite samples, or more than ``asr.max_seconds`` in all, raise
      :class:`InvalidInput` from :meth:`feed`; the stream is then refused and
      :meth:`finish` raises the same error (as ``transcribe`` refuses such audio).
      Finishing a stream that got no audio raises :class:`InvalidInput`.
    - :attr:`stable_text` only grows: text a streaming recogniser will not revise.
      The final transcript normally begins with it; it may not when a background pass
      failed and :meth:`finish` fell back to decoding the whole utterance, which it does
      rather than lose what was said.
    - :meth:`finish` and :meth:`cancel` end the stream (once); :meth:`partials`
      iterators then stop. Use ``async with`` to cancel a stream left unfinished.
    """

    def __init__(self, asr: ASR, context: RecognitionContext | None,
                 sample_rate: int) -> None:
        self.asr = asr
        self.context = context
        self.sample_rate = sample_rate
        self._chunks: list[np.ndarray] = []
        self._samples = 0
        self._stable = ""
        self._state = _StreamState.OPEN
        self._refused: InvalidInput | None = None
        self._changed = asyncio.Event()

    # -- what a caller reads -------------------------------------------------------------
    @property
    def duration_s(self) -> float:
        """Seconds of audio fed so far."""
        return self._samples / self.sample_rate

    @property
    def stable_text(self) -> str:
        """The stable part of the transcript so far (NFKC); only grows."""
        return self._stable

    @property
    def closed(self) -> bool:
        """True once :meth:`finish` or :meth:`cancel` was called."""
        return self._state is not _StreamState.OPEN

    def audio(self) -> AudioClip:
        """Everything fed so far, at the stream's sample rate."""
        if len(self._chunks) > 1:
            self._chunks = [np.concatenate(self._chunks)]
        samples = self._chunks[0] if self._chunks else np.zeros(0, dtype=np.float32)
        return AudioClip(samples, self.sample_rate)

    async def partials(self) -> AsyncIterator[str]:
        """Each new :attr:`stable_text` as it grows, until the stream ends."""
        seen = ""
        while True:
            if self._stable != seen:
                seen = self._stable
                yield seen
                continue
            if self._state is _StreamState.CLOSED:
                return
            await self._changed.wait()

    async def heard_so_far(self, through_s: float | None = None) -> str | None:
        """What the recogniser hears in the audio fed so far, its last words included
        (they may still change: unlike :attr:`stable_text`, nothing is promised), for
        judging whether the person is finished (the turn stage): from a decoding of at
        least the first ``through_s`` seconds (None: all fed when asked). None when the
        stream cannot say before :meth:`finish` (the default: it decodes only at the
        end) or has ended."""
        return None

    # -- what a caller does --------------------------------------------------------------
    def feed(self, samples: np.ndarray) -> None:
        """Add audio (mono float32 at ``sample_rate``, any length). Never blocks.

        Raises :class:`InvalidInput` for non-finite samples or when the utterance grows
        past ``asr.max_seconds`` (the stream is then refused), or after the stream ended.
        """
        if self._state is not _StreamState.OPEN:
            raise InvalidInput("asr: audio fed to a stream that has ended")
        if self._refused is not None:
            raise self._refused
        chunk = np.asarray(samples, dtype=np.float32).reshape(-1)
        if chunk.size == 0:
            return
        if not np.isfinite(chunk).all():
            self._refuse(InvalidInput("asr: audio contains NaN or infinite samples"))
        seconds = (self._samples + chunk.size) / self.sample_rate
        if seconds > self.asr.config.max_seconds:
            self._refuse(InvalidInput(
                f"asr: {seconds:.1f}s of audio is longer than"
                f" asr.max_seconds={self.asr.config.max_seconds:g}"))
        self._chunks.append(chunk.copy())
        self._samples += chunk.size
        self._received(chunk)

    async def finish(self) -> Transcript:
        """The final transcript of everything fed (see the class for errors)."""
        if self._state is not _StreamState.OPEN:
            raise InvalidInput("asr: finish called on a stream that has ended")
        self._state = _StreamState.FINISHING
        try:
            if self._refused is not None:
                raise self._refused
            if self._samples == 0:
                raise InvalidInput("asr: empty audio")
            return await self._final()
        finally:
            await self._end()

    async def cancel(self) -> None:
        """End the stream without a transcript, stopping its background work. Idempotent."""
        if self._state is _StreamState.OPEN:
            self._state = _StreamState.FINISHING
            await self._end()

    async def __aenter__(self) -> RecognitionStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.cancel()

    # -- for streaming subclasses ----------------------------------------------------------
    def _received(self, samples: np.ndarray) -> None:
        """Called by :meth:`feed` with each valid chunk (at the stream's rate)."""

    async def _final(self) -> Transcript:
        """The final transcript (the default: ``transcribe`` of the whole utterance)."""
        return await self.asr.transcribe(self.audio(), self.context)

    async def _closing(self) -> None:
        """Stop background work (called once, when the stream ends)."""

    def _set_stable(self, text: str) -> None:
        """Publish a new stable text; ignored unless it extends the current one."""
        text = strip_controls(unicodedata.normalize("NFKC", text)).strip()
        if len(text) > len(self._stable) and text.startswith(self._stable):
            self._stable = text
            self._wake()

    def _refuse(self, error: InvalidInput) -> NoReturn:
        self._refused = error
        raise error

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def _end(self) -> None:
        try:
            await self._closing()
        finally:
            self._state = _StreamState.CLOSED
            self._wake()


class StreamingRecognition(RecognitionStream):
    """Base of the streams of recognisers that decode while the person speaks.

    The core resamples each chunk to the recogniser's ``input_sample_rate`` as it
    arrives (:meth:`input_audio`) and tells the subclass through :meth:`_input_grew`,
    where it may start background work (on the component's worker thread, through
    :meth:`ASR.run_blocking`); it publishes stable text with :meth:`_set_stable`.
    :meth:`finish` runs :meth:`_final_streaming` under the component's time budget;
    if that fails for any reason but refused input, the whole utterance is decoded
    with :meth:`ASR.transcribe` instead (logged), so nothing said is lost.
    """

    def __init__(self, asr: ASR, context: RecognitionContext | None,
                 sample_rate: int) -> None:
        super().__init__(asr, context, sample_rate)
        self.merged_context = asr.request_context(context)
        """The context after the configured hotwords were merged in."""
        self._input: list[np.ndarray] = []
        self._input_samples = 0
        self._resampler: Any = None
        if sample_rate != asr.input_sample_rate:
            import soxr  # small C extension, as in omoide.audio.resample

            self._resampler = soxr.ResampleStream(sample_rate, asr.input_sample_rate, 1,
                                                  dtype="float32")

    @property
    def input_samples(self) -> int:
        """Samples of :meth:`input_audio` so far."""
        return self._input_samples

    def input_audio(self) -> np.ndarray:
        """Everything fed so far at ``input_sample_rate`` (a resampler holds back a few
        milliseconds until the stream finishes)."""
        if len(self._input) > 1:
            self._input = [np.concatenate(self._input)]
        return self._input[0] if self._input else np.zeros(0, dtype=np.float32)

    def _received(self, samples: np.ndarray) -> None:
        self._add_input(samples, last=False)
        self._input_grew()

    def _add_input(self, samples: np.ndarray, *, last: bool) -> None:
        if self._resampler is not None:
            samples = np.asarray(self._resampler.resample_chunk(samples, last=last),
                                 dtype=np.float32)
        if samples.size:
            self._input.append(samples)
            self._input_samples += samples.size

    async def _final(self) -> Transcript:
        self._add_input(np.zeros(0, dtype=np.float32), last=True)
        try:
            result = await self.asr._call("stream finish", self._final_streaming, retries=0)
        except (InvalidInput, asyncio.CancelledError):
            raise
        except Exception as exc:  # noqa: BLE001 - any failure: decode the whole utterance
            log.warning("asr %s: streaming recognition failed (%s: %s); decoding the whole"
                        " utterance", self.asr.name, type(exc).__name__, exc)
            return await self.asr.transcribe(self.audio(), self.context)
        return recognised(result)

    def _input_grew(self) -> None:
        """New input audio arrived (override to schedule background decoding)."""

    @abstractmethod
    async def _final_streaming(self) -> Transcript:
        """The final transcript from what the background work left: decode only what
        it has not settled. Raise to fall back to a full decode."""
