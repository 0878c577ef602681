"""The e5 embedder puts Japanese paraphrases closer than unrelated sentences."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import numpy as np
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


async def test_a_japanese_paraphrase_scores_higher_than_an_unrelated_sentence(
        e5: E5Embedder) -> None:
    v = await e5.embed(["来週の土曜日に友達と箱根に行くんだ",
                        "あなたは来週の土曜日に友達と箱根へ旅行する予定だ。",
                        "最近、仕事の後にギターを練習している。"], "document")
    paraphrase, unrelated = float(v[0] @ v[1]), float(v[0] @ v[2])
    assert paraphrase > unrelated + 0.03


async def test_a_recall_question_finds_the_matching_memory(e5: E5Embedder) -> None:
    memories = await e5.embed(["あなたは来週の土曜日（2026年10月3日）に友達と箱根に行く予定だ。",
                               "あなたは駅前の新しい店のみそラーメンが好きだ。",
                               "あなたは最近仕事の後にギターを練習している。"], "document")
    query = await e5.embed_query("箱根に行くのはいつだっけ")
    assert int(np.argmax(memories @ query)) == 0


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
