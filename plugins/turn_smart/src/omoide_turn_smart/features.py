"""Whisper-style log-mel features in numpy: what Smart Turn v3 reads.

The model was trained on the features of ``transformers.WhisperFeatureExtractor``
(80 Slaney mel bands, 25 ms Hann window, 10 ms hop, 16 kHz, 8 s chunks) with
``do_normalize=True``. The same computation here, without transformers or torch:

1. the 8 s window: the last 8 s of the utterance, zero-padded *in front* when shorter
   (the model looks at the end of the utterance, where the pause is);
2. the waveform normalised to zero mean and unit variance;
3. a centred (reflect-padded) short-time Fourier transform, power spectrum;
4. the Slaney-normalised mel filterbank, ``log10`` with a floor, the last frame dropped;
5. dynamic range clipped to 8 (log10 units) below the maximum, then ``(x + 4) / 4``.

``tests/test_turn_smart_features.py`` checks the result against transformers' own
extractor when transformers is installed.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from omoide.api import FloatArray

SAMPLE_RATE = 16000
N_FFT = 400
HOP = 160
N_MELS = 80
WINDOW_S = 8
WINDOW_SAMPLES = SAMPLE_RATE * WINDOW_S
FRAMES = WINDOW_SAMPLES // HOP   # 800


def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    """Slaney's mel scale: linear below 1 kHz, logarithmic above."""
    hz = np.asarray(hz, dtype=np.float64)
    linear = 3.0 * hz / 200.0
    log_part = 15.0 + np.log(np.maximum(hz, 1e-10) / 1000.0) * (27.0 / np.log(6.4))
    return np.where(hz >= 1000.0, log_part, linear)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    mel = np.asarray(mel, dtype=np.float64)
    linear = 200.0 * mel / 3.0
    log_part = 1000.0 * np.exp((np.log(6.4) / 27.0) * (mel - 15.0))
    return np.where(mel >= 15.0, log_part, linear)


@cache
def mel_filterbank() -> np.ndarray:
    """(N_FFT // 2 + 1, N_MELS) triangular filters, Slaney area-normalised."""
    bins = np.linspace(0, SAMPLE_RATE // 2, N_FFT // 2 + 1)
    edges = _mel_to_hz(np.linspace(_hz_to_mel(np.array(0.0)),
                                   _hz_to_mel(np.array(SAMPLE_RATE / 2)), N_MELS + 2))
    widths = np.diff(edges)
    offsets = edges[None, :] - bins[:, None]
    rising = -offsets[:, :-2] / widths[:-1]
    falling = offsets[:, 2:] / widths[1:]
    filters = np.maximum(0.0, np.minimum(rising, falling))
    return filters * (2.0 / (edges[2:] - edges[:-2]))[None, :]


@cache
def _hann() -> np.ndarray:
    """Periodic Hann window of N_FFT samples (as torch.hann_window)."""
    return np.hanning(N_FFT + 1)[:-1]


def last_window(audio: FloatArray) -> FloatArray:
    """The last 8 s of ``audio``, zero-padded in front to exactly 8 s."""
    audio = np.asarray(audio, dtype=np.float32)[-WINDOW_SAMPLES:]
    if len(audio) < WINDOW_SAMPLES:
        audio = np.concatenate([np.zeros(WINDOW_SAMPLES - len(audio), np.float32), audio])
    return audio


def log_mel(window: FloatArray) -> FloatArray:
    """(N_MELS, FRAMES) float32 features of exactly 8 s of 16 kHz audio."""
    if window.shape != (WINDOW_SAMPLES,):
        raise ValueError(f"expected {WINDOW_SAMPLES} samples, got {window.shape}")
    x = window.astype(np.float32)
    x = (x - x.mean()) / np.sqrt(x.var() + 1e-7)
    padded = np.pad(x.astype(np.float64), N_FFT // 2, mode="reflect")
    frames = np.lib.stride_tricks.sliding_window_view(padded, N_FFT)[::HOP]
    power = np.abs(np.fft.rfft(frames * _hann(), axis=-1)) ** 2      # (frames + 1, bins)
    mel = np.log10(np.maximum(power @ mel_filterbank(), 1e-10)).T[:, :-1]
    mel = np.maximum(mel, mel.max() - 8.0)
    return ((mel + 4.0) / 4.0).astype(np.float32)
