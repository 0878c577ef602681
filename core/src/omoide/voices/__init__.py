"""Voiceprints and who is speaking.

- :mod:`.store` — each person's enrolled voiceprints, kept privately in the data dir
  (one 0600 file per person under ``voices/``), listed, exported and erased with them;
- :mod:`.identifier` — :class:`SpeakerIdentifier`: the configured speaker encoder and the
  store together: enrol a person from a few utterances, and identify a turn's voice among
  a household's members.

May import the components and the shared modules; nothing above them.
"""

from omoide.voices.identifier import Enrolment, SpeakerIdentifier, TurnSpeaker
from omoide.voices.store import Voiceprint, VoiceprintStore

__all__ = ["Enrolment", "SpeakerIdentifier", "TurnSpeaker", "Voiceprint", "VoiceprintStore"]
