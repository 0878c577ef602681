"""omoide plugin `chat_modelscope`: streaming chat through any OpenAI-compatible API,
ModelScope API-Inference by default, registered as ``modelscope``.

Importing this module is cheap: the SDK loads when the component starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from omoide.api import hookimpl


@hookimpl
def register_chat_models(register: Callable[[Any], None]) -> None:
    from omoide_chat_modelscope.chat import ModelScopeChat

    register(ModelScopeChat)
