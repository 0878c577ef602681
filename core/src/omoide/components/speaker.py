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
- **the utterance vector**: the L2-normalised mean of the encoder's partial vectors (one
  per window of the utterance), and how well those partials agree (``consistency``: the
  lowest cosine between two of them).
- **identification** (:func:`identify`, pure): the closest enrolled person, only when the
  score reaches the threshold and beats every other person by the margin.

A plugin implements :meth:`SpeakerEncoder._embed_partials` for 16 kHz mono audio (one
unit vector per window; an encoder without windows returns one row), plus ``model_id``
and ``dims``. Thresholds belong to an encoder's vector space, so its ``Config`` carries
them (``threshold``, ``margin``, ``min_consistency``) with defaults measured for it.
"""

from __future__ import annotations

import enum
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import numpy.typing as npt
from pydantic import Field

from omoide.audio import resample
from omoide.components.base import Capabilities, Component, ComponentConfig
from omoide.errors import ComponentError, InvalidInput
from omoide.types import AudioClip, FloatArray, Priority

BoolArray = npt.NDArray[np.bool_]

FRAME_S = 0.03
"""Frames of the voice finder, in seconds."""
CLIP_LEVEL = 0.99
"""A sample at or above this magnitude counts as clipped."""


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
    min_consistency: float = Field(
        -1.0, ge=-1, le=1, description="Lowest cosine between two windows' vectors before "
                                       "the clip counts as several voices (unknown); -1 "
                                       "turns the check off.")
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


@dataclass(frozen=True)
class SpeakerCapabilities(Capabilities):
    """``windows``: the encoder returns one vector per window of the utterance, so the
    core can tell when its parts sound like different voices."""

    windows: bool = False


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

    @property
    def usable(self) -> bool:
        return self.vector is not None and self.reason is None


@dataclass(frozen=True)
class Identification:
    """Who spoke: ``person`` (None: unknown), the best cosine ``score``, how far it beats
    the next person (``margin``; against 0 when only one person is enrolled) and why."""

    person: str | None
    score: float
    margin: float
    reason: SpeakerReason

    @property
    def explanation(self) -> str:
        return REASON_TEXT[self.reason]


@dataclass(frozen=True)
class FoundVoice:
    """:func:`find_voice`'s answer: the audio to embed (long silences dropped) and its
    quality (without ``consistency``, which needs the encoder)."""

    samples: FloatArray
    quality: VoiceQuality


def find_voice(samples: FloatArray, rate: int, config: SpeakerConfig) -> FoundVoice:
    """Find the voiced frames of ``samples`` (mono float32 at ``rate``); keep them and the
    pauses between them up to ``max_pause_s``; measure level and clipping on the voice."""
    hop = max(1, round(FRAME_S * rate))
    n = len(samples) // hop
    frames = samples[:n * hop].reshape(n, hop) if n else np.zeros((0, hop), np.float32)
    power = np.mean(np.square(frames, dtype=np.float64), axis=1) if n else np.zeros(0)
    db = 10 * np.log10(np.maximum(power, 1e-12))
    floor = float(np.percentile(db, 10)) if n else -120.0
    voiced = db >= max(config.silence_dbfs, floor + config.voice_over_floor_db)
    voiced &= db > -119.0
    duration = len(samples) / rate
    if not voiced.any():
        return FoundVoice(np.zeros(0, np.float32), VoiceQuality(duration, 0.0, 0.0,
                                                                float("-inf")))
    reach = round(config.max_pause_s / FRAME_S / 2)
    kept = _dilate(voiced, reach)
    voice = frames[voiced]
    level = 10 * np.log10(max(float(np.mean(np.square(voice, dtype=np.float64))), 1e-12))
    clipped = float(np.mean(np.abs(voice) >= CLIP_LEVEL))
    quality = VoiceQuality(duration, float(voiced.sum()) * hop / rate, clipped, level)
    return FoundVoice(np.ascontiguousarray(frames[kept].reshape(-1)), quality)


def _dilate(mask: BoolArray, reach: int) -> BoolArray:
    """``mask`` widened by ``reach`` frames on each side."""
    if reach <= 0:
        return mask
    counts = np.convolve(mask.astype(np.int32), np.ones(2 * reach + 1, np.int32), "same")
    widened: BoolArray = counts > 0
    return widened


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


def identify(embedding: SpeakerEmbedding, enrolled: Mapping[str, Sequence[FloatArray]],
             threshold: float, margin: float,
             thresholds: Mapping[str, float] | None = None) -> Identification:
    """Whose voice is ``embedding``, among ``enrolled`` (person -> their enrolment vectors)?

    Each person is scored by the cosine to the normalised mean of their vectors. The best
    person is named only when the score is at least ``threshold`` (or their own, higher,
    entry of ``thresholds``: :func:`person_threshold`) and beats the next person by at
    least ``margin`` (one person enrolled: against 0). An unusable
    embedding is unknown with its own reason; nobody enrolled is ``NO_ONE_ENROLLED``.
    Raises :class:`InvalidInput` for vectors of another length or not finite."""
    if not embedding.usable or embedding.vector is None:
        return Identification(None, 0.0, 0.0, embedding.reason or SpeakerReason.SILENCE)
    query = unit(embedding.vector)
    scores = {person: float(np.dot(query, _centroid(person, vectors, len(query))))
              for person, vectors in enrolled.items() if len(vectors)}
    if not scores:
        return Identification(None, 0.0, 0.0, SpeakerReason.NO_ONE_ENROLLED)
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    best, score = ranked[0]
    lead = score - (ranked[1][1] if len(ranked) > 1 else 0.0)
    if score < max(threshold, (thresholds or {}).get(best, threshold)):
        return Identification(None, score, lead, SpeakerReason.NO_MATCH)
    if lead < margin:
        return Identification(None, score, lead, SpeakerReason.AMBIGUOUS)
    return Identification(best, score, lead, SpeakerReason.MATCHED)


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

    async def embed(self, audio: AudioClip) -> SpeakerEmbedding:
        """The voiceprint of one utterance, with its quality and, when it must not be
        used to identify, the reason. Raises :class:`InvalidInput` for empty or
        non-finite audio and :class:`ComponentError` when the encoder fails."""
        samples = np.asarray(audio.samples, dtype=np.float32)
        if samples.ndim != 1 or not len(samples) or audio.sample_rate <= 0:
            raise InvalidInput(f"speaker {self.name}: expected non-empty mono audio, got "
                               f"shape {samples.shape} at {audio.sample_rate} Hz")
        if not np.isfinite(samples).all():
            raise InvalidInput(f"speaker {self.name}: the audio has non-finite samples")
        clip = resample(AudioClip(samples, audio.sample_rate), self.sample_rate)
        found = find_voice(clip.samples, self.sample_rate, self.config)
        reason = unusable_reason(found.quality, self.config)
        if reason in (SpeakerReason.SILENCE, SpeakerReason.TOO_SHORT):
            return SpeakerEmbedding(None, found.quality, self.model_id, reason)
        voice = found.samples[:int(self.config.max_voiced_s * self.sample_rate)]

        async def attempt() -> FloatArray:
            return await self.run_blocking(lambda: self._embed_partials(voice),
                                           Priority.INTERACTIVE)

        partials = self._checked(await self._call("embed", attempt))
        vector = unit(partials.mean(axis=0))
        consistency = (float(np.min(partials @ partials.T)) if len(partials) > 1 else None)
        quality = VoiceQuality(found.quality.duration_s, found.quality.voiced_s,
                               found.quality.clipped_fraction, found.quality.level_dbfs,
                               consistency)
        if (reason is None and consistency is not None
                and consistency < self.config.min_consistency):
            reason = SpeakerReason.MIXED_VOICES
        return SpeakerEmbedding(vector, quality, self.model_id, reason)

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
                 self_scores: Mapping[str, Sequence[float]] | None = None) -> Identification:
        """:func:`identify` with this encoder's threshold and margin, and per-person
        thresholds from ``self_scores`` (each person's enrolment utterances scored
        against the others; see ``person_spread``). An embedding of another encoder's
        space is refused (:class:`InvalidInput`)."""
        if embedding.model_id != self.model_id:
            raise InvalidInput(f"speaker {self.name}: a voiceprint of {embedding.model_id} "
                               f"cannot be compared in {self.model_id}")
        config = self.config
        thresholds = {person: person_threshold(scores, config.threshold, config.person_spread)
                      for person, scores in (self_scores or {}).items()}
        return identify(embedding, enrolled, config.threshold, config.margin, thresholds)
