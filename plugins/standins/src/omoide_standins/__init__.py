"""omoide plugin `standins`: a clearly labelled offline stand-in and a recogniser test double.

- chat ``standin``: a rule-based Japanese responder and fact extractor (instead of the
  ModelScope chat model; no chat model runs offline here);
- asr ``phrasebook``: a test double that recognises only a configured list of Japanese
  phrases, deterministically (the offline recogniser is ``asr: whisper``).

Each class says what it is in its ``stand_in`` attribute, which the server shows, so
nobody mistakes them for the real parts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from omoide.api import hookimpl


@hookimpl
def register_chat_models(register: Callable[[Any], None]) -> None:
    from omoide_standins.chat import StandinChat
    register(StandinChat)


@hookimpl
def register_asr(register: Callable[[Any], None]) -> None:
    from omoide_standins.phrasebook import PhrasebookASR
    register(PhrasebookASR)
