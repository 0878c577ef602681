"""Speech recognition: one finished utterance in, one transcript out.

A request may carry a :class:`RecognitionContext`: words this person is likely to say
(the names, places and things in their memories). Recognisers that can be biased
(an initial prompt, hotwords, a context string) use it; the others ignore it.
"""

from __future__ import annotations

import unicodedata
from abc import abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from pydantic import Field

from omoide.audio import resample
from omoide.components.base import Component, ComponentConfig
from omoide.errors import InvalidInput
from omoide.types import AudioClip, Transcript

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
    hotwords, bounds the call, normalises the text."""

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
        return Transcript(unicodedata.normalize("NFKC", result.text).strip(), result.language)

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
