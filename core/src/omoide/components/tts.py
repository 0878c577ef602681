"""Text to speech: one sentence in, one audio clip out."""

from __future__ import annotations

from abc import abstractmethod
from typing import ClassVar

from pydantic import Field

from omoide.components.base import Component, ComponentConfig
from omoide.errors import InvalidInput
from omoide.types import AudioClip


class TTSConfig(ComponentConfig):
    max_chars: int = Field(400, gt=0, description="Longest sentence accepted, in characters.")


class TTS(Component[TTSConfig]):
    kind: ClassVar[str] = "tts"
    Config: ClassVar[type[TTSConfig]] = TTSConfig

    async def synthesize(self, text: str) -> AudioClip:
        """Speak ``text``. Raises :class:`InvalidInput` for empty or overlong text."""
        text = text.strip()
        if not text:
            raise InvalidInput("tts: nothing to say")
        if len(text) > self.config.max_chars:
            raise InvalidInput(f"tts: {len(text)} characters is more than"
                               f" tts.max_chars={self.config.max_chars}")
        return await self._call("synthesize", lambda: self._synthesize(text))

    @abstractmethod
    async def _synthesize(self, text: str) -> AudioClip:
        """Synthesise one sentence; any sample rate (the device resamples)."""
