"""Turning the device's microphone stream into utterances.

:class:`UtteranceBuffer` keeps the audio since ``listen start`` (only a short
pre-roll before speech, so memory stays bounded while nobody talks).
:class:`EnergyEndOfSpeech` is the fallback end-of-speech detector used when the
server has no VAD configured: frame RMS with the same hysteresis shape as the core's
VAD-based detector.
"""

from __future__ import annotations

import numpy as np

from omoide.api import FloatArray, VadEvent


class UtteranceBuffer:
    """16 kHz samples since listening started, addressed by absolute sample index."""

    def __init__(self, sample_rate: int = 16000) -> None:
        self.sample_rate = sample_rate
        self._chunks: list[FloatArray] = []
        self._first = 0          # absolute index of the first kept sample
        self._total = 0          # absolute index one past the last sample

    @property
    def end(self) -> int:
        return self._total

    @property
    def kept_seconds(self) -> float:
        return (self._total - self._first) / self.sample_rate

    def append(self, samples: FloatArray) -> None:
        self._chunks.append(samples)
        self._total += len(samples)

    def drop_before(self, index: int) -> None:
        """Forget samples before absolute ``index`` (whole chunks only)."""
        while self._chunks and self._first + len(self._chunks[0]) <= index:
            self._first += len(self._chunks[0])
            self._chunks.pop(0)

    def take(self, start: int, end: int | None = None) -> FloatArray:
        """Samples in ``[start, end)`` that are still kept."""
        if not self._chunks:
            return np.zeros(0, dtype=np.float32)
        data = np.concatenate(self._chunks)
        lo = max(0, start - self._first)
        hi = len(data) if end is None else max(lo, end - self._first)
        return data[lo:hi].astype(np.float32, copy=False)


class EnergyEndOfSpeech:
    """End of speech by frame energy: a stand-in for a VAD (quiet rooms only).

    Speech starts when a 30 ms frame's RMS exceeds ``threshold`` and ends after
    ``min_silence_ms`` below ``threshold / 2``; bursts shorter than ``min_speech_ms``
    are ignored.
    """

    def __init__(self, threshold: float = 0.015, min_silence_ms: int = 700,
                 min_speech_ms: int = 200, sample_rate: int = 16000) -> None:
        self.threshold = threshold
        self.min_silence_ms = min_silence_ms
        self.min_speech_ms = min_speech_ms
        self.sample_rate = sample_rate
        self._frame = sample_rate * 30 // 1000
        self._pending = np.zeros(0, dtype=np.float32)
        self._pos = 0
        self._in_speech = False
        self._started = 0
        self._silence = 0

    @property
    def in_speech(self) -> bool:
        return self._in_speech

    def push(self, samples: FloatArray) -> list[VadEvent]:
        self._pending = np.concatenate([self._pending, samples.astype(np.float32, copy=False)])
        events: list[VadEvent] = []
        n, sr = self._frame, self.sample_rate
        while len(self._pending) >= n:
            frame, self._pending = self._pending[:n], self._pending[n:]
            rms = float(np.sqrt(np.mean(frame.astype(np.float64) ** 2)))
            self._pos += n
            if not self._in_speech:
                if rms >= self.threshold:
                    self._in_speech, self._started, self._silence = True, self._pos - n, 0
                    events.append(VadEvent("speech_start", self._started / sr))
                continue
            self._silence = self._silence + n if rms < self.threshold / 2 else 0
            if self._silence * 1000 >= self.min_silence_ms * sr:
                self._in_speech = False
                speech = self._pos - self._silence - self._started
                if speech * 1000 >= self.min_speech_ms * sr:
                    events.append(VadEvent("speech_end", (self._pos - self._silence) / sr))
                self._silence = 0
        return events
