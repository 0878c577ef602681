"""embedder `qwen_api` against a real local server speaking the OpenAI/ModelScope
embeddings protocol, and the fallback from the local model to it."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from omoide.components.embedder_fallback import FallbackEmbedder
from omoide.config import parse_envelope
from omoide.errors import ComponentError, ConfigError, ModelNotAvailable
from omoide.testing import EmbedderContract
from omoide_embed_qwen.api import QwenAPIEmbedder, QwenAPIEmbedderConfig
from omoide_embed_qwen.local import QwenEmbedder, QwenEmbedderConfig

FULL_DIMS = 1024


@dataclass
class EmbeddingServerState:
    """What the test server received, and what it should answer next."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    script: list[tuple[int, Any] | str] = field(default_factory=list)   # consumed per request
    model_dir: Path | None = None        # when set, vectors come from this local model
    skew: float = 0.0                    # noise added to model vectors (disagreement)
    delay_s: float = 0.0


def hash_vector(text: str) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
    return (np.random.default_rng(seed).standard_normal(FULL_DIMS) * 3.0).tolist()


def model_vectors(model_dir: Path, texts: list[str], skew: float) -> list[list[float]]:
    """What a server running the same model returns: full-length, unnormalised."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir, dtype=torch.float32).eval()
    out = []
    for text in texts:
        with torch.no_grad():
            vec = model(**tok(text, return_tensors="pt")).last_hidden_state[0, -1].numpy()
        if skew:
            noise = np.random.default_rng(1).standard_normal(vec.shape) * np.linalg.norm(vec)
            vec = vec + skew * noise / np.sqrt(vec.size)
        out.append(vec.tolist())
    return out


def embeddings_app(state: EmbeddingServerState) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/embeddings")
    async def embeddings(request: Request) -> Any:
        body = await request.json()
        state.requests.append({"headers": dict(request.headers), "body": body})
        if state.delay_s:
            await asyncio.sleep(state.delay_s)
        step = state.script.pop(0) if state.script else "ok"
        if isinstance(step, tuple):
            return JSONResponse(status_code=step[0], content=step[1])
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        if step == "short":
            inputs = inputs[:-1]
        vectors = (model_vectors(state.model_dir, inputs, state.skew) if state.model_dir
                   else [hash_vector(t) for t in inputs])
        return {"object": "list", "model": body["model"],
                "data": [{"object": "embedding", "index": i, "embedding": v}
                         for i, v in reversed(list(enumerate(vectors)))],
                "usage": {"prompt_tokens": 3, "total_tokens": 3}}

    return app


@pytest.fixture
def state() -> EmbeddingServerState:
    return EmbeddingServerState()


@pytest.fixture
def base_url(state: EmbeddingServerState, serve_app: Callable[[object], str]) -> str:
    return f"{serve_app(embeddings_app(state))}/v1"


def api_config(base_url: str, **options: Any) -> QwenAPIEmbedderConfig:
    from omoide.config import EnvValue

    return QwenAPIEmbedderConfig.model_validate(
        {"base_url": base_url, "api_key": EnvValue("sk-test", "MODELSCOPE_API_KEY"),
         "retries": 0, **options})


async def started(config: QwenAPIEmbedderConfig) -> QwenAPIEmbedder:
    emb = QwenAPIEmbedder(config)
    await emb.start()
    return emb


class TestQwenAPIEmbedderContract(EmbedderContract):
    component_cls = QwenAPIEmbedder

    @pytest.fixture
    def config(self, base_url: str) -> dict[str, Any]:
        return api_config(base_url, batch_size=4).model_dump()


async def test_sends_bearer_key_float_encoding_and_the_query_instruction(
        base_url: str, state: EmbeddingServerState) -> None:
    emb = await started(api_config(base_url, task="Find memories"))
    await emb.embed(["週末の予定"], "query")
    await emb.embed(["箱根に行く"], "document")
    await emb.stop()
    query, doc = state.requests
    assert query["headers"]["authorization"] == "Bearer sk-test"
    assert query["body"]["encoding_format"] == "float"
    assert query["body"]["model"] == "Qwen/Qwen3-Embedding-0.6B"
    assert query["body"]["input"] == ["Instruct: Find memories\nQuery:週末の予定"]
    assert doc["body"]["input"] == ["箱根に行く"]
    assert "dimensions" not in query["body"]


async def test_vectors_are_cut_to_dims_normalised_and_in_input_order(
        base_url: str) -> None:
    emb = await started(api_config(base_url, dims=128))
    got = await emb.embed(["a", "b"], "document")
    await emb.stop()
    for row, text in zip(got, ["a", "b"], strict=True):
        full = np.asarray(hash_vector(text))[:128]
        np.testing.assert_allclose(row, full / np.linalg.norm(full), atol=1e-5)


async def test_dimensions_is_sent_when_asked(base_url: str, state: EmbeddingServerState) -> None:
    emb = await started(api_config(base_url, send_dimensions=True))
    await emb.embed(["a"], "document")
    await emb.stop()
    assert state.requests[0]["body"]["dimensions"] == 256


async def test_429_with_modelscope_errors_body_is_retryable_and_says_why(
        base_url: str, state: EmbeddingServerState) -> None:
    state.script = [(429, {"errors": {"message": "You have exceeded today's quota"}})]
    emb = await started(api_config(base_url))
    with pytest.raises(ComponentError) as info:
        await emb.embed(["a"], "document")
    await emb.stop()
    assert info.value.retryable and "exceeded today's quota" in str(info.value)
    assert len(state.requests) == 1     # the SDK's own retries are off


async def test_500_is_retryable(base_url: str, state: EmbeddingServerState) -> None:
    state.script = [(500, {"error": {"message": "internal"}})]
    emb = await started(api_config(base_url))
    with pytest.raises(ComponentError) as info:
        await emb.embed(["a"], "document")
    await emb.stop()
    assert info.value.retryable and "HTTP 500" in str(info.value)


async def test_a_503_then_success_is_retried_by_the_core(
        base_url: str, state: EmbeddingServerState) -> None:
    state.script = [(503, {"errors": {"message": "busy"}})]
    emb = await started(api_config(base_url, retries=1))
    vec = await emb.embed(["a"], "document")
    await emb.stop()
    assert vec.shape == (1, 256) and len(state.requests) == 2


async def test_401_is_not_retryable_and_blames_the_key(
        base_url: str, state: EmbeddingServerState) -> None:
    state.script = [(401, {"errors": {"message": "invalid token"}})]
    emb = await started(api_config(base_url, retries=3))
    with pytest.raises(ComponentError) as info:
        await emb.embed(["a"], "document")
    await emb.stop()
    assert not info.value.retryable and "API key" in str(info.value)
    assert len(state.requests) == 1


async def test_a_slow_server_times_out_retryably(
        base_url: str, state: EmbeddingServerState) -> None:
    state.delay_s = 1.0
    emb = await started(api_config(base_url, timeout_s=0.2))
    with pytest.raises(ComponentError) as info:
        await emb.embed(["a"], "document")
    await emb.stop()
    assert info.value.retryable


async def test_a_missing_vector_is_an_error(base_url: str, state: EmbeddingServerState) -> None:
    state.script = ["short"]
    emb = await started(api_config(base_url))
    with pytest.raises(ComponentError, match="1 vectors for 2 inputs"):
        await emb.embed(["a", "b"], "document")
    await emb.stop()


async def test_an_unreachable_server_is_retryable() -> None:
    emb = await started(api_config("http://127.0.0.1:9/v1"))
    with pytest.raises(ComponentError) as info:
        await emb.embed(["a"], "document")
    await emb.stop()
    assert info.value.retryable


async def test_modelscope_without_a_key_names_the_env_var() -> None:
    emb = QwenAPIEmbedder(QwenAPIEmbedderConfig())
    with pytest.raises(ModelNotAvailable, match="MODELSCOPE_API_KEY"):
        await emb.start()


def test_a_key_written_in_the_file_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"\$env"):
        QwenAPIEmbedderConfig.model_validate({"api_key": "sk-literal"})


def test_an_unset_key_variable_is_a_config_error_naming_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMOIDE_TEST_UNSET_KEY", raising=False)
    yaml_data = {"asr": {"use": "fake"}, "store": {"use": "fake"}, "chat": {"use": "fake"},
                 "tts": {"use": "fake"},
                 "embed": {"use": "qwen", "fallback": {
                     "use": "qwen_api", "api_key": {"$env": "OMOIDE_TEST_UNSET_KEY"}}}}
    with pytest.raises(ConfigError) as info:
        parse_envelope(yaml_data)
    assert "OMOIDE_TEST_UNSET_KEY" in str(info.value)
    assert "embed.fallback.api_key" in str(info.value)


# -- the fallback from the local model to the API, end to end ------------------------------
async def fallback_pair(tiny_qwen_dir: Path, base_url: str) -> FallbackEmbedder:
    local = QwenEmbedder(QwenEmbedderConfig(model=str(tiny_qwen_dir), dims=32,
                                            dtype="float32"))
    api = QwenAPIEmbedder(api_config(base_url, dims=32))
    fb = FallbackEmbedder(local, api, min_agreement=0.99, recheck_seconds=300)
    await fb.start()
    return fb


async def test_the_api_serving_the_same_model_takes_over(
        tiny_qwen_dir: Path, base_url: str, state: EmbeddingServerState) -> None:
    state.model_dir = tiny_qwen_dir
    fb = await fallback_pair(tiny_qwen_dir, base_url)
    try:
        assert fb.using_secondary
        await fb.embed(["箱根に行く"], "document")
        assert fb.last_backend == "qwen_api"
    finally:
        await fb.stop()


async def test_an_api_that_disagrees_a_little_is_not_used(
        tiny_qwen_dir: Path, base_url: str, state: EmbeddingServerState) -> None:
    state.model_dir, state.skew = tiny_qwen_dir, 0.25
    fb = await fallback_pair(tiny_qwen_dir, base_url)
    try:
        assert not fb.using_secondary
        assert fb.last_check.agreement is not None and 0.9 < fb.last_check.agreement < 0.99
        await fb.embed(["箱根に行く"], "document")
        assert fb.last_backend == "qwen"
    finally:
        await fb.stop()


async def test_when_the_api_dies_the_local_model_answers_at_once(
        tiny_qwen_dir: Path, base_url: str, state: EmbeddingServerState) -> None:
    state.model_dir = tiny_qwen_dir
    fb = await fallback_pair(tiny_qwen_dir, base_url)
    try:
        assert fb.using_secondary
        state.script = [(503, {"errors": {"message": "service unavailable"}})]
        vec = await fb.embed_query("週末の予定")
        assert fb.last_backend == "qwen" and not fb.using_secondary
        assert vec.shape == (32,)
    finally:
        await fb.stop()
