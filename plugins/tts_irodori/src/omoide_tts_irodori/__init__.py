"""omoide plugin `tts_irodori`: Irodori-TTS-Server HTTP client, registered as ``irodori``.

Importing this module is cheap: httpx loads when the component starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from omoide.api import hookimpl


@hookimpl
def register_tts(register: Callable[[Any], None]) -> None:
    from omoide_tts_irodori.tts import IrodoriTTS

    register(IrodoriTTS)
