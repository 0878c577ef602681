"""Japanese speech from OpenJTalk (``pyopenjtalk``), as mono float32 at a chosen rate.

The phrase book's templates come from here, and so do the test utterances.
"""

from __future__ import annotations

import numpy as np

from omoide.api import AudioClip, FloatArray, resample

_PCM16_SCALE = 32768.0  # pyopenjtalk returns float64 samples on the int16 scale


def synthesize(text: str, rate: int = 16000, *, speed: float = 1.0,
               half_tone: float = 0.0) -> FloatArray:
    """Speak ``text`` with OpenJTalk's bundled voice; float32 in [-1, 1] at ``rate`` Hz."""
    import pyopenjtalk

    wave, sample_rate = pyopenjtalk.tts(text, speed=speed, half_tone=half_tone)
    samples = np.asarray(wave, dtype=np.float64) / _PCM16_SCALE
    peak = float(np.abs(samples).max()) if samples.size else 0.0
    if peak > 1.0:  # OpenJTalk can overshoot the int16 scale; scale rather than clip
        samples /= peak
    clip = resample(AudioClip(samples.astype(np.float32), int(sample_rate)), rate)
    return clip.samples
