"""Acoustic features and template matching for the phrase-book recogniser (numpy only).

MFCCs (25 ms windows, 10 ms hop, 40 mel bands, coefficients 1–12 plus their deltas)
with per-utterance mean and variance normalisation, so gain and channel differences
cancel out. Steady background noise is subtracted and pauses (frames far below the
loudest) are dropped, so silence around and inside a phrase does not count. Two utterances are
compared by dynamic time warping over the cosine distance between frames, normalised
by the path length, so a faster or slower rendition of the same phrase stays close.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32]

SAMPLE_RATE = 16000
_WIN = 400          # 25 ms
_HOP = 160          # 10 ms
_NFFT = 512
_MELS = 40
_CEPS = 13


def _mel(hz: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return 2595.0 * np.log10(1.0 + hz / 700.0)


def _mel_filterbank(rate: int = SAMPLE_RATE, n_fft: int = _NFFT, n_mels: int = _MELS,
                    fmin: float = 60.0, fmax: float = 7600.0) -> npt.NDArray[np.float64]:
    """Triangular filters evenly spaced on the mel scale, shape (n_mels, n_fft // 2 + 1)."""
    mels = np.linspace(_mel(np.array(fmin)), _mel(np.array(fmax)), n_mels + 2)
    hz = 700.0 * (10 ** (mels / 2595.0) - 1.0)
    bins = np.fft.rfftfreq(n_fft, 1.0 / rate)
    bank = np.zeros((n_mels, bins.size))
    for m in range(n_mels):
        left, centre, right = hz[m], hz[m + 1], hz[m + 2]
        rising = (bins - left) / (centre - left)
        falling = (right - bins) / (right - centre)
        bank[m] = np.clip(np.minimum(rising, falling), 0.0, None)
    return bank


def _dct_matrix(n_in: int = _MELS, n_out: int = _CEPS) -> npt.NDArray[np.float64]:
    k = np.arange(n_out)[:, None]
    n = np.arange(n_in)[None, :]
    basis: npt.NDArray[np.float64] = np.cos(np.pi * k * (2 * n + 1) / (2 * n_in))
    scaled: npt.NDArray[np.float64] = basis * np.sqrt(2.0 / n_in)
    return scaled


_BANK = _mel_filterbank()
_DCT = _dct_matrix()
_WINDOW = np.hamming(_WIN)


_RANGE_DB = 30.0     # log-mel floor below the utterance peak
_KEEP_DB = 30.0      # frames quieter than this below the peak (pauses) are dropped
_NOISE_QUANTILE = 0.1


def _subtract_stationary_noise(power: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Spectral subtraction: remove the per-bin power of the quietest frames (steady noise).

    For clean speech the quietest frames are near silence and nothing changes.
    """
    if power.shape[0] < 10:
        return power
    energy = power.sum(axis=1)
    quiet = power[energy <= np.quantile(energy, _NOISE_QUANTILE)]
    noise = quiet.mean(axis=0)
    cleaned: npt.NDArray[np.float64] = np.maximum(power - 1.5 * noise, 0.02 * power)
    return cleaned


def _frames(samples: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    if samples.size < _WIN:
        samples = np.pad(samples, (0, _WIN - samples.size))
    count = 1 + (samples.size - _WIN) // _HOP
    idx = np.arange(_WIN)[None, :] + _HOP * np.arange(count)[:, None]
    framed: npt.NDArray[np.float64] = samples[idx]
    return framed


def is_silent(samples: FloatArray, rms_floor: float = 1e-3) -> bool:
    """True when the whole clip is quieter than ``rms_floor`` (no speech to match)."""
    return samples.size == 0 or float(np.sqrt(np.mean(samples.astype(np.float64) ** 2))) < rms_floor


def mfcc_features(samples: FloatArray) -> FloatArray:
    """Normalised MFCC + delta features of 16 kHz audio, shape (frames, 24)."""
    x = samples.astype(np.float64)
    x = np.append(x[0], x[1:] - 0.97 * x[:-1]) if x.size else x      # pre-emphasis
    spectrum = np.abs(np.fft.rfft(_frames(x) * _WINDOW, n=_NFFT)) ** 2
    spectrum = _subtract_stationary_noise(spectrum)
    mel = spectrum @ _BANK.T
    # Pauses and the silence around the phrase carry no identity: drop every frame well
    # below the loudest (after noise removal, so noisy and clean pauses both go).
    frame_db = 10 * np.log10(mel.sum(axis=1) + 1e-12)
    mel = mel[frame_db > frame_db.max() - _KEEP_DB]
    # A fixed dynamic range below the peak, so weak bands compare alike with and without noise.
    mel = np.maximum(mel, mel.max() * 10 ** (-_RANGE_DB / 10) + 1e-12)
    log_mel = np.log(mel)
    ceps = log_mel @ _DCT.T
    ceps = ceps[:, 1:]                                                  # c0 is loudness
    padded = np.pad(ceps, ((2, 2), (0, 0)), mode="edge")
    delta = (padded[3:-1] - padded[1:-3] + 2 * (padded[4:] - padded[:-4])) / 10.0
    feats = np.hstack([ceps, delta])
    feats -= feats.mean(axis=0)
    feats /= feats.std(axis=0) + 1e-8
    return feats.astype(np.float32)


def coarsen(features: FloatArray, factor: int = 3) -> FloatArray:
    """Average every ``factor`` consecutive frames: a cheap sketch for a first DTW pass."""
    usable = len(features) - len(features) % factor
    if usable == 0:
        return features
    sketch: FloatArray = features[:usable].reshape(-1, factor, features.shape[1]).mean(axis=1)
    return sketch


def dtw_distance(a: FloatArray, b: FloatArray, max_ratio: float = 2.5) -> float:
    """Length-normalised DTW distance between two feature sequences (cosine per frame).

    Returns ``inf`` when one sequence is more than ``max_ratio`` times longer than the
    other (no plausible rendition of the same phrase). The recurrence runs along
    anti-diagonals so each step is one vectorised numpy operation.
    """
    n, m = len(a), len(b)
    if n == 0 or m == 0 or max(n, m) > max_ratio * min(n, m):
        return float("inf")
    an = a / (np.linalg.norm(a, axis=1, keepdims=True) + 1e-8)
    bn = b / (np.linalg.norm(b, axis=1, keepdims=True) + 1e-8)
    cost = 1.0 - an.astype(np.float64) @ bn.T.astype(np.float64)
    acc = np.full((n + 1, m + 1), np.inf)
    acc[0, 0] = 0.0
    for k in range(2, n + m + 1):
        i = np.arange(max(1, k - m), min(n, k - 1) + 1)
        j = k - i
        best = np.minimum(np.minimum(acc[i - 1, j], acc[i, j - 1]), acc[i - 1, j - 1])
        acc[i, j] = cost[i - 1, j - 1] + best
    return float(acc[n, m] / (n + m))
