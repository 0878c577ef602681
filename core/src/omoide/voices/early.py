"""Identify a voice while the person is still speaking.

Embedding an utterance only once it has ended puts the whole embedding between the end
of speech and the reply (hundreds of milliseconds on a busy machine, where the speaker
stage waits for a core). :class:`VoiceWhileSpoken` is fed the utterance as it arrives (a
device connection feeds it beside the recognition stream) and embeds it in parts while
it is spoken: the first as soon as there are ``start_after_s`` seconds of speech, then,
each time the previous part is done, the audio that came since (at least ``step_s``
seconds of it, embedded with what came just before so that each part spans at least
``span_s`` seconds). The encoder runs them on its worker thread, never on the event
loop. At the end of the utterance (:meth:`VoiceWhileSpoken.identify`) what came after
the last part is embedded only when it holds at least ``REST_VOICED_S`` of voice (the
silence a VAD waits for before ending a turn holds none); the parts are then combined as
a whole utterance's vector is made from its windows: their unit vectors averaged,
weighted by the seconds of voice each adds, and normalised. When no part could be used
(no voice in any), or the parts' verdict is a close call (``CLOSE_CALL``), the whole
utterance is embedded at its end and decides, as without this.

A combined voiceprint keeps the checks of a whole one: too little voice in all is
``too_short``, clipping over the voice is ``clipped``, and parts that do not sound like
one voice (the lowest of the parts' own consistency and the cosines between the parts,
against ``min_consistency``) are ``mixed_voices``; with ``mixed_check`` halves, the first
and the last part are the halves that identification compares instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from omoide.components.device import Household
from omoide.components.speaker import (
    SpeakerConfig,
    SpeakerEmbedding,
    SpeakerReason,
    VoiceQuality,
    find_voice,
    unit,
)
from omoide.components.voice_measures import pooled_statistics
from omoide.types import AudioClip, FloatArray
from omoide.voices.identifier import SpeakerIdentifier, TurnSpeaker

log = logging.getLogger("omoide.voices")

START_AFTER_S = 2.0
"""Seconds of the utterance after which its first part is embedded while it goes on."""
STEP_S = 1.0
"""Least new audio (seconds) of each later part."""
SPAN_S = 2.0
"""Least audio (seconds) each part embeds: its new audio, and what came just before."""
REST_VOICED_S = 0.5
"""What came after the last part is embedded at the end of speech only with at least
this much voice (seconds)."""
CLOSE_CALL = 0.01
"""A voiceprint from parts scores about as the whole utterance's does, not exactly (each
part is found and levelled on its own): on the voices of measure_speaker_turn.py
--agreement the difference was -0.016 to +0.022, mean -0.004. A score this close to the
threshold (either side), or an ambiguous one, is decided by the whole utterance,
embedded at its end; a wider band would send most of these synthetic voices' turns
there (their matches score 0.90-0.95 against a threshold of 0.90)."""


@dataclass(frozen=True)
class EarlyUse:
    """How the end of an utterance used what was embedded while it was spoken: ``parts``
    embeddings covering its first ``early_s`` seconds, and ``rest_s`` seconds embedded
    after its end (0: none), or ``whole`` (no part was usable: the utterance was embedded
    at its end, as without this)."""

    parts: int
    early_s: float
    rest_s: float
    whole: bool
    close_call: bool = False
    """The parts' verdict was a close call (``CLOSE_CALL``): the whole utterance was
    embedded at its end and decided."""

    @property
    def note(self) -> str:
        if self.close_call:
            return ("a close call while spoken (near the threshold, or ambiguous): "
                    "embedded whole at the end of speech")
        if self.whole:
            return "embedded at the end of speech"
        spoken = f"embedded while spoken ({self.early_s:.1f} s in {self.parts} parts)"
        return spoken + (f" and after ({self.rest_s:.1f} s)" if self.rest_s else "")


@dataclass
class _Part:
    """One embedding: the utterance's new samples ``[new_from, new_to)``, embedded with
    what came just before (the part spans at least ``SPAN_S``)."""

    new_from: int
    new_to: int
    task: asyncio.Task[SpeakerEmbedding]


class VoiceWhileSpoken:
    """One household utterance's voice, embedded while it is spoken (see the module).

    :meth:`feed` is called with the audio as it arrives, from the utterance's first
    sample on (the same first sample as the audio later handed to :meth:`identify`);
    :meth:`cancel` when the utterance is given up."""

    def __init__(self, identifier: SpeakerIdentifier, household: Household, sample_rate: int,
                 *, start_after_s: float = START_AFTER_S, step_s: float = STEP_S,
                 span_s: float = SPAN_S) -> None:
        self.identifier = identifier
        self.household = household
        self.sample_rate = sample_rate
        self._first = max(1, round(start_after_s * sample_rate))
        self._step = max(1, round(step_s * sample_rate))
        self._span = max(1, round(span_s * sample_rate))
        self._chunks: list[FloatArray] = []
        self._fed = 0
        self._parts: list[_Part] = []
        self._closed = False
        self.used: EarlyUse | None = None
        """How :meth:`identify` used the parts (None until it ran)."""

    @property
    def started(self) -> bool:
        """True once a part is being (or was) embedded."""
        return bool(self._parts)

    def feed(self, samples: FloatArray) -> None:
        """Audio heard just now; a part's embedding starts when enough has come."""
        if self._closed or not len(samples):
            return
        self._chunks.append(np.asarray(samples, dtype=np.float32))
        self._fed += len(samples)
        covered = self._parts[-1].new_to if self._parts else 0
        if self._fed - covered < (self._step if self._parts else self._first):
            return
        if self._parts and not self._parts[-1].task.done():
            return   # one at a time: on a busy machine the next part covers more
        self._parts.append(self._embed_part(covered, self._fed))

    def _embed_part(self, new_from: int, new_to: int,
                    audio: FloatArray | None = None) -> _Part:
        if audio is None:
            audio = self._so_far()
        clip = AudioClip(audio[max(0, new_to - self._span):new_to], self.sample_rate)
        return _Part(new_from, new_to,
                     asyncio.create_task(self.identifier.encoder.embed(clip)))

    def _so_far(self) -> FloatArray:
        if len(self._chunks) > 1:
            self._chunks = [np.concatenate(self._chunks)]
        return self._chunks[0] if self._chunks else np.zeros(0, np.float32)

    def cancel(self) -> None:
        """The utterance was given up (or answered): stop what is still embedding."""
        self._closed = True
        self._chunks = []
        for part in self._parts:
            if not part.task.done():
                part.task.cancel()

    async def aclose(self) -> None:
        """Cancel, and wait for the parts to stop."""
        self.cancel()
        for part in self._parts:
            with contextlib.suppress(BaseException):
                await part.task

    async def identify(self, audio: AudioClip) -> TurnSpeaker:
        """Whose turn the utterance ``audio`` is (as :meth:`SpeakerIdentifier.identify`,
        never raising), from what was embedded while it was spoken."""
        identifier, household = self.identifier, self.household
        try:
            embedding = await self._embedding(audio)
        except Exception as exc:  # noqa: BLE001 - the whole utterance is embedded instead
            log.warning("speaker: the parts embedded while spoken cannot be used: %s", exc)
            embedding = None
        self._closed = True
        if embedding is None:
            early_s = self._parts[-1].new_to / self.sample_rate if self._parts else 0.0
            self.used = EarlyUse(len(self._parts), early_s, 0.0, True)
            return await identifier.identify(audio, household)
        found = identifier.identify_embedding(embedding, household)
        if not _close_call(found, identifier.encoder.config):
            return found
        if self.used is not None:   # the parts may decide otherwise than the whole would
            self.used = replace(self.used, whole=True, close_call=True)
        return await identifier.identify(audio, household)

    async def _embedding(self, audio: AudioClip) -> SpeakerEmbedding | None:
        """The utterance's voiceprint from its parts (and the rest's), or None when no
        part is usable or ``audio`` is not at this rate."""
        if not self._parts or audio.sample_rate != self.sample_rate:
            return None
        samples = np.asarray(audio.samples, dtype=np.float32)
        covered = self._parts[-1].new_to
        rest = samples[covered:]
        config = self.identifier.encoder.config
        rest_s = 0.0
        if len(rest) >= REST_VOICED_S * self.sample_rate and find_voice(
                rest, self.sample_rate, config).quality.voiced_s >= REST_VOICED_S:
            rest_s = len(rest) / self.sample_rate
            self._parts.append(self._embed_part(covered, len(samples), samples))
        weighted = []
        for part in self._parts:
            embedding = await _finished(part.task)
            if embedding is not None and embedding.vector is not None:
                seconds = (min(part.new_to, len(samples)) - part.new_from) / self.sample_rate
                weighted.append((embedding, max(seconds, 0.0)))
        if not weighted:
            return None
        self.used = EarlyUse(len(self._parts) - (1 if rest_s else 0),
                             covered / self.sample_rate, rest_s, False)
        return combine(weighted, config)


async def _finished(task: asyncio.Task[SpeakerEmbedding]) -> SpeakerEmbedding | None:
    """A part's embedding, or None when it failed or was cancelled."""
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        if task.cancelled():
            return None
        raise
    except Exception as exc:  # noqa: BLE001 - the other parts still tell
        log.warning("speaker: embedding part of an utterance failed: %s", exc)
        return None


def _close_call(found: TurnSpeaker, config: SpeakerConfig) -> bool:
    """True when the whole utterance could well decide otherwise than the parts did: a
    score within ``CLOSE_CALL`` of the threshold (either side), or two people about as
    close (ambiguous)."""
    ident = found.identification
    if ident is None:
        return False
    if ident.reason in (SpeakerReason.MATCHED, SpeakerReason.NO_MATCH):
        return abs(ident.score - config.threshold) < CLOSE_CALL
    return ident.reason is SpeakerReason.AMBIGUOUS


def combine(parts: Sequence[tuple[SpeakerEmbedding, float]],
            config: SpeakerConfig) -> SpeakerEmbedding:
    """One voiceprint of consecutive parts of an utterance, each given with the seconds
    of the utterance it adds: their unit vectors averaged, each weighted by the voice it
    adds (those seconds times its share of voice), and normalised. The quality adds up
    the voice, weighs level and clipping by it, and takes as consistency the lowest of
    the parts' own and the cosines between the parts; the reason is what a whole
    utterance of that quality would get (``too_short``, ``clipped``, ``mixed_voices``)."""
    vectors = [unit(e.vector) for e, _ in parts if e.vector is not None]
    voice = np.asarray([seconds * e.quality.voiced_s / max(e.quality.duration_s, 1e-6)
                        for e, seconds in parts], dtype=np.float64)
    weights = np.maximum(voice, 1e-6)
    vector = unit(np.sum([w * v for w, v in zip(weights, vectors, strict=True)], axis=0))
    rows = np.stack(vectors)
    between = rows @ rows.T
    own = [e.quality.consistency for e, _ in parts if e.quality.consistency is not None]
    consistency = float(min([*own, float(between.min())]))
    power = np.asarray([10 ** (e.quality.level_dbfs / 10) for e, _ in parts])
    clipped = float(np.average([e.quality.clipped_fraction for e, _ in parts],
                               weights=weights))
    quality = VoiceQuality(sum(seconds for _, seconds in parts), float(voice.sum()), clipped,
                           float(10 * np.log10(max(float(np.average(power, weights=weights)),
                                                   1e-12))), consistency)
    reason = None
    if quality.voiced_s < config.min_voiced_s:
        reason = SpeakerReason.TOO_SHORT
    elif clipped > config.max_clipped_fraction:
        reason = SpeakerReason.CLIPPED
    elif consistency < config.min_consistency and config.mixed_check == "windows":
        reason = SpeakerReason.MIXED_VOICES
    # halves: the first and the last part, judged against the members at identification
    halves = (vectors[0], vectors[-1]) if len(vectors) > 1 else ()
    pitches = [e.pitch_hz for e, _ in parts if e.pitch_hz is not None]
    spectra = [e.spectrum for e, _ in parts if e.spectrum is not None]
    return SpeakerEmbedding(vector, quality, parts[0][0].model_id, reason, halves,
                            float(np.median(pitches)) if pitches else None,
                            pooled_statistics(spectra) if len(spectra) == len(parts)
                            else None)
