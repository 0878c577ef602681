"""Who is speaking: speaker embeddings (voiceprints) and identification against enrolled voices.

A speaker encoder turns an utterance into a unit vector in which the same voice lands
close and different voices far apart. The core owns what every encoder needs and the
model does not decide:

- **finding the voice.** The audio is cut into 30 ms frames; a frame is voiced when it
  is louder than the clip's own noise floor by ``voice_over_floor_db`` and than
  ``silence_dbfs`` (:func:`find_voice`). Long silences are dropped, short pauses kept;
  the encoder sees only that audio.
- **quality, and "unknown" with a reason** (:class:`VoiceQuality`, :class:`SpeakerReason`).
  Silence, less than ``min_voiced_s`` of voice (a 0.3 s cough), clipped audio and a clip
  whose parts do not sound like one voice (two people talking) give an embedding whose
  ``reason`` says why it must not be used to tell who spoke; such a clip is never
  identified as anyone.
- **noise**: stationary noise (a fan, hiss) is estimated from the clip's quietest frames
  and suppressed before the encoder hears it (:func:`suppress_noise`, ``denoise``), and
  an enrolment utterance is embedded again with noise added
  (:meth:`SpeakerEncoder.embed_enrolment`, ``enrol_noise_snr_db``), so a voice heard in
  noise is compared with the person's voiceprint in noise too.
- **a few sentences**: an enrolment utterance may also be embedded played a little
  slower and faster (``enrol_speeds``), its vectors the mean of these, so a voiceprint
  from three short sentences covers a little more of how the voice varies.
- **the utterance vector**: the L2-normalised mean of the encoder's partial vectors (one
  per window of the utterance), and how well those partials agree (``consistency``: the
  lowest cosine between two of them). Windows that disagree are mixed voices; or, with
  ``mixed_check`` halves, only when the utterance's two halves are closest to different
  enrolled members (one voice's windows vary with noise and sounds; two voices in turn
  split between two people).
- **identification** (:func:`identify`, pure): the closest enrolled person (scored
  against the closest of their clean and in-noise voiceprints), only when the score
  reaches the threshold and beats every other person by the margin. The household
  itself may shape the decision (:class:`HouseholdRules`): a projection fitted on the
  enrolled members' own vectors removes the directions in which one voice varies most
  (``household_projection``), and a member far from every other member is accepted
  at a lower score (``household_gap``, ``household_floor``).

A plugin implements :meth:`SpeakerEncoder._embed_partials` for 16 kHz mono audio (one
unit vector per window; an encoder without windows returns one row), plus ``model_id``
and ``dims``. Thresholds belong to an encoder's vector space, so its ``Config`` carries
them (``threshold``, ``margin``, ``min_consistency``) with defaults measured for it.
"""

from __future__ import annotations

import enum
import hashlib
import threading
from abc import abstractmethod
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Annotated, ClassVar, Literal

import numpy as np
import numpy.typing as npt
from pydantic import Field

from omoide.audio import resample
from omoide.components.base import Capabilities, Component, ComponentConfig
from omoide.components.voice_measures import (
    SpectraByCondition,
    frame_statistics,
    median_pitch,
    spectral_scores,
)
from omoide.errors import ComponentError, InvalidInput
from omoide.types import AudioClip, FloatArray, Priority

BoolArray = npt.NDArray[np.bool_]

FRAME_S = 0.03
"""Frames of the voice finder, in seconds."""
CLIP_LEVEL = 0.99
"""A sample at or above this magnitude counts as clipped."""
MIN_FLOOR_S = 0.5
"""A clip shorter than this (seconds) is too short for a noise floor of its own (its
quietest tenth would be its voice): only ``silence_dbfs`` tells voice from silence."""


class SpeakerReason(enum.StrEnum):
    """Why a voice was or was not identified. Every value but ``MATCHED`` means unknown."""

    MATCHED = "matched"
    SILENCE = "silence"
    TOO_SHORT = "too_short"
    CLIPPED = "clipped"
    MIXED_VOICES = "mixed_voices"
    NO_ONE_ENROLLED = "no_one_enrolled"
    NO_MATCH = "no_match"
    AMBIGUOUS = "ambiguous"


REASON_TEXT: dict[SpeakerReason, str] = {
    SpeakerReason.MATCHED: "the voice matches one enrolled person",
    SpeakerReason.SILENCE: "no voice in the audio",
    SpeakerReason.TOO_SHORT: "too little voice to tell who it is (a cough, a word)",
    SpeakerReason.CLIPPED: "the audio is clipped (too loud for the microphone)",
    SpeakerReason.MIXED_VOICES: "the parts of the utterance do not sound like one voice",
    SpeakerReason.NO_ONE_ENROLLED: "no voice is enrolled",
    SpeakerReason.NO_MATCH: "no enrolled voice is close enough",
    SpeakerReason.AMBIGUOUS: "two enrolled voices are about as close",
}
"""A sentence for each reason, for traces, the console and logs."""


class SpeakerConfig(ComponentConfig):
    timeout_s: float = Field(3.0, gt=0, description="Time budget of one embedding, in seconds.")
    retries: int = Field(0, ge=0, le=10, description="Extra attempts after a retryable "
                                                     "failure (a late voiceprint is no use).")
    threshold: float = Field(0.75, ge=-1, le=1, description="Cosine similarity to a person's "
                                                            "enrolled voice at or above which "
                                                            "the voice may be theirs.")
    margin: float = Field(0.05, ge=0, le=2, description="How much closer the best person must "
                                                        "be than the next one; closer calls "
                                                        "are ambiguous (unknown).")
    person_spread: float | None = Field(
        None, ge=0, le=10,
        description="Per-person thresholds from enrolment: a person enrolled with two or "
                    "more utterances is named only at or above the mean of their own "
                    "utterances' scores (each against the others) less this many standard "
                    "deviations (at least 0.02), and never below `threshold`; a voice that "
                    "varies little needs a closer match. null: `threshold` for everyone.")
    household_projection: int = Field(
        0, ge=0, le=16,
        description="A within-household projection before scoring: the household's "
                    "enrolled members' enrolment vectors (clean and in noise), each "
                    "person's centred on their own mean, give the directions in which one "
                    "voice varies most (noise, level, what was said); this many of them "
                    "are removed from every vector before the cosine (fitted on the "
                    "enrolled members alone, at identification). 0: off.")
    household_gap: float | None = Field(
        None, ge=0, le=1,
        description="Per-person thresholds from the household: a member is named at "
                    "the score of their closest other enrolled member (centroid to "
                    "centroid) plus this gap when that is under `threshold`, never under "
                    "`household_floor`; a voice far from everyone else in the household "
                    "is accepted at a lower score. null: `threshold` for everyone.")
    household_floor: float = Field(
        0.85, ge=-1, le=1, description="The lowest per-person threshold `household_gap` "
                                       "may give.")
    min_consistency: float = Field(
        -1.0, ge=-1, le=1, description="Lowest cosine between two windows' vectors before "
                                       "the clip counts as several voices (unknown); -1 "
                                       "turns the check off.")
    mixed_check: Literal["windows", "halves"] = Field(
        "windows",
        description="How a clip whose windows disagree (consistency under "
                    "`min_consistency`) is judged. windows: it is mixed voices (unknown). "
                    "halves: only when the closest enrolled member of its first or of its "
                    "second half is not the whole utterance's (one voice whose windows "
                    "vary, in noise or over different sounds, is identified as before; two "
                    "voices in turn are not).")
    spectral_weight: float = Field(
        0.0, ge=0, le=1,
        description="Weight of the spectral view in the score (encoders with frames "
                    "only): a member whose spectral model (a Gaussian of the enrolment "
                    "utterances' frame features) explains the voice worse than the "
                    "household's (every enrolled member's frames together) loses this "
                    "much cosine per nat of mean frame log-likelihood ratio. 0: off.")
    pitch_weight: float = Field(
        0.0, ge=0, le=1,
        description="Weight of the pitch check in the score: a member whose enrolment "
                    "utterances' median pitch is further than `pitch_tolerance_st` "
                    "semitones from the voice's loses this much cosine per semitone "
                    "beyond it. 0: off.")
    pitch_tolerance_st: float = Field(
        2.0, ge=0, le=24,
        description="Semitones between the voice's median pitch and a member's (the median "
                    "of their enrolment utterances') before `pitch_weight` applies.")
    min_voiced_s: float = Field(1.0, ge=0, le=30, description="Less voiced audio than this "
                                                              "is too short to identify.")
    max_clipped_fraction: float = Field(
        0.01, ge=0, le=1, description="Largest share of voiced samples at full scale before "
                                      "the clip counts as clipped (unknown).")
    silence_dbfs: float = Field(-50.0, ge=-120, le=0, description="Frames quieter than this "
                                                                  "(dBFS) are never voice.")
    voice_over_floor_db: float = Field(
        6.0, ge=0, le=60, description="How much louder than the clip's noise floor (its "
                                      "quietest tenth) a frame must be to count as voice.")
    max_pause_s: float = Field(0.2, ge=0, le=5, description="Pauses up to this long inside "
                                                            "the voice are kept; longer "
                                                            "silences are dropped.")
    max_voiced_s: float = Field(20.0, gt=0, le=600, description="Voiced audio beyond this "
                                                                "is not embedded.")
    denoise: bool = Field(True, description="Remove stationary noise (a fan, hiss) before "
                                            "embedding: its spectrum is estimated from the "
                                            "clip's quietest frames and a Wiener gain applied "
                                            "to the short-time spectrum (suppress_noise).")
    enrol_noise_snr_db: list[float] = Field(
        [20.0, 10.0], max_length=4,
        description="Each usable enrolment utterance is also embedded with noise this "
                    "many dB under its voice (seeded: the same noise every time), one "
                    "condition per value and colour; a voice is scored against the person's "
                    "clean voiceprint and each condition's, taking the closest, so a voice "
                    "heard in noise meets the person's voiceprint in noise. []: clean only.")
    enrol_noise_colours: list[Literal["white", "pink", "brown"]] = Field(
        ["white", "pink", "brown"], max_length=3,
        description="The noises of `enrol_noise_snr_db`: white (flat, a hiss), pink "
                    "(-3 dB an octave, most fans and rooms), brown (-6 dB an octave, a "
                    "rumble). A voice in noise of another tilt than any enrolled is "
                    "scored far lower (omoide bench speaker --coloured-noise).")
    enrol_speeds: list[Annotated[float, Field(ge=0.8, le=1.25)]] = Field(
        [], max_length=4,
        description="Each usable enrolment utterance is also embedded played this many "
                    "times as fast (0.95: 5 % slower; pitch and formants move with it, as "
                    "a recording played faster does), clean and in each noise condition "
                    "of `enrol_noise_snr_db`; the utterance's vector, and each condition's, "
                    "is then the mean of its own and these (unit vectors, equal weights), so "
                    "a voiceprint from a few sentences covers a little more of how the "
                    "voice varies. Costs one more enrolment embedding per speed and "
                    "condition. []: as spoken only.")


@dataclass(frozen=True)
class SpeakerCapabilities(Capabilities):
    """``windows``: the encoder returns one vector per window of the utterance, so the
    core can tell when its parts sound like different voices."""

    windows: bool = False
    frames: bool = False
    """``frames``: the encoder offers a frames view (:meth:`SpeakerEncoder._frame_features`),
    from which the core keeps each utterance's spectral statistics."""


@dataclass(frozen=True)
class VoiceQuality:
    """What the audio offered: seconds of voice (of ``duration_s``), the share of voiced
    samples that are clipped, the voice's level (dBFS, RMS of the voiced frames; -inf
    for silence) and how well the windows agree (lowest cosine to the utterance vector;
    None with a single window)."""

    duration_s: float
    voiced_s: float
    clipped_fraction: float
    level_dbfs: float
    consistency: float | None = None


@dataclass(frozen=True)
class SpeakerEmbedding:
    """A voiceprint of one utterance. ``vector`` is unit length (None when there was no
    voice to embed); ``reason`` is None when the vector may be used to identify someone,
    else why not (silence, too short, clipped, mixed voices)."""

    vector: FloatArray | None
    quality: VoiceQuality
    model_id: str
    reason: SpeakerReason | None = None
    parts: tuple[FloatArray, ...] = ()
    """Unit vectors of the utterance's first and second half (the mean of the first and
    of the last half of its windows; empty with one window): what :func:`identify`
    compares when the windows disagree (``mixed_check`` halves)."""
    pitch_hz: float | None = None
    """The median pitch of the voice's voiced frames (:func:`median_pitch`; None when too
    few frames are voiced)."""
    spectrum: FloatArray | None = None
    """The voice's frame statistics (:func:`frame_statistics`: the count, mean and mean
    square of the encoder's frame features; None when it has no frames view)."""

    @property
    def usable(self) -> bool:
        return self.vector is not None and self.reason is None


def noise_condition(snr_db: float, colour: str = "white") -> str:
    """The name of an enrolment condition: ``"white noise 20 dB"``."""
    return f"{colour} noise {snr_db:g} dB"


@dataclass(frozen=True)
class EnrolmentEmbedding:
    """An enrolment utterance's voiceprint (``clean``) and its vectors in noise, by
    condition name (:meth:`SpeakerEncoder.embed_enrolment`)."""

    clean: SpeakerEmbedding
    conditions: Mapping[str, FloatArray]
    spectra: Mapping[str, FloatArray] = field(default_factory=dict)
    """Frame statistics of the clean utterance (``"clean"``) and of each condition."""


@dataclass(frozen=True)
class Identification:
    """Who spoke: ``person`` (None: unknown), the best cosine ``score``, how far it beats
    the next person (``margin``; against 0 when only one person is enrolled) and why."""

    person: str | None
    score: float
    margin: float
    reason: SpeakerReason
    scores: Mapping[str, float] = field(default_factory=dict)
    """Every enrolled person's score (empty when nothing was scored)."""

    @property
    def explanation(self) -> str:
        return REASON_TEXT[self.reason]


@dataclass(frozen=True)
class FoundVoice:
    """:func:`find_voice`'s answer: the audio to embed (long silences dropped) and its
    quality (without ``consistency``, which needs the encoder)."""

    samples: FloatArray
    quality: VoiceQuality


def find_voice(samples: FloatArray, rate: int, config: SpeakerConfig,
               source: FloatArray | None = None) -> FoundVoice:
    """Find the voiced frames of ``samples`` (mono float32 at ``rate``); keep them and the
    pauses between them up to ``max_pause_s``; measure level and clipping on the voice.
    The samples kept are ``source``'s (the same audio, e.g. with its noise suppressed)
    when given. A clip shorter than :data:`MIN_FLOOR_S` has no noise floor of its own:
    its frames louder than ``silence_dbfs`` are its voice (too short to identify)."""
    hop = max(1, round(FRAME_S * rate))
    duration = len(samples) / rate
    source = samples if source is None else source
    if len(samples) < hop:   # shorter than a frame: one frame, zero-padded
        samples = np.pad(samples, (0, hop - len(samples)))
        source = np.pad(source, (0, hop - len(source)))
    n = len(samples) // hop
    frames = samples[:n * hop].reshape(n, hop)
    power = np.mean(np.square(frames, dtype=np.float64), axis=1)
    db = 10 * np.log10(np.maximum(power, 1e-12))
    short = len(samples) < MIN_FLOOR_S * rate
    floor = -120.0 if short else float(np.percentile(db, 10))
    voiced = db >= max(config.silence_dbfs, floor + config.voice_over_floor_db)
    voiced &= db > -119.0
    if not voiced.any():
        return FoundVoice(np.zeros(0, np.float32), VoiceQuality(duration, 0.0, 0.0,
                                                                float("-inf")))
    reach = round(config.max_pause_s / FRAME_S / 2)
    kept = _dilate(voiced, reach)
    voice = frames[voiced]
    level = 10 * np.log10(max(float(np.mean(np.square(voice, dtype=np.float64))), 1e-12))
    clipped = float(np.mean(np.abs(voice) >= CLIP_LEVEL))
    quality = VoiceQuality(duration, float(voiced.sum()) * hop / rate, clipped, level)
    kept_frames = source[:n * hop].reshape(n, hop)[kept]
    return FoundVoice(np.ascontiguousarray(kept_frames.reshape(-1)), quality)


def _dilate(mask: BoolArray, reach: int) -> BoolArray:
    """``mask`` widened by ``reach`` frames on each side."""
    if reach <= 0:
        return mask
    # "full", then the mask's own span: "same" is as long as the kernel when the mask is
    # shorter than it (a clip under 0.2 s), which indexed past the frames
    counts = np.convolve(mask.astype(np.int32), np.ones(2 * reach + 1, np.int32), "full")
    widened: BoolArray = counts[reach:reach + len(mask)] > 0
    return widened


NOISE_FFT = 512
"""Short-time spectrum of the noise suppressor: 32 ms frames at 16 kHz, half overlapping."""
NOISE_QUIET_SHARE = 0.1
"""The share of a clip's frames, the quietest, from which its noise spectrum is estimated."""
NOISE_GAIN_FLOOR = 0.1
"""The Wiener gain never goes below this (-20 dB): deeper cuts leave the speech warbling."""
NOISE_SMOOTHING = 0.98
"""Weight of the previous frame in the decision-directed estimate of each bin's SNR."""


def suppress_noise(samples: FloatArray) -> FloatArray:
    """``samples`` with their stationary noise suppressed (float32, the same length).

    The noise's power spectrum is the mean of the clip's quietest tenth of 32 ms frames
    (where there is no voice, or least of it); each frame's bins are scaled by a Wiener
    gain from a decision-directed estimate of their SNR (smooth over time, so little
    musical noise), never below -20 dB, and resynthesised by overlap-add (square-root
    Hann windows, half overlapping: without noise, the clip comes back unchanged)."""
    n_fft, hop = NOISE_FFT, NOISE_FFT // 2
    if len(samples) < n_fft:
        return np.asarray(samples, dtype=np.float32)
    window = np.sqrt(0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n_fft) / n_fft))
    padded = np.pad(np.asarray(samples, dtype=np.float64),
                    (n_fft, n_fft + (-len(samples)) % hop))
    spectrum = np.fft.rfft(np.lib.stride_tricks.sliding_window_view(padded, n_fft)[::hop]
                           * window, axis=1)
    power = spectrum.real ** 2 + spectrum.imag ** 2
    quiet = np.argsort(power.sum(axis=1))[:max(3, int(len(power) * NOISE_QUIET_SHARE))]
    snr = power / (power[quiet].mean(axis=0) + 1e-12)
    gains = np.empty_like(power)
    gain, last = np.ones(power.shape[1]), np.ones(power.shape[1])
    for t, now in enumerate(snr):
        prior = (NOISE_SMOOTHING * gain ** 2 * last
                 + (1 - NOISE_SMOOTHING) * np.maximum(now - 1, 0))
        gain = gains[t] = np.maximum(prior / (1 + prior), NOISE_GAIN_FLOOR)
        last = now
    frames = np.fft.irfft(spectrum * gains, n_fft, axis=1) * window
    out = np.zeros(len(padded))
    for t, frame in enumerate(frames):
        out[t * hop:t * hop + n_fft] += frame
    cleaned: FloatArray = out[n_fft:n_fft + len(samples)].astype(np.float32)
    return cleaned


NOISE_COLOURS = ("white", "pink", "brown")
"""Spectral tilts of stationary noise: flat (hiss), -3 dB an octave (most rooms' hum
and fans), -6 dB an octave (a rumble)."""


def coloured_noise(length: int, colour: str, rng: np.random.Generator) -> FloatArray:
    """``length`` samples of ``colour`` noise (:data:`NOISE_COLOURS`) at unit RMS."""
    white = rng.standard_normal(length)
    tilt = {"white": 0.0, "pink": 0.5, "brown": 1.0}[colour]
    if tilt and length > 1:
        spectrum = np.fft.rfft(white)
        bins = np.maximum(np.arange(len(spectrum)), 1)
        white = np.fft.irfft(spectrum / bins ** tilt, length)
    rms = float(np.sqrt(np.mean(np.square(white)))) if length else 0.0
    out: FloatArray = (white / rms if rms > 0 else white).astype(np.float32)
    return out


def with_noise(samples: FloatArray, snr_db: float, level_dbfs: float, seed: int,
               colour: str = "white") -> FloatArray:
    """``samples`` plus ``colour`` noise ``snr_db`` under a voice of ``level_dbfs``
    (seeded: the same noise for the same seed)."""
    noise = coloured_noise(len(samples), colour, np.random.default_rng(seed))
    out: FloatArray = (np.asarray(samples, np.float64)
                       + noise * 10 ** ((level_dbfs - snr_db) / 20)).astype(np.float32)
    return out


def unusable_reason(quality: VoiceQuality, config: SpeakerConfig) -> SpeakerReason | None:
    """Why a clip of this quality cannot be identified, before any model runs (None: it can)."""
    if quality.voiced_s <= 0:
        return SpeakerReason.SILENCE
    if quality.voiced_s < config.min_voiced_s:
        return SpeakerReason.TOO_SHORT
    if quality.clipped_fraction > config.max_clipped_fraction:
        return SpeakerReason.CLIPPED
    return None


def unit(vector: FloatArray) -> FloatArray:
    """``vector`` scaled to length 1 (float32); a zero vector stays zero."""
    v = np.asarray(vector, dtype=np.float64)
    norm = float(np.linalg.norm(v))
    out: FloatArray = (v / norm if norm > 0 else v).astype(np.float32)
    return out


def mean_direction(vectors: Sequence[FloatArray]) -> FloatArray:
    """The unit mean of ``vectors``, each first scaled to length 1 (equal weights)."""
    return unit(np.mean(np.stack([unit(v) for v in vectors]).astype(np.float64), axis=0))


def leave_one_out_scores(vectors: Sequence[FloatArray]) -> tuple[float, ...]:
    """Each vector's cosine to the normalised mean of the others (empty for fewer than 2)."""
    if len(vectors) < 2:
        return ()
    rows = np.stack([np.asarray(v, dtype=np.float64) for v in vectors])
    rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
    total = rows.sum(axis=0)
    scores = []
    for row in rows:
        rest = total - row
        scores.append(float(row @ rest / max(float(np.linalg.norm(rest)), 1e-12)))
    return tuple(scores)


def person_threshold(self_scores: Sequence[float], threshold: float,
                     spread: float | None) -> float:
    """The score a person's voice must reach: ``threshold``, raised to the mean of their
    enrolment utterances' own scores (:func:`leave_one_out_scores`)
    less ``spread`` standard deviations (at least 0.02) when there are two or more."""
    if spread is None or len(self_scores) < 2:
        return threshold
    scores = np.asarray(self_scores, dtype=np.float64)
    return max(threshold, float(scores.mean() - spread * max(float(scores.std()), 0.02)))


@dataclass(frozen=True)
class HouseholdRules:
    """How the household itself shapes a decision (all off by default):
    ``projection`` within-person directions removed before scoring
    (:func:`nuisance_projection`), and per-person thresholds from how close each member
    is to the others (``gap`` over the closest member's score, never under ``floor``:
    :func:`household_thresholds`)."""

    projection: int = 0
    gap: float | None = None
    floor: float = -1.0


PROJECTIONS_KEPT = 64
"""Household projections kept (the most recently used), by the vectors they were fitted on."""
_PROJECTIONS: OrderedDict[bytes, FloatArray] = OrderedDict()
_PROJECTIONS_LOCK = threading.Lock()


def nuisance_projection(people: Mapping[str, Sequence[Sequence[FloatArray]]],
                        dims: int) -> FloatArray | None:
    """The projection (a symmetric matrix) that removes the ``dims`` directions in
    which the enrolled people's own vectors vary most: each person's vectors (all their
    groups: clean and in noise) are centred on their own mean, and the leading right
    singular vectors of them all are taken out. None when ``dims`` is 0 or no one has
    two vectors. Fitted on enrolment vectors only, so nothing about the voice heard;
    kept for the same vectors (a household's turns reuse it: the fit costs 20-300 ms on
    a busy machine, the lookup a hash)."""
    if dims <= 0:
        return None
    stacks = [np.stack([np.asarray(v, dtype=np.float64) for group in groups for v in group])
              for groups in people.values() if sum(len(group) for group in groups) >= 2]
    if not stacks:
        return None
    key = hashlib.sha1(repr((dims, [s.shape for s in stacks])).encode())
    for stacked in stacks:
        key.update(np.ascontiguousarray(stacked).tobytes())
    digest = key.digest()
    with _PROJECTIONS_LOCK:
        if digest in _PROJECTIONS:
            _PROJECTIONS.move_to_end(digest)
            return _PROJECTIONS[digest]
    centred = []
    for stacked in stacks:
        rows = stacked / np.maximum(np.linalg.norm(stacked, axis=1, keepdims=True), 1e-12)
        centred.append(rows - rows.mean(axis=0))
    _, _, directions = np.linalg.svd(np.concatenate(centred), full_matrices=False)
    leading = directions[:dims]
    out: FloatArray = (np.eye(leading.shape[1]) - leading.T @ leading).astype(np.float32)
    with _PROJECTIONS_LOCK:
        _PROJECTIONS[digest] = out
        while len(_PROJECTIONS) > PROJECTIONS_KEPT:
            _PROJECTIONS.popitem(last=False)
    return out


def household_thresholds(centroids: Mapping[str, FloatArray], threshold: float,
                         gap: float | None, floor: float) -> dict[str, float]:
    """Each person's threshold from the household (unit ``centroids``): the cosine to
    their closest other member plus ``gap``, at most ``threshold`` and at least
    ``floor``; ``threshold`` for everyone when ``gap`` is None or one person is
    enrolled."""
    if gap is None or len(centroids) < 2:
        return {person: threshold for person in centroids}
    out = {}
    for person, centroid in centroids.items():
        nearest = max(float(np.dot(centroid, other))
                      for name, other in centroids.items() if name != person)
        out[person] = max(floor, min(threshold, nearest + gap))
    return out


def identify(embedding: SpeakerEmbedding, enrolled: Mapping[str, Sequence[FloatArray]],
             threshold: float, margin: float,
             thresholds: Mapping[str, float] | None = None,
             conditions: Mapping[str, Sequence[Sequence[FloatArray]]] | None = None,
             household: HouseholdRules | None = None,
             min_consistency: float | None = None,
             spectra: Mapping[str, SpectraByCondition] | None = None,
             spectral_weight: float = 0.0,
             pitches: Mapping[str, Sequence[float]] | None = None,
             pitch: tuple[float, float] = (0.0, 0.0)) -> Identification:
    """Whose voice is ``embedding``, among ``enrolled`` (person -> their enrolment vectors)?

    Each person is scored by the cosine to the normalised mean of their vectors, or, when
    ``conditions`` gives them further groups of vectors (their enrolment utterances in
    noise, one group per condition), to the closest of those groups' means. With
    ``household`` rules, every vector is first projected (:func:`nuisance_projection`)
    and each person's threshold may be lowered by how far they are from the other
    members (:func:`household_thresholds`). The best person is named only when the
    score is at least their threshold (raised by their entry of ``thresholds``:
    :func:`person_threshold`) and beats the next person by at least ``margin`` (one
    person enrolled: against 0). With ``min_consistency``, an embedding whose windows
    agree less than that and whose halves (``parts``) are not both closest to the best
    person is ``MIXED_VOICES``. With ``spectra`` (each person's frame statistics by
    condition) and a ``spectral_weight``, a person whose spectral model explains the
    voice worse than the household's loses that much score per nat
    (:func:`spectral_scores`; only when everyone has statistics); with ``pitches``
    (each person's enrolment utterances' median pitches) and ``pitch`` (weight, tolerance
    in semitones), a person whose pitch is further than the tolerance from the voice's
    loses weight per semitone beyond it. An unusable embedding
    is unknown with its own reason; nobody enrolled is ``NO_ONE_ENROLLED``.
    Raises :class:`InvalidInput` for vectors of another length or not finite."""
    if not embedding.usable or embedding.vector is None:
        return Identification(None, 0.0, 0.0, embedding.reason or SpeakerReason.SILENCE)
    rules = household or HouseholdRules()
    groups = {person: [vectors, *(conditions or {}).get(person, ())]
              for person, vectors in enrolled.items() if len(vectors)}
    if not groups:
        return Identification(None, 0.0, 0.0, SpeakerReason.NO_ONE_ENROLLED)
    query = unit(embedding.vector)
    for person, person_groups in groups.items():   # shapes checked before any projection
        for group in person_groups:
            if len(group):
                _centroid(person, group, len(query))
    projection = nuisance_projection(groups, rules.projection)
    if projection is not None:
        query = unit(query @ projection)
        groups = {person: [[np.asarray(v, np.float32) @ projection for v in group]
                           for group in person_groups] for person, person_groups in groups.items()}
    centroids = {person: [_centroid(person, group, len(query)) for group in person_groups
                          if len(group)] for person, person_groups in groups.items()}
    scores = _with_pitch(_with_spectra(_scores(query, centroids), embedding, spectra,
                                       spectral_weight), embedding, pitches, *pitch)
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    best, score = ranked[0]
    lead = score - (ranked[1][1] if len(ranked) > 1 else 0.0)
    needed = household_thresholds({p: cs[0] for p, cs in centroids.items()}, threshold,
                                  rules.gap, rules.floor)[best]
    if thresholds and best in thresholds:
        needed = max(needed, thresholds[best])
    if min_consistency is not None and _halves_disagree(embedding, best, centroids,
                                                        projection, min_consistency):
        return Identification(None, score, lead, SpeakerReason.MIXED_VOICES, scores)
    if score < needed:
        return Identification(None, score, lead, SpeakerReason.NO_MATCH, scores)
    if lead < margin:
        return Identification(None, score, lead, SpeakerReason.AMBIGUOUS, scores)
    return Identification(best, score, lead, SpeakerReason.MATCHED, scores)


def _with_pitch(scores: dict[str, float], embedding: SpeakerEmbedding,
                pitches: Mapping[str, Sequence[float]] | None, weight: float,
                tolerance: float) -> dict[str, float]:
    """``scores`` less ``weight`` per semitone that each person's median enrolment pitch
    is from the voice's beyond ``tolerance`` (unchanged for a person without pitches, or
    a voice without one)."""
    if not weight or embedding.pitch_hz is None or not pitches:
        return scores
    out = dict(scores)
    for person, own in pitches.items():
        if person in out and len(own):
            apart = abs(12 * np.log2(embedding.pitch_hz / float(np.median(own))))
            out[person] -= weight * max(0.0, float(apart) - tolerance)
    return out


def _with_spectra(scores: dict[str, float], embedding: SpeakerEmbedding,
                  spectra: Mapping[str, SpectraByCondition] | None,
                  weight: float) -> dict[str, float]:
    """``scores`` less ``weight`` times each person's spectral log-likelihood ratio when
    it is negative (the voice fits the household better than them): the spectral view
    only ever takes a person away, never adds one."""
    if not weight or embedding.spectrum is None or not spectra:
        return scores
    ratios = spectral_scores(embedding.spectrum,
                             {p: by for p, by in spectra.items() if p in scores})
    if set(ratios) != set(scores):
        return scores
    return {p: score + weight * min(0.0, ratios[p]) for p, score in scores.items()}


def _scores(query: FloatArray, centroids: Mapping[str, Sequence[FloatArray]]
            ) -> dict[str, float]:
    """Each person's cosine to ``query``: to the closest of their centroids."""
    return {person: max(float(np.dot(query, c)) for c in cs)
            for person, cs in centroids.items()}


def _halves_disagree(embedding: SpeakerEmbedding, best: str,
                     centroids: Mapping[str, Sequence[FloatArray]],
                     projection: FloatArray | None, min_consistency: float) -> bool:
    """True when ``embedding``'s windows agree less than ``min_consistency`` and one of
    its halves is closer to another person than to ``best`` (or it has no halves)."""
    consistency = embedding.quality.consistency
    if consistency is None or consistency >= min_consistency:
        return False
    if len(embedding.parts) < 2:
        return True
    for part in embedding.parts:
        vector = unit(np.asarray(part, np.float32))
        if projection is not None:
            vector = unit(vector @ projection)
        scores = _scores(vector, centroids)
        if max(scores, key=lambda person: (scores[person], person)) != best:
            return True
    return False


def _centroid(person: str, vectors: Sequence[FloatArray], dims: int) -> FloatArray:
    stacked = np.asarray(np.stack([np.asarray(v, dtype=np.float32) for v in vectors]),
                         dtype=np.float32)
    if stacked.ndim != 2 or stacked.shape[1] != dims:
        raise InvalidInput(f"speaker: {person}'s enrolled vectors have shape {stacked.shape},"
                           f" expected (n, {dims})")
    if not np.isfinite(stacked).all():
        raise InvalidInput(f"speaker: {person}'s enrolled vectors are not finite")
    rows = stacked / np.maximum(np.linalg.norm(stacked, axis=1, keepdims=True), 1e-12)
    return unit(rows.mean(axis=0))


class SpeakerEncoder(Component[SpeakerConfig]):
    """Turns an utterance into a voiceprint. ``_embed_partials`` is blocking."""

    kind: ClassVar[str] = "speaker"
    Config: ClassVar[type[SpeakerConfig]] = SpeakerConfig
    capabilities: ClassVar[SpeakerCapabilities] = SpeakerCapabilities()
    sample_rate: ClassVar[int] = 16000

    @property
    @abstractmethod
    def model_id(self) -> str:
        """Identity of the voiceprint space (vectors of two ids are not comparable)."""

    @property
    @abstractmethod
    def dims(self) -> int:
        """Length of the vectors."""

    @abstractmethod
    def _embed_partials(self, audio: FloatArray) -> FloatArray:
        """Vectors (windows, dims) of ``audio`` (16 kHz mono float32, long silences
        already dropped, at least ``min_voiced_s`` of voice); one row when the model has
        no windows."""

    def _frame_features(self, audio: FloatArray) -> FloatArray | None:
        """Optional frames view: features (frames, d) of the voiced frames of ``audio``
        (as ``_embed_partials`` gets it), e.g. cepstra and their deltas, from which the
        core keeps the utterance's statistics (:func:`frame_statistics`) for a spectral
        model of each person beside the vector (``spectral_weight``). Called on the
        same worker thread right after ``_embed_partials``. None (the default): no
        frames view; set ``capabilities.frames`` when implemented."""
        return None

    async def embed(self, audio: AudioClip) -> SpeakerEmbedding:
        """The voiceprint of one utterance, with its quality and, when it must not be
        used to identify, the reason. Raises :class:`InvalidInput` for empty or
        non-finite audio and :class:`ComponentError` when the encoder fails."""
        return await self._embedding(audio, frames=True, pitch=True)

    async def _embedding(self, audio: AudioClip, *, frames: bool, pitch: bool,
                         ) -> SpeakerEmbedding:
        """:meth:`embed`, with the frames view (``spectrum``) and the median pitch
        computed only when asked for (None otherwise); the vector, parts, quality and
        reason are the same either way."""
        samples = np.asarray(audio.samples, dtype=np.float32)
        if samples.ndim != 1 or not len(samples) or audio.sample_rate <= 0:
            raise InvalidInput(f"speaker {self.name}: expected non-empty mono audio, got "
                               f"shape {samples.shape} at {audio.sample_rate} Hz")
        if not np.isfinite(samples).all():
            raise InvalidInput(f"speaker {self.name}: the audio has non-finite samples")
        clip = resample(AudioClip(samples, audio.sample_rate), self.sample_rate)
        # the voice is found, and its level and clipping measured, on the audio as heard;
        # the encoder gets it with the noise suppressed
        found = find_voice(clip.samples, self.sample_rate, self.config,
                           suppress_noise(clip.samples) if self.config.denoise else None)
        reason = unusable_reason(found.quality, self.config)
        if reason in (SpeakerReason.SILENCE, SpeakerReason.TOO_SHORT):
            return SpeakerEmbedding(None, found.quality, self.model_id, reason)
        voice = found.samples[:int(self.config.max_voiced_s * self.sample_rate)]

        def views() -> tuple[FloatArray, FloatArray | None, float | None]:
            return (self._embed_partials(voice),
                    self._frame_features(voice) if frames else None,
                    median_pitch(voice, self.sample_rate) if pitch else None)

        async def attempt() -> tuple[FloatArray, FloatArray | None, float | None]:
            return await self.run_blocking(views, Priority.INTERACTIVE)

        out, features, pitch_hz = await self._call("embed", attempt)
        partials = self._checked(out)
        spectrum = None if features is None else frame_statistics(features)
        vector = unit(partials.mean(axis=0))
        consistency = (float(np.min(partials @ partials.T)) if len(partials) > 1 else None)
        quality = VoiceQuality(found.quality.duration_s, found.quality.voiced_s,
                               found.quality.clipped_fraction, found.quality.level_dbfs,
                               consistency)
        half = len(partials) // 2
        parts = ((unit(partials[:half].mean(axis=0)), unit(partials[-half:].mean(axis=0)))
                 if half else ())
        # halves: a low consistency is judged at identification, against the members
        if (reason is None and consistency is not None
                and consistency < self.config.min_consistency
                and (self.config.mixed_check == "windows" or not parts)):
            reason = SpeakerReason.MIXED_VOICES
        return SpeakerEmbedding(vector, quality, self.model_id, reason, parts, pitch_hz,
                                spectrum)

    async def embed_enrolment(self, audio: AudioClip) -> EnrolmentEmbedding:
        """The voiceprint of one enrolment utterance (:meth:`embed`) and, when it is
        usable, of the same utterance with noise of each ``enrol_noise_colours`` at each
        ``enrol_noise_snr_db`` under its voice (seeded by the condition, so an
        enrolment is the same every time): ``conditions`` maps a condition's name to its
        vector (one whose noisy copy found no voice has none). With ``enrol_speeds``,
        the utterance played at each speed is embedded too, clean and in each
        condition, and the clean vector and each condition's are the mean of the
        utterance's own and its faster or slower copies' (:func:`mean_direction`; a copy
        that is not usable adds nothing). The frame statistics (``spectra``), the
        pitch and the quality stay the utterance's own: the frames view is computed
        only for the utterance itself, clean and in each condition, and the pitch only
        for the clean utterance."""
        clean = await self.embed(audio)
        if not clean.usable or clean.vector is None:
            return EnrolmentEmbedding(clean, {})
        samples = np.asarray(audio.samples, dtype=np.float32)
        conditions, spectra = await self._in_noise(samples, audio.sample_rate,
                                                   clean.quality.level_dbfs, frames=True)
        if clean.spectrum is not None:
            spectra = {"clean": clean.spectrum, **spectra}
        if not self.config.enrol_speeds:
            return EnrolmentEmbedding(clean, conditions, spectra)
        vectors = [clean.vector]
        groups = {name: [vector] for name, vector in conditions.items()}
        for speed in self.config.enrol_speeds:
            # read as if recorded at speed x the rate, brought back to the rate: played
            # speed times as fast
            played = resample(AudioClip(samples, round(audio.sample_rate * speed)),
                              audio.sample_rate)
            copy = await self._embedding(played, frames=False, pitch=False)
            if not copy.usable or copy.vector is None:
                continue
            vectors.append(copy.vector)
            in_noise, _ = await self._in_noise(np.asarray(played.samples, np.float32),
                                               played.sample_rate, copy.quality.level_dbfs,
                                               frames=False)
            for name, vector in in_noise.items():
                groups.setdefault(name, []).append(vector)
        return EnrolmentEmbedding(replace(clean, vector=mean_direction(vectors)),
                                  {name: mean_direction(group) for name, group in groups.items()},
                                  spectra)

    async def _in_noise(self, samples: FloatArray, rate: int, level_dbfs: float, *,
                        frames: bool,
                        ) -> tuple[dict[str, FloatArray], dict[str, FloatArray]]:
        """``samples``' vectors and (with ``frames``; else none) frame statistics with
        noise of each ``enrol_noise_colours`` at each ``enrol_noise_snr_db`` under a
        voice of ``level_dbfs`` (seeded by the condition), by condition name. No pitch:
        an enrolment keeps only the clean utterance's."""
        conditions: dict[str, FloatArray] = {}
        spectra: dict[str, FloatArray] = {}
        for number, colour in enumerate(self.config.enrol_noise_colours):
            for snr in self.config.enrol_noise_snr_db:
                noisy = with_noise(samples, snr, level_dbfs,
                                   (number * 1_000_003 + round(snr * 1000)) % 2 ** 32, colour)
                embedding = await self._embedding(AudioClip(noisy, rate), frames=frames,
                                                  pitch=False)
                if embedding.vector is not None:
                    conditions[noise_condition(snr, colour)] = embedding.vector
                if embedding.spectrum is not None:
                    spectra[noise_condition(snr, colour)] = embedding.spectrum
        return conditions, spectra

    def _checked(self, out: FloatArray) -> FloatArray:
        partials = np.asarray(out, dtype=np.float32)
        if partials.ndim != 2 or partials.shape[1] != self.dims or not len(partials):
            raise ComponentError(f"speaker {self.name}: returned shape {partials.shape}, "
                                 f"expected (windows, {self.dims})")
        if not np.isfinite(partials).all():
            raise ComponentError(f"speaker {self.name}: returned non-finite vectors")
        norms = np.maximum(np.linalg.norm(partials, axis=1, keepdims=True), 1e-12)
        rows: FloatArray = (partials / norms).astype(np.float32)
        return rows

    def identify(self, embedding: SpeakerEmbedding,
                 enrolled: Mapping[str, Sequence[FloatArray]],
                 self_scores: Mapping[str, Sequence[float]] | None = None,
                 conditions: Mapping[str, Sequence[Sequence[FloatArray]]] | None = None,
                 spectra: Mapping[str, SpectraByCondition] | None = None,
                 pitches: Mapping[str, Sequence[float]] | None = None,
                 ) -> Identification:
        """:func:`identify` with this encoder's threshold and margin, per-person
        thresholds from ``self_scores`` (each person's enrolment utterances scored
        against the others; see ``person_spread``) and each person's enrolment
        ``conditions`` (their vectors in noise) and ``spectra`` (their frame statistics
        by condition, weighed by ``spectral_weight``) and ``pitches`` (their enrolment
        utterances' median pitches: ``pitch_weight``, ``pitch_tolerance_st``). An
        embedding of another encoder's space is refused (:class:`InvalidInput`)."""
        if embedding.model_id != self.model_id:
            raise InvalidInput(f"speaker {self.name}: a voiceprint of {embedding.model_id} "
                               f"cannot be compared in {self.model_id}")
        config = self.config
        thresholds = ({person: person_threshold(scores, config.threshold, config.person_spread)
                       for person, scores in (self_scores or {}).items()}
                      if config.person_spread is not None else None)
        return identify(embedding, enrolled, config.threshold, config.margin, thresholds,
                        conditions, self.household_rules, self.halves_below, spectra,
                        config.spectral_weight, pitches,
                        (config.pitch_weight, config.pitch_tolerance_st))

    @property
    def halves_below(self) -> float | None:
        """The consistency under which :func:`identify` compares an utterance's halves
        (``mixed_check`` halves), else None."""
        return self.config.min_consistency if self.config.mixed_check == "halves" else None

    @property
    def household_rules(self) -> HouseholdRules:
        """The configured :class:`HouseholdRules`."""
        config = self.config
        return HouseholdRules(config.household_projection, config.household_gap,
                              config.household_floor)
