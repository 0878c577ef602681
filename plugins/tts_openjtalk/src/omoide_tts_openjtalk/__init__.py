"""omoide plugin `tts_openjtalk`: the `openjtalk` offline Japanese TTS (pyopenjtalk-plus).

Importing this module is cheap: pyopenjtalk (which loads onnxruntime) is imported when
the TTS starts.
"""

from __future__ import annotations

from collections.abc import Callable

from omoide.api import TTS, hookimpl


@hookimpl
def register_tts(register: Callable[[type[TTS]], None]) -> None:
    from omoide_tts_openjtalk.tts import OpenJTalkTTS

    register(OpenJTalkTTS)
