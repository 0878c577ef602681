"""omoide plugin `store_qdrant`: the `qdrant` vector store (local mode, in memory, or a server).

Importing this module is cheap: qdrant-client is imported when the store starts.
"""

from __future__ import annotations

from collections.abc import Callable

from omoide.api import VectorStore, hookimpl


@hookimpl
def register_stores(register: Callable[[type[VectorStore]], None]) -> None:
    from omoide_store_qdrant.store import QdrantStore

    register(QdrantStore)
