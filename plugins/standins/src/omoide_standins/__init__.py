"""omoide plugin `standins`: clearly labelled offline stand-ins where no offline model exists.

- chat ``standin``: a rule-based Japanese responder and fact extractor (instead of the
  ModelScope chat model);
- asr ``phrasebook``: recognises only a configured list of Japanese phrases (instead of
  Qwen3-ASR; no PyPI package ships a Japanese ASR model).

Each class says what it stands in for in its ``stand_in`` attribute, which the server
shows, so nobody mistakes them for the real parts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from omoide.hookspecs import hookimpl


@hookimpl
def register_chat_models(register: Callable[[Any], None]) -> None:
    from omoide_standins.chat import StandinChat
    register(StandinChat)


@hookimpl
def register_asr(register: Callable[[Any], None]) -> None:
    from omoide_standins.phrasebook import PhrasebookASR
    register(PhrasebookASR)
