"""Who is speaking: the configured speaker encoder and the enrolled voiceprints.

A turn on a robot of a household is identified among the household's members who have
a voiceprint in the encoder's space. The identified member's memory is the turn's; an
unknown or ambiguous voice (or bad audio: silence, a cough, clipping) gets the
household's default person, or is a guest when the household has none. A household in
which no one is enrolled is never identified: its turns are the default person's, as
before voiceprints existed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from omoide.components.device import Household
from omoide.components.speaker import (
    Identification,
    SpeakerEmbedding,
    SpeakerEncoder,
    SpeakerReason,
)
from omoide.types import AudioClip, FloatArray
from omoide.voices.store import Voiceprint, VoiceprintStore

log = logging.getLogger("omoide.voices")


@dataclass(frozen=True)
class TurnSpeaker:
    """Whose turn it is. ``person`` is whose memory the turn uses (None: a guest);
    ``voice`` the member the voice was identified as (None: unknown); ``identification``
    the encoder's verdict (None when nothing was identified: no one enrolled, no audio,
    the encoder failed — ``note`` says which)."""

    person: str | None
    voice: str | None
    identification: Identification | None
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        ident = self.identification
        return {"person": self.person, "voice": self.voice,
                "score": round(ident.score, 4) if ident else None,
                "margin": round(ident.margin, 4) if ident else None,
                "reason": ident.reason.value if ident else None,
                "note": self.note or (ident.explanation if ident else "")}


@dataclass
class EnrolmentClips:
    """What the enrolment utterances gave (:meth:`SpeakerIdentifier.embed_enrolment`):
    one vector per usable utterance, by noise condition its vectors in noise and its
    frame statistics, its median pitch where it has one; and each refused utterance's
    index with why."""

    vectors: list[FloatArray] = field(default_factory=list)
    conditions: dict[str, list[FloatArray]] = field(default_factory=dict)
    spectra: dict[str, list[FloatArray]] = field(default_factory=dict)
    pitches: list[float] = field(default_factory=list)
    refused: list[tuple[int, SpeakerReason]] = field(default_factory=list)


@dataclass(frozen=True)
class Enrolment:
    """What an enrolment kept: the voiceprint, and each utterance refused with why."""

    voiceprint: Voiceprint | None
    used: int
    refused: tuple[tuple[int, SpeakerReason], ...]

    def to_json(self) -> dict[str, Any]:
        return {"used": self.used,
                "refused": [{"utterance": i, "reason": r.value} for i, r in self.refused],
                "voiceprint": self.voiceprint.to_json(vectors=False)
                if self.voiceprint else None}


class SpeakerIdentifier:
    """The speaker encoder with everyone's voiceprints."""

    def __init__(self, encoder: SpeakerEncoder, store: VoiceprintStore) -> None:
        self.encoder = encoder
        self.store = store

    def enrolled(self, household: Household) -> dict[str, Voiceprint]:
        """The household's members with a voiceprint in this encoder's space."""
        return self.store.enrolled(household.members, self.encoder.model_id)

    def applies(self, household: Household | None) -> bool:
        """True when a turn of ``household`` is identified (someone in it is enrolled)."""
        return household is not None and bool(self.enrolled(household))

    async def identify(self, audio: AudioClip, household: Household) -> TurnSpeaker:
        """Whose turn ``audio`` is, among ``household``'s enrolled members. Never raises:
        an encoder failure is an unknown voice (the default person or a guest)."""
        enrolled = self.enrolled(household)
        if not enrolled:
            return TurnSpeaker(household.person_for(None), None, None, "no one is enrolled")
        try:
            embedding = await self.encoder.embed(audio)
        except Exception as exc:  # noqa: BLE001 - an unknown voice, never a failed turn
            return _failed(household, exc)
        return self.identify_embedding(embedding, household)

    def identify_embedding(self, embedding: SpeakerEmbedding,
                           household: Household) -> TurnSpeaker:
        """Whose turn an utterance with this voiceprint is (as :meth:`identify`, for a
        voiceprint already made: :mod:`omoide.voices.early`). Never raises."""
        enrolled = self.enrolled(household)
        if not enrolled:
            return TurnSpeaker(household.person_for(None), None, None, "no one is enrolled")
        try:
            ident = self.encoder.identify(
                embedding, {p: v.vectors for p, v in enrolled.items()},
                {p: v.self_scores for p, v in enrolled.items()},
                {p: tuple(v.conditions.values()) for p, v in enrolled.items()},
                {p: v.spectra for p, v in enrolled.items()},
                {p: v.pitches for p, v in enrolled.items()})
        except Exception as exc:  # noqa: BLE001 - an unknown voice, never a failed turn
            return _failed(household, exc)
        return TurnSpeaker(household.person_for(ident.person), ident.person, ident)

    async def embed_enrolment(self, clips: Sequence[AudioClip]) -> EnrolmentClips:
        """Everything an enrolment keeps of ``clips`` (a few sentences each): each usable
        clip's vector, its vectors in noise (the encoder's ``enrol_noise_snr_db``), its
        frame statistics and its median pitch; the others refused with their reason (an
        empty recording: silence, never an error that loses the others). Every way of
        enrolling goes through here, so that no voiceprint lacks a view identification
        scores with."""
        gathered = EnrolmentClips()
        for i, clip in enumerate(clips):
            if not len(clip.samples):
                gathered.refused.append((i, SpeakerReason.SILENCE))
                continue
            enrolled = await self.encoder.embed_enrolment(clip)
            embedding = enrolled.clean
            if not embedding.usable or embedding.vector is None:
                gathered.refused.append((i, embedding.reason or SpeakerReason.SILENCE))
                continue
            gathered.vectors.append(embedding.vector)
            for name, vector in enrolled.conditions.items():
                gathered.conditions.setdefault(name, []).append(vector)
            for name, stats in enrolled.spectra.items():
                gathered.spectra.setdefault(name, []).append(stats)
            if embedding.pitch_hz is not None:
                gathered.pitches.append(embedding.pitch_hz)
        return gathered

    def keep(self, person: str, gathered: EnrolmentClips, *, source: str,
             replace: bool = False) -> Voiceprint:
        """Store what :meth:`embed_enrolment` gathered as ``person``'s voiceprint (added to
        it, or ``replace`` it); ``gathered`` must hold at least one vector."""
        return self.store.enrol(person, self.encoder.model_id, gathered.vectors,
                                source=source, replace=replace,
                                conditions=gathered.conditions, spectra=gathered.spectra,
                                pitches=gathered.pitches)

    async def enrol(self, person: str, clips: Sequence[AudioClip], *, source: str,
                    replace: bool = False) -> Enrolment:
        """Enrol ``person`` from ``clips`` (:meth:`embed_enrolment`). Nothing is stored
        when no clip is usable."""
        gathered = await self.embed_enrolment(clips)
        if not gathered.vectors:
            return Enrolment(None, 0, tuple(gathered.refused))
        voiceprint = self.keep(person, gathered, source=source, replace=replace)
        return Enrolment(voiceprint, len(gathered.vectors), tuple(gathered.refused))


def _failed(household: Household, exc: Exception) -> TurnSpeaker:
    log.warning("speaker identification failed: %s", exc)
    return TurnSpeaker(household.person_for(None), None, None,
                       f"identification failed ({type(exc).__name__}: {exc})")
