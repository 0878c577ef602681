"""Voice activity detection: a per-frame speech probability, turned into end of speech.

A VAD plugin implements :meth:`VAD._speech_probability` for one frame of
``frame_samples`` samples at ``sample_rate``; the core's :class:`EndOfSpeechDetector`
adds hysteresis (start above ``threshold``, end after ``min_silence_ms`` below
``neg_threshold``) so every VAD behaves the same way at the turn level.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from omoide.components.base import Component, ComponentConfig
from omoide.errors import InvalidInput
from omoide.types import FloatArray


class VADConfig(ComponentConfig):
    threshold: float = Field(0.5, ge=0, le=1, description="Probability that starts speech.")
    neg_threshold: float = Field(0.3, ge=0, le=1,
                                 description="Probability below which a frame counts as silence.")
    min_silence_ms: int = Field(600, ge=0, description="Silence that ends an utterance, in ms.")
    min_speech_ms: int = Field(200, ge=0,
                               description="Speech shorter than this is ignored (clicks, coughs).")


@dataclass
class VadEvent:
    """``speech_start`` or ``speech_end`` at ``at_s`` seconds into the stream."""

    kind: str
    at_s: float


class VAD(Component[VADConfig]):
    """Frame-level speech probability. Cheap and synchronous (sub-millisecond per frame)."""

    kind: ClassVar[str] = "vad"
    Config: ClassVar[type[VADConfig]] = VADConfig
    sample_rate: ClassVar[int] = 16000
    frame_samples: ClassVar[int] = 512

    @abstractmethod
    def new_state(self) -> Any:
        """Fresh recurrent state for one audio stream."""

    @abstractmethod
    def _speech_probability(self, frame: FloatArray, state: Any) -> float:
        """Probability that ``frame`` (exactly ``frame_samples`` samples) is speech."""

    def speech_probability(self, frame: FloatArray, state: Any) -> float:
        if frame.shape != (self.frame_samples,):
            raise InvalidInput(f"vad {self.name}: frame must have {self.frame_samples} samples,"
                               f" got {frame.shape}")
        return float(self._speech_probability(frame.astype(np.float32, copy=False), state))

    def new_detector(self) -> EndOfSpeechDetector:
        return EndOfSpeechDetector(self)


class EndOfSpeechDetector:
    """Feeds arbitrary-length 16 kHz audio to a VAD and reports speech start and end."""

    def __init__(self, vad: VAD) -> None:
        self._vad = vad
        self._state = vad.new_state()
        self._pending = np.zeros(0, dtype=np.float32)
        self._pos = 0
        self._in_speech = False
        self._speech_started_at = 0
        self._silence_run = 0

    @property
    def in_speech(self) -> bool:
        return self._in_speech

    @property
    def silence_from_s(self) -> float | None:
        """Where the silence under way inside speech began, in seconds (None: voiced).
        A ``speech_end`` reports the same instant once the silence is long enough."""
        if not self._in_speech or not self._silence_run:
            return None
        return (self._pos - self._silence_run) / self._vad.sample_rate

    def push(self, samples: FloatArray) -> list[VadEvent]:
        cfg = self._vad.config
        sr = self._vad.sample_rate
        n = self._vad.frame_samples
        self._pending = np.concatenate([self._pending, samples.astype(np.float32, copy=False)])
        events: list[VadEvent] = []
        while len(self._pending) >= n:
            frame, self._pending = self._pending[:n], self._pending[n:]
            p = self._vad.speech_probability(frame, self._state)
            self._pos += n
            if not self._in_speech:
                if p >= cfg.threshold:
                    self._in_speech = True
                    self._speech_started_at = self._pos - n
                    self._silence_run = 0
                    events.append(VadEvent("speech_start", self._speech_started_at / sr))
                continue
            self._silence_run = self._silence_run + n if p < cfg.neg_threshold else 0
            if self._silence_run * 1000 >= cfg.min_silence_ms * sr:
                self._in_speech = False
                speech_samples = self._pos - self._silence_run - self._speech_started_at
                if speech_samples * 1000 >= cfg.min_speech_ms * sr:
                    events.append(VadEvent("speech_end", (self._pos - self._silence_run) / sr))
                self._silence_run = 0
        return events
