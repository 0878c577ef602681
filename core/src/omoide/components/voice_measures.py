"""Measures of a voice beside its speaker vector: the median pitch of an utterance and the
statistics of its spectral frames, with the diagonal-Gaussian scores built from them.

Pure numpy and independent of any encoder: :mod:`omoide.components.speaker` keeps one of
each per enrolment utterance and, when ``speaker.pitch_weight`` or
``speaker.spectral_weight`` is set, lowers a person's score by how far the voice is from
them in these measures (both off by default: measured in ``omoide bench speaker``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from omoide.types import FloatArray

PITCH_FRAME = 640
"""Frames of the pitch tracker: 40 ms at 16 kHz (two periods of a 50 Hz voice), every 10 ms."""
PITCH_RANGE_HZ = (70.0, 400.0)
"""Pitches the tracker looks for (a low man's voice to a child's)."""
PITCH_MIN_FRAMES = 10
"""Voiced frames below which an utterance has no pitch (None)."""


def median_pitch(samples: FloatArray, rate: int) -> float | None:
    """The median pitch (Hz) of the voiced frames of ``samples``: frames within 25 dB of
    the loudest whose normalised autocorrelation peaks above 0.5 at a lag in
    :data:`PITCH_RANGE_HZ`; None with fewer than :data:`PITCH_MIN_FRAMES` of them."""
    audio = np.asarray(samples, dtype=np.float64)
    if len(audio) < PITCH_FRAME or rate <= 0:
        return None
    frames = np.lib.stride_tricks.sliding_window_view(audio, PITCH_FRAME)[::rate // 100]
    frames = frames - frames.mean(axis=1, keepdims=True)
    energy = np.einsum("ij,ij->i", frames, frames)
    frames = frames[energy >= energy.max() * 10 ** -2.5]
    spectrum = np.fft.rfft(frames, 2 * PITCH_FRAME, axis=1)
    correlation = np.fft.irfft(spectrum.real ** 2 + spectrum.imag ** 2, axis=1)
    correlation = correlation[:, :PITCH_FRAME] / np.maximum(correlation[:, :1], 1e-12)
    low, high = int(rate / PITCH_RANGE_HZ[1]), int(rate / PITCH_RANGE_HZ[0])
    lags = low + np.argmax(correlation[:, low:high], axis=1)
    voiced = correlation[np.arange(len(lags)), lags] > 0.5
    if int(voiced.sum()) < PITCH_MIN_FRAMES:
        return None
    return float(np.median(rate / lags[voiced]))


SpectraByCondition = Mapping[str, Sequence[FloatArray]]
"""One person's frame statistics (:func:`frame_statistics`), one per enrolment utterance,
by condition: ``"clean"`` and the names of :func:`noise_condition`."""
VARIANCE_FLOOR = 1e-3
"""The smallest variance of a spectral model's feature (a feature that never varies in
the enrolment would otherwise rule every score)."""


def frame_statistics(frames: FloatArray) -> FloatArray | None:
    """``[count, mean (d), mean square (d)]`` of ``frames`` (frames, d): what a diagonal
    Gaussian of the frames and the mean log-likelihood of the frames under any diagonal
    Gaussian are computed from. None without frames."""
    rows = np.asarray(frames, dtype=np.float64)
    if rows.ndim != 2 or not len(rows) or not np.isfinite(rows).all():
        return None
    out: FloatArray = np.concatenate([[len(rows)], rows.mean(axis=0),
                                      np.square(rows).mean(axis=0)]).astype(np.float32)
    return out


def pooled_statistics(stats: Sequence[FloatArray]) -> FloatArray | None:
    """The statistics of all the frames of ``stats`` together (None when empty or of
    different lengths)."""
    rows = [np.asarray(s, np.float64) for s in stats if s is not None]
    if not rows or len({len(s) for s in rows}) != 1 or len(rows[0]) % 2 != 1:
        return None
    counts = np.asarray([s[0] for s in rows])
    total = float(counts.sum())
    if total <= 0:
        return None
    moments = np.sum([c * s[1:] for c, s in zip(counts, rows, strict=True)], axis=0) / total
    out: FloatArray = np.concatenate([[total], moments]).astype(np.float32)
    return out


def _mean_log_likelihood(voice: FloatArray, model: FloatArray) -> float:
    """The mean log-likelihood of ``voice``'s frames (their statistics) under the
    diagonal Gaussian of ``model``'s frames."""
    d = (len(model) - 1) // 2
    mean = np.asarray(model[1:1 + d], np.float64)
    var = np.maximum(np.asarray(model[1 + d:], np.float64) - mean ** 2, VARIANCE_FLOOR)
    first, second = np.asarray(voice[1:1 + d], np.float64), np.asarray(voice[1 + d:], np.float64)
    return float(-0.5 * np.sum(np.log(2 * np.pi * var)
                               + (second - 2 * mean * first + mean ** 2) / var))


def spectral_scores(spectrum: FloatArray,
                    spectra: Mapping[str, SpectraByCondition]) -> dict[str, float]:
    """Each person's mean frame log-likelihood ratio of the voice (``spectrum``): their
    Gaussian against the household's (everyone's frames together), in the condition
    (clean, a noise) whose household Gaussian explains the voice best. Empty when a
    person has no statistics in any condition the others have, or lengths differ."""
    names = set.intersection(*(set(by) for by in spectra.values())) if spectra else set()
    models: dict[str, dict[str, FloatArray]] = {}
    for name in sorted(names):
        person_models = {p: pooled_statistics(by[name]) for p, by in spectra.items()}
        household = pooled_statistics([s for by in spectra.values() for s in by[name]])
        if household is None or len(household) != len(spectrum) or any(
                m is None for m in person_models.values()):
            continue
        models[name] = {"": household, **{p: m for p, m in person_models.items()
                                          if m is not None}}
    if not models:
        return {}
    fits = {name: _mean_log_likelihood(spectrum, m[""]) for name, m in models.items()}
    best = max(fits, key=lambda name: (fits[name], name))
    return {p: _mean_log_likelihood(spectrum, m) - fits[best]
            for p, m in models[best].items() if p}
