"""What the e5 embedder promises beyond the contract: its prefixes, identity and threads."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest

from omoide_embed_e5.embedder import E5Config, E5Embedder


@pytest.fixture
async def e5() -> AsyncIterator[E5Embedder]:
    emb = E5Embedder(E5Config())
    await emb.start()
    try:
        yield emb
    finally:
        await emb.stop()


async def test_query_and_document_purposes_use_different_prefixes(e5: E5Embedder) -> None:
    q = await e5.embed(["箱根に行く"], "query")
    d = await e5.embed(["箱根に行く"], "document")
    assert float(q[0] @ d[0]) < 0.9999


async def test_model_id_and_dims_identify_the_space(e5: E5Embedder) -> None:
    assert e5.dims == 384
    assert "multilingual-e5-small" in e5.model_id


async def test_starting_leaves_the_process_thread_setting_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    emb = E5Embedder(E5Config(num_threads=1))
    await emb.start()
    await emb.stop()
    assert "OMP_NUM_THREADS" not in os.environ
