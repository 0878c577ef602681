"""Audio helpers every stage needs: resampling and WAV (PCM16) reading and writing."""

from __future__ import annotations

import io
import wave

import numpy as np

from omoide.errors import InvalidInput
from omoide.types import AudioClip

MAX_WAV_BYTES = 64 * 1024 * 1024


def resample(clip: AudioClip, rate: int) -> AudioClip:
    """Return ``clip`` at ``rate`` Hz (high-quality soxr), or ``clip`` itself if it matches."""
    if clip.sample_rate == rate:
        return clip
    import soxr  # small C extension; imported here so importing omoide stays cheap

    out = soxr.resample(clip.samples.astype(np.float32, copy=False), clip.sample_rate, rate)
    return AudioClip(np.asarray(out, dtype=np.float32), rate)


def pcm16_to_float(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0


def float_to_pcm16(samples: np.ndarray) -> bytes:
    return bytes((np.clip(samples, -1.0, 1.0) * 32767.0).astype("<i2").tobytes())


def read_wav(data: bytes) -> AudioClip:
    """Decode a PCM WAV (8/16/32-bit int, any rate, mono or stereo) into mono float32.

    Raises :class:`InvalidInput` for anything that is not a readable WAV.
    """
    if len(data) > MAX_WAV_BYTES:
        raise InvalidInput(f"wav: {len(data)} bytes is more than the {MAX_WAV_BYTES} accepted")
    try:
        with wave.open(io.BytesIO(data), "rb") as w:
            channels, width, rate, frames = (w.getnchannels(), w.getsampwidth(),
                                             w.getframerate(), w.getnframes())
            raw = w.readframes(frames)
    except (wave.Error, EOFError, ValueError) as exc:
        raise InvalidInput(f"wav: not a readable PCM WAV file ({exc})") from exc
    if rate <= 0 or channels <= 0:
        raise InvalidInput("wav: header has no sample rate or channels")
    if width == 2:
        samples = np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0
    elif width == 1:
        samples = (np.frombuffer(raw, dtype=np.uint8).astype(np.float32) - 128.0) / 128.0
    elif width == 4:
        samples = np.frombuffer(raw, dtype="<i4").astype(np.float32) / 2147483648.0
    else:
        raise InvalidInput(f"wav: unsupported sample width {width} bytes")
    usable = len(samples) - len(samples) % channels
    mono = samples[:usable].reshape(-1, channels).mean(axis=1).astype(np.float32)
    return AudioClip(mono, rate)


def write_wav(clip: AudioClip) -> bytes:
    """Encode ``clip`` as a mono PCM16 WAV."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(clip.sample_rate)
        w.writeframes(float_to_pcm16(clip.samples))
    return buf.getvalue()
