"""Voiceprints and who is speaking.

- :mod:`.store` — each person's enrolled voiceprints, kept privately in the data dir
  (one 0600 file per person under ``voices/``), listed, exported and erased with them;
- :mod:`.shared_store` — the same voiceprints in the shared database (``database.url``,
  PostgreSQL: every worker recognises a voice enrolled on any); :func:`open_voiceprints`
  picks the store;
- :mod:`.identifier` — :class:`SpeakerIdentifier`: the configured speaker encoder and the
  store together: enrol a person from a few utterances, and identify a turn's voice among
  a household's members;
- :mod:`.early` — :class:`~omoide.voices.early.VoiceWhileSpoken`: a household's utterance
  embedded in parts while it is spoken, so identification adds little after its end;
- :mod:`.household_memory` — the owner id of a household's shared memories, which every
  member recalls beside their own.

Enrolment by voice (「声を覚えて」, with consent) is a conversation of the pipeline:
:mod:`omoide.pipeline.voice_enrolment`.

May import the components and the shared modules; nothing above them.
"""

from omoide.voices.identifier import Enrolment, SpeakerIdentifier, TurnSpeaker
from omoide.voices.shared_store import open_voiceprints
from omoide.voices.store import Voiceprint, VoiceprintStore

__all__ = ["Enrolment", "SpeakerIdentifier", "TurnSpeaker", "Voiceprint", "VoiceprintStore",
           "open_voiceprints"]
