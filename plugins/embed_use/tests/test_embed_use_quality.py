"""What the use embedder promises beyond the contract: one embedding for both purposes,
and an identity that follows number denoising."""

from __future__ import annotations

from collections.abc import AsyncIterator

import numpy as np
import pytest

from omoide_embed_use.embedder import USEConfig, USEEmbedder


@pytest.fixture
async def use() -> AsyncIterator[USEEmbedder]:
    emb = USEEmbedder(USEConfig(num_threads=2))
    await emb.start()
    try:
        yield emb
    finally:
        await emb.stop()


async def test_queries_and_documents_share_one_embedding(use: USEEmbedder) -> None:
    q = await use.embed(["箱根に行く"], "query")
    d = await use.embed(["箱根に行く"], "document")
    np.testing.assert_allclose(q, d, atol=1e-6)


async def test_number_denoising_changes_the_model_identity() -> None:
    plain, denoised = USEEmbedder(USEConfig()), USEEmbedder(USEConfig(denoise_numbers=True))
    assert plain.model_id != denoised.model_id
    assert plain.dims == denoised.dims == 512
