"""The use embedder puts Japanese paraphrases closer than unrelated sentences."""

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


async def test_a_japanese_paraphrase_scores_higher_than_an_unrelated_sentence(
        use: USEEmbedder) -> None:
    v = await use.embed(["来週の土曜日に友達と箱根に行くんだ",
                         "あなたは来週の土曜日に友達と箱根へ旅行する予定だ。",
                         "最近、仕事の後にギターを練習している。"], "document")
    paraphrase, unrelated = float(v[0] @ v[1]), float(v[0] @ v[2])
    assert paraphrase > unrelated + 0.2


async def test_a_recall_question_finds_the_matching_memory(use: USEEmbedder) -> None:
    memories = await use.embed(["あなたは来週の土曜日（2026年10月3日）に友達と箱根に行く予定だ。",
                                "あなたは駅前の新しい店のみそラーメンが好きだ。",
                                "あなたは最近仕事の後にギターを練習している。"], "document")
    query = await use.embed_query("箱根に行くのはいつだっけ")
    assert int(np.argmax(memories @ query)) == 0


async def test_queries_and_documents_share_one_embedding(use: USEEmbedder) -> None:
    q = await use.embed(["箱根に行く"], "query")
    d = await use.embed(["箱根に行く"], "document")
    np.testing.assert_allclose(q, d, atol=1e-6)


async def test_number_denoising_changes_the_model_identity() -> None:
    plain, denoised = USEEmbedder(USEConfig()), USEEmbedder(USEConfig(denoise_numbers=True))
    assert plain.model_id != denoised.model_id
    assert plain.dims == denoised.dims == 512
