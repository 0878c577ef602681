"""The `openjtalk` TTS: Open JTalk (pyopenjtalk-plus) with an HTS voice, fully offline.

Text goes through pyopenjtalk's front end (dictionary, kanji readings, accents) to
full-context labels, and this component's own HTS engine turns them into 48 kHz audio
(the bundled voice is "mei"). pyopenjtalk returns float64 samples on the int16 scale
that can overshoot it; they are scaled to float32 in [-1, 1].
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import Field

from omoide.api import TTS, AudioClip, ComponentError, ModelNotAvailable, TTSConfig

if TYPE_CHECKING:
    from pyopenjtalk.htsengine import HTSEngine

log = logging.getLogger("omoide.tts.openjtalk")

INT16_SCALE = 32768.0


class OpenJTalkTTSConfig(TTSConfig):
    speed: float = Field(1.0, ge=0.5, le=2.0, description="Speaking rate; 1.0 is the voice's own.")
    half_tone: float = Field(0.0, ge=-12, le=12,
                             description="Pitch shift in semitones (positive is higher).")
    voice: str | None = Field(
        None, description="Path of an HTS voice (.htsvoice); default: the voice bundled with"
                          " pyopenjtalk-plus (mei).")


class OpenJTalkTTS(TTS):
    """Japanese speech from Open JTalk: ~0.1 s per sentence on one CPU core, 48 kHz."""

    name = "openjtalk"
    Config = OpenJTalkTTSConfig

    config: OpenJTalkTTSConfig

    def __init__(self, config: OpenJTalkTTSConfig) -> None:
        super().__init__(config)
        self._engine: HTSEngine | None = None
        self._frontend: Any = None

    async def _start(self) -> None:
        self._engine = await self.run_blocking(self._load)

    async def _stop(self) -> None:
        self._engine = None

    def _load(self) -> HTSEngine:
        try:
            import pyopenjtalk
            from pyopenjtalk.htsengine import HTSEngine
        except ImportError as exc:
            raise ModelNotAvailable("tts openjtalk: pyopenjtalk is not installed",
                                    hint="pip install pyopenjtalk-plus") from exc
        voice: bytes = pyopenjtalk.DEFAULT_HTS_VOICE
        if self.config.voice is not None:
            path = Path(self.config.voice).expanduser()
            if not path.is_file():
                raise ModelNotAvailable(f"tts openjtalk: no HTS voice at {path}",
                                        hint="fix tts.voice, or drop it to use the bundled voice")
            voice = str(path).encode()
        try:
            engine = HTSEngine(voice)
        except Exception as exc:
            raise ComponentError(f"tts openjtalk: cannot load voice {voice.decode()}: {exc}"
                                 ) from exc
        self._frontend = pyopenjtalk
        # Warm the dictionary and the front end's models now, not in the first turn.
        pyopenjtalk.extract_fullcontext("こんにちは")
        return engine

    async def _synthesize(self, text: str) -> AudioClip:
        return await self.run_blocking(lambda: self._speak(text))

    def _speak(self, text: str) -> AudioClip:
        engine, frontend = self._engine, self._frontend
        if engine is None or frontend is None:
            raise ComponentError("tts openjtalk: not started")
        rate = int(engine.get_sampling_frequency())
        labels = frontend.extract_fullcontext(text)
        # Our engine is used only from this component's worker thread, so setting the
        # speed and pitch before each call is safe.
        engine.set_speed(self.config.speed)
        engine.add_half_tone(self.config.half_tone)
        raw = np.asarray(engine.synthesize(labels), dtype=np.float64)
        if raw.size == 0:
            # Nothing pronounceable (only symbols or emoji): say nothing rather than fail
            # the turn.
            log.debug("tts openjtalk: nothing to pronounce in %r", text)
            return AudioClip(np.zeros(0, dtype=np.float32), rate)
        samples = raw / INT16_SCALE
        peak = float(np.abs(samples).max())
        if peak > 1.0:
            # The synthesiser overshoots the int16 range on some sounds; scale, don't clip.
            samples = samples / peak
        return AudioClip(samples.astype(np.float32), rate)
