"""Speech recognition: one finished utterance in, one transcript out."""

from __future__ import annotations

import unicodedata
from abc import abstractmethod
from typing import ClassVar

import numpy as np
from pydantic import Field

from omoide.audio import resample
from omoide.components.base import Component, ComponentConfig
from omoide.errors import InvalidInput
from omoide.types import AudioClip, Transcript


class ASRConfig(ComponentConfig):
    language: str = Field("Japanese", description="Spoken language, in English (e.g. Japanese).")
    hotwords: list[str] = Field(default_factory=list,
                                description="Words to bias recognition towards (names, places).")
    max_seconds: float = Field(60.0, gt=0, le=900,
                               description="Longest utterance accepted; longer audio is refused.")


class ASR(Component[ASRConfig]):
    """Template: validates and resamples audio, bounds the call, normalises the text."""

    kind: ClassVar[str] = "asr"
    Config: ClassVar[type[ASRConfig]] = ASRConfig
    input_sample_rate: ClassVar[int] = 16000

    async def transcribe(self, audio: AudioClip) -> Transcript:
        """Transcribe ``audio``. Raises :class:`InvalidInput` for empty or overlong audio."""
        if audio.samples.size == 0 or audio.sample_rate <= 0:
            raise InvalidInput("asr: empty audio")
        if audio.duration_s > self.config.max_seconds:
            raise InvalidInput(f"asr: {audio.duration_s:.1f}s of audio is longer than"
                               f" asr.max_seconds={self.config.max_seconds:g}")
        clip = resample(audio, self.input_sample_rate)
        if not np.isfinite(clip.samples).all():
            raise InvalidInput("asr: audio contains NaN or infinite samples")
        result = await self._call("transcribe", lambda: self._transcribe(clip))
        return Transcript(unicodedata.normalize("NFKC", result.text).strip(), result.language)

    @abstractmethod
    async def _transcribe(self, audio: AudioClip) -> Transcript:
        """Transcribe mono float32 audio at ``input_sample_rate``."""
