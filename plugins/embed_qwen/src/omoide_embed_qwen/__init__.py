"""omoide plugin `embed_qwen`: Qwen3-Embedding run locally (transformers) as ``qwen``,
and the OpenAI-compatible embedding API (ModelScope by default) as ``qwen_api``.

Importing this module is cheap: the classes (and torch) load when registered/started.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from omoide.api import hookimpl


@hookimpl
def register_embedders(register: Callable[[Any], None]) -> None:
    from omoide_embed_qwen.api import QwenAPIEmbedder
    from omoide_embed_qwen.local import QwenEmbedder

    register(QwenEmbedder)
    register(QwenAPIEmbedder)
