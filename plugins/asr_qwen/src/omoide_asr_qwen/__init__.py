"""omoide plugin `asr_qwen`: Qwen3-ASR speech recognition (qwen-asr), registered as ``qwen``.

Importing this module is cheap: qwen-asr, transformers and torch load when the
component starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from omoide.api import hookimpl


@hookimpl
def register_asr(register: Callable[[Any], None]) -> None:
    from omoide_asr_qwen.asr import QwenASR

    register(QwenASR)
