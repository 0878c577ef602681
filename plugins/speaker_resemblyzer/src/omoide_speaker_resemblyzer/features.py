"""Resemblyzer's front end in numpy: 40-channel mel power frames and the 1.6 s windows.

As Resemblyzer computes them with librosa (``librosa.feature.melspectrogram`` at 16 kHz:
25 ms Hann windows every 10 ms, centred with zero padding, power spectrum, 40 Slaney
mel filters from 0 to 8 kHz with Slaney area normalisation; not logarithmic), and its
``compute_partial_slices``: windows of 160 frames (1.6 s) every ``1/rate`` seconds
(rate 1.3: a window every 77 frames, about half a window), the last one kept when at
least ``min_coverage`` of it is audio.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from omoide.api import FloatArray

SAMPLE_RATE = 16000
N_FFT = 400  # 25 ms
HOP = 160  # 10 ms
N_MELS = 40
WINDOW_FRAMES = 160  # 1.6 s


def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    """Slaney's mel scale: linear to 1 kHz, logarithmic above."""
    step, min_log_mel = 200.0 / 3, 1000.0 / (200.0 / 3)
    logstep = math.log(6.4) / 27.0
    mel = hz / step
    above = hz >= 1000.0
    mel[above] = min_log_mel + np.log(hz[above] / 1000.0) / logstep
    return mel


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    step, min_log_mel = 200.0 / 3, 1000.0 / (200.0 / 3)
    logstep = math.log(6.4) / 27.0
    hz = mel * step
    above = mel >= min_log_mel
    hz[above] = 1000.0 * np.exp(logstep * (mel[above] - min_log_mel))
    return hz


@functools.cache
def mel_filters() -> FloatArray:
    """The (40, 201) Slaney mel filterbank librosa builds for these settings."""
    bins = np.fft.rfftfreq(N_FFT, 1.0 / SAMPLE_RATE)
    edges = _mel_to_hz(np.linspace(_hz_to_mel(np.array([0.0]))[0],
                                   _hz_to_mel(np.array([SAMPLE_RATE / 2.0]))[0], N_MELS + 2))
    widths = np.diff(edges)
    ramps = edges[:, None] - bins[None, :]
    lower = -ramps[:-2] / widths[:-1, None]
    upper = ramps[2:] / widths[1:, None]
    weights = np.maximum(0.0, np.minimum(lower, upper))
    weights *= (2.0 / (edges[2:] - edges[:-2]))[:, None]
    out: FloatArray = weights.astype(np.float32)
    return out


@functools.cache
def _hann() -> np.ndarray:
    n = np.arange(N_FFT)
    return 0.5 - 0.5 * np.cos(2.0 * np.pi * n / N_FFT)  # periodic, as scipy's fftbins=True


def mel_frames(wav: FloatArray) -> FloatArray:
    """Mel power frames (1 + len(wav) // 160, 40) of 16 kHz ``wav``, float32."""
    half = N_FFT // 2
    padded = np.pad(np.asarray(wav, dtype=np.float32), (half, half))
    frames = np.lib.stride_tricks.sliding_window_view(padded, N_FFT)[::HOP]
    spectrum = np.fft.rfft(frames * _hann(), axis=1)
    power = spectrum.real ** 2 + spectrum.imag ** 2
    mel: FloatArray = (power @ mel_filters().T.astype(np.float64)).astype(np.float32)
    return mel


def window_starts(n_samples: int, rate: float = 1.3, min_coverage: float = 0.75) -> list[int]:
    """First frame of each 1.6 s window over ``n_samples`` samples (Resemblyzer's
    ``compute_partial_slices``); always at least one window."""
    n_frames = math.ceil((n_samples + 1) / HOP)
    step = round((SAMPLE_RATE / rate) / HOP)
    if not 0 < step <= WINDOW_FRAMES:
        raise ValueError(f"rate {rate} gives a window step of {step} frames")
    starts = list(range(0, max(1, n_frames - WINDOW_FRAMES + step + 1), step))
    last = starts[-1] * HOP
    coverage = (n_samples - last) / (WINDOW_FRAMES * HOP)
    if coverage < min_coverage and len(starts) > 1:
        starts = starts[:-1]
    return starts


def windows(wav: FloatArray, rate: float = 1.3, min_coverage: float = 0.75) -> FloatArray:
    """The mel frames of each 1.6 s window of ``wav``: (windows, 160, 40), the audio
    zero-padded to cover the last window, as Resemblyzer's ``embed_utterance`` does."""
    starts = window_starts(len(wav), rate, min_coverage)
    end = (starts[-1] + WINDOW_FRAMES) * HOP
    if end >= len(wav):
        wav = np.pad(wav, (0, end - len(wav)))
    mel = mel_frames(wav)
    out: FloatArray = np.stack([mel[s:s + WINDOW_FRAMES] for s in starts])
    return out


CEPSTRA = 20
"""Cepstral coefficients of the frames view (c1..c20 of the 40 log-mel channels; c0, the
level, is left out)."""
VOICED_WITHIN_DB = 30.0
"""Frames of the frames view: those within this many dB of the clip's loudest."""


@functools.cache
def _dct() -> FloatArray:
    """The orthonormal DCT-II rows c1..c20 over the 40 log-mel channels."""
    k = np.arange(1, CEPSTRA + 1)[:, None]
    n = np.arange(N_MELS)[None, :]
    out: FloatArray = (np.cos(np.pi * k * (2 * n + 1) / (2 * N_MELS))
                       * np.sqrt(2.0 / N_MELS)).astype(np.float64)
    return out


def cepstral_frames(wav: FloatArray) -> FloatArray:
    """Mel cepstra and their deltas (frames, 40) of the loud frames of 16 kHz ``wav``:
    c1..c20 of the log mel power frames (the encoder's own front end), and each one's
    slope over +-2 frames; frames more than :data:`VOICED_WITHIN_DB` under the loudest
    are left out. A voice's timbre, which a diagonal Gaussian of these frames keeps
    where the utterance vector may not."""
    mel = mel_frames(wav).astype(np.float64)
    cepstra = np.log(mel + 1e-10) @ _dct().T
    padded = np.pad(cepstra, ((2, 2), (0, 0)), mode="edge")
    deltas = (2 * (padded[4:] - padded[:-4]) + (padded[3:-1] - padded[1:-3])) / 10
    energy = np.log(mel.sum(axis=1) + 1e-10)
    loud = energy >= energy.max() - VOICED_WITHIN_DB * np.log(10) / 10
    out: FloatArray = np.hstack([cepstra, deltas])[loud].astype(np.float32)
    return out
