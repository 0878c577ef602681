"""Opus in and out: 16 kHz uplink decoding and downlink encoding at the hello's rate.

Needs the system library (Debian/Ubuntu: ``apt-get install -y libopus0``); the
``opuslib_next`` binding is imported lazily so importing the plugin stays cheap.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from omoide.api import AudioClip, ComponentError, FloatArray, InvalidInput, resample

OPUS_RATES = (8000, 12000, 16000, 24000, 48000)
OPUS_FRAME_MS = (10, 20, 40, 60)
INSTALL_HINT = "install the Opus library: apt-get install -y libopus0"


def _opus() -> Any:
    try:
        import opuslib_next
    except Exception as exc:  # the binding raises a bare Exception when libopus is absent
        raise ComponentError(f"Opus is not available ({exc}); {INSTALL_HINT}") from exc
    return opuslib_next


def check_opus_available() -> None:
    """Raise :class:`ComponentError` with an install hint when libopus cannot be loaded."""
    _opus()


def frame_samples(sample_rate: int, frame_ms: int) -> int:
    return sample_rate * frame_ms // 1000


class OpusDecoder:
    """Decodes one stream of mono Opus packets into float32 samples."""

    def __init__(self, sample_rate: int = 16000, frame_ms: int = 60) -> None:
        opus = _opus()
        self.sample_rate = sample_rate
        # The largest packet Opus allows is 120 ms; size the output for that.
        self._max_samples = frame_samples(sample_rate, 120)
        self._decoder = opus.Decoder(sample_rate, 1)
        self._error = opus.OpusError

    def decode(self, packet: bytes) -> FloatArray:
        """One packet -> samples. Raises :class:`InvalidInput` for a corrupt packet."""
        if not packet:
            raise InvalidInput("empty Opus packet")
        try:
            pcm = self._decoder.decode(bytes(packet), self._max_samples)
        except self._error as exc:
            raise InvalidInput(f"invalid Opus packet: {exc}") from exc
        return np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0


class OpusEncoder:
    """Encodes mono float32 audio into fixed-length Opus packets.

    ``voice`` picks Opus' VOIP mode (microphone speech) over AUDIO mode (synthesised
    speech); ``complexity`` 0-10 trades CPU for quality (3 costs about a quarter of 10
    and is indistinguishable for TTS on a robot speaker). Thread-safe: encoding may
    run on worker threads (the binding releases the GIL).
    """

    def __init__(self, sample_rate: int, frame_ms: int = 60, *, voice: bool = True,
                 complexity: int | None = None) -> None:
        if sample_rate not in OPUS_RATES:
            raise ValueError(f"Opus cannot encode at {sample_rate} Hz ({OPUS_RATES})")
        opus = _opus()
        self.sample_rate = sample_rate
        self.frame_ms = frame_ms
        self.frame_samples = frame_samples(sample_rate, frame_ms)
        app = opus.APPLICATION_VOIP if voice else opus.APPLICATION_AUDIO
        self._encoder = opus.Encoder(sample_rate, 1, app)
        if complexity is not None:
            self._encoder.complexity = complexity
        self._lock = threading.Lock()

    def encode_frame(self, samples: FloatArray) -> bytes:
        """Encode exactly one frame (shorter input is padded with silence)."""
        if len(samples) < self.frame_samples:
            samples = np.concatenate(
                [samples, np.zeros(self.frame_samples - len(samples), dtype=np.float32)])
        pcm = (np.clip(samples[:self.frame_samples], -1.0, 1.0) * 32767.0).astype("<i2")
        with self._lock:
            return bytes(self._encoder.encode(pcm.tobytes(), self.frame_samples))

    def encode_frames(self, samples: FloatArray, first: int, count: int) -> list[bytes]:
        """Packets for frames ``first .. first+count-1`` of ``samples`` (already at the
        encoder's rate); fewer at the end."""
        n = self.frame_samples
        return [self.encode_frame(samples[i * n:(i + 1) * n])
                for i in range(first, min(first + count, -(-len(samples) // n)))]

    def frames(self, clip: AudioClip) -> Iterator[bytes]:
        """Resample ``clip`` to the encoder's rate and yield its packets, one per frame.

        Lazy: each packet is encoded when asked for, so a paced sender spreads the
        encoding cost over the playback time.
        """
        samples = resample(clip, self.sample_rate).samples
        for start in range(0, len(samples), self.frame_samples):
            yield self.encode_frame(samples[start:start + self.frame_samples])

    def frame_count(self, clip: AudioClip) -> int:
        n = round(clip.duration_s * self.sample_rate)
        return -(-n // self.frame_samples)
