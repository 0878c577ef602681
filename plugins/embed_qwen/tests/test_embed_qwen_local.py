"""embedder `qwen`: Qwen3-Embedding through transformers, checked on a tiny random model."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from omoide.errors import ModelNotAvailable
from omoide.testing import EmbedderContract, PluginPackageContract
from omoide.types import Priority
from omoide_embed_qwen.local import DEFAULT_TASK, QwenEmbedder, QwenEmbedderConfig

TEXTS = ["今日はいい天気", "hello world, a longer sentence than the others", "箱根"]


class TestQwenEmbedderContract(EmbedderContract):
    component_cls = QwenEmbedder

    @pytest.fixture
    def config(self, tiny_qwen_dir: Path) -> dict[str, Any]:
        return {"model": str(tiny_qwen_dir), "dims": 32, "dtype": "float32", "batch_size": 4}


class TestEmbedQwenPackage(PluginPackageContract):
    plugin_name = "embed_qwen"
    expected_components: ClassVar[set[tuple[str, str]] | None] = {
        ("embedder", "qwen"), ("embedder", "qwen_api")}


def reference_vectors(model_dir: Path, texts: list[str], dims: int) -> np.ndarray:
    """Plain computation, one text at a time (no padding at all): hidden state of the
    last token, first ``dims`` values, L2-normalised."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir, dtype=torch.float32).eval()
    rows = []
    for text in texts:
        ids = tok(text, return_tensors="pt")
        assert ids["input_ids"][0, -1].item() == tok.eos_token_id  # end token appended
        with torch.no_grad():
            hidden = model(**ids).last_hidden_state[0, -1, :dims].double().numpy()
        rows.append(hidden / np.linalg.norm(hidden))
    return np.stack(rows)


async def started(model_dir: Path, **options: Any) -> QwenEmbedder:
    emb = QwenEmbedder(QwenEmbedderConfig(model=str(model_dir), **options))
    await emb.start()
    return emb


async def test_documents_equal_last_token_pooling_truncated_and_normalised(
        tiny_qwen_dir: Path) -> None:
    emb = await started(tiny_qwen_dir, dims=32, dtype="float32")
    try:
        got = await emb.embed(TEXTS, "document")
    finally:
        await emb.stop()
    np.testing.assert_allclose(got, reference_vectors(tiny_qwen_dir, TEXTS, 32), atol=1e-5)


async def test_queries_get_the_instruction_and_documents_do_not(tiny_qwen_dir: Path) -> None:
    emb = await started(tiny_qwen_dir, dims=32, dtype="float32", task="Find memories")
    try:
        query = await emb.embed(["週末の予定"], "query")
    finally:
        await emb.stop()
    expected = reference_vectors(tiny_qwen_dir, ["Instruct: Find memories\nQuery:週末の予定"], 32)
    np.testing.assert_allclose(query, expected, atol=1e-5)


async def test_bfloat16_stays_close_to_float32(tiny_qwen_dir: Path) -> None:
    emb = await started(tiny_qwen_dir, dims=32, dtype="bfloat16")
    try:
        got = await emb.embed(TEXTS, "document")
    finally:
        await emb.stop()
    cosines = np.sum(got * reference_vectors(tiny_qwen_dir, TEXTS, 32), axis=1)
    assert cosines.min() > 0.97


async def test_int8_quantisation_stays_close_to_float32(tiny_qwen_dir: Path) -> None:
    emb = await started(tiny_qwen_dir, dims=32, quantize="int8")
    try:
        got = await emb.embed(TEXTS, "document")
        assert emb.model_id.endswith("+int8")   # a different space name: never mixed silently
    finally:
        await emb.stop()
    cosines = np.sum(got * reference_vectors(tiny_qwen_dir, TEXTS, 32), axis=1)
    assert cosines.min() > 0.9


async def test_model_id_is_the_same_for_a_hub_id_and_a_local_copy() -> None:
    local = QwenEmbedder(QwenEmbedderConfig(model="/models/Qwen3-Embedding-0.6B"))
    hub = QwenEmbedder(QwenEmbedderConfig(model="Qwen/Qwen3-Embedding-0.6B"))
    assert local.model_id == hub.model_id == "Qwen3-Embedding-0.6B"


async def test_missing_weights_name_the_model_and_the_download_command(tmp_path: Path) -> None:
    emb = QwenEmbedder(QwenEmbedderConfig(model="Qwen/Qwen3-Embedding-0.6B",
                                          cache_dir=str(tmp_path)))
    with pytest.raises(ModelNotAvailable) as info:
        await emb.start()
    assert "Qwen/Qwen3-Embedding-0.6B" in str(info.value)
    assert info.value.hint == "omoide download Qwen/Qwen3-Embedding-0.6B"


async def test_a_directory_without_a_model_is_refused_clearly(tmp_path: Path) -> None:
    emb = QwenEmbedder(QwenEmbedderConfig(model=str(tmp_path)))
    with pytest.raises(ModelNotAvailable, match=r"config\.json"):
        await emb.start()


async def test_dims_above_the_hidden_size_are_refused(tiny_qwen_dir: Path) -> None:
    with pytest.raises(ModelNotAvailable, match="dims=128"):
        await started(tiny_qwen_dir, dims=128)


async def test_a_query_overtakes_a_queued_batch(tiny_qwen_dir: Path) -> None:
    """With the interactive lane, a query finishes while a long batch is still running."""
    emb = await started(tiny_qwen_dir, dims=32, dtype="float32", batch_size=2)
    try:
        batch = asyncio.create_task(emb.embed([f"文{i} " * 40 for i in range(40)], "document"))
        await asyncio.sleep(0.05)
        query = await emb.embed_query("週末の予定")
        assert not batch.done()
        assert query.shape == (32,)
        await batch
    finally:
        await emb.stop()


async def test_batch_vectors_do_not_change_when_a_query_interrupts(tiny_qwen_dir: Path) -> None:
    emb = await started(tiny_qwen_dir, dims=32, dtype="float32", batch_size=8)
    texts = [f"文{i}: ラーメンが好き" for i in range(16)]
    try:
        alone = await emb.embed(texts, "document")
        batch = asyncio.create_task(emb.embed(texts, "document"))
        for _ in range(5):
            await emb.embed_query("週末の予定")
        np.testing.assert_allclose(await batch, alone, atol=1e-5)
    finally:
        await emb.stop()


async def test_without_preemption_queries_still_use_interactive_priority(
        tiny_qwen_dir: Path) -> None:
    emb = await started(tiny_qwen_dir, dims=32, dtype="float32", preempt=False)
    try:
        vec = await emb.embed(["週末"], "query", Priority.INTERACTIVE)
    finally:
        await emb.stop()
    expected = reference_vectors(tiny_qwen_dir, [f"Instruct: {DEFAULT_TASK}\nQuery:週末"], 32)
    np.testing.assert_allclose(vec, expected, atol=1e-5)


@pytest.mark.skipif(importlib.util.find_spec("sentence_transformers") is None,
                    reason="sentence-transformers is not installed here")
async def test_matches_sentence_transformers_last_token_pooling(tiny_qwen_dir: Path) -> None:
    from sentence_transformers import SentenceTransformer, models

    word = models.Transformer(str(tiny_qwen_dir), tokenizer_args={"padding_side": "left"})
    pool = models.Pooling(word.get_word_embedding_dimension(), pooling_mode="lasttoken")
    st = SentenceTransformer(modules=[word, pool])
    theirs = st.encode(TEXTS, normalize_embeddings=False)[:, :32]
    theirs = theirs / np.linalg.norm(theirs, axis=1, keepdims=True)
    emb = await started(tiny_qwen_dir, dims=32, dtype="float32")
    try:
        ours = await emb.embed(TEXTS, "document")
    finally:
        await emb.stop()
    np.testing.assert_allclose(ours, theirs, atol=1e-4)
