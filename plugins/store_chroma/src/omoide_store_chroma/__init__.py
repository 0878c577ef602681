"""omoide plugin `store_chroma`: the `chroma` vector store (a local directory or a Chroma server).

Importing this module is cheap: chromadb is imported when the store starts.
"""

from __future__ import annotations

from collections.abc import Callable

from omoide.api import VectorStore, hookimpl


@hookimpl
def register_stores(register: Callable[[type[VectorStore]], None]) -> None:
    from omoide_store_chroma.store import ChromaStore

    register(ChromaStore)
