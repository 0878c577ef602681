"""omoide plugin `asr_whisper`: offline Whisper speech recognition, registered as ``whisper``.

Importing this module is cheap: faster-whisper and CTranslate2 load when the component
starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from omoide.api import hookimpl


@hookimpl
def register_asr(register: Callable[[Any], None]) -> None:
    from omoide_asr_whisper.asr import WhisperASR

    register(WhisperASR)
