"""`omoide embed`, `omoide similarity` and `omoide download` with the qwen embedders."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from fastapi import FastAPI, Request

from omoide.cli import main

OTHER_STAGES = "asr: {use: fake}\nstore: {use: fake}\nchat: {use: fake}\ntts: {use: fake}\n"


def write_config(tmp_path: Path, embed_yaml: str) -> str:
    path = tmp_path / "omoide.yaml"
    path.write_text(OTHER_STAGES + embed_yaml, encoding="utf-8")
    return str(path)


def local_yaml(model_dir: Path) -> str:
    return f"embed: {{use: qwen, model: '{model_dir}', dims: 32, dtype: float32}}\n"


def test_embed_prints_backend_model_dims_and_unit_vectors(
        tiny_qwen_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, local_yaml(tiny_qwen_dir))
    assert main(["embed", "--config", config, "箱根に行く", "ラーメン"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["backend"] == "qwen" and out["dims"] == 32
    assert out["model"] == tiny_qwen_dir.name
    vectors = np.asarray(out["vectors"])
    assert vectors.shape == (2, 32)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)


def test_embed_query_differs_from_document(
        tiny_qwen_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, local_yaml(tiny_qwen_dir))
    main(["embed", "--config", config, "週末の予定"])
    doc = json.loads(capsys.readouterr().out)["vectors"][0]
    main(["embed", "--config", config, "--query", "週末の予定"])
    query = json.loads(capsys.readouterr().out)["vectors"][0]
    assert float(np.dot(doc, query)) < 0.9999


def test_similarity_reports_the_engine_cosine_and_doc_doc(
        tiny_qwen_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, local_yaml(tiny_qwen_dir))
    assert main(["similarity", "--config", config, "--json",
                 "週末の予定覚えてる?", "あなたは来週の土曜日に箱根に行く"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["engine"] == "robust" and out["cosine"] == out["robust_query_vs_memory"]
    assert out["query_as_embedded"] == "週末の予定覚えてる"   # the mark is stripped
    assert -1.0 <= out["document_vs_document"] <= 1.0


def test_half_and_full_width_question_marks_give_one_cosine(
        tiny_qwen_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, local_yaml(tiny_qwen_dir))
    cosines = []
    for question in ["週末の予定覚えてる?", "週末の予定覚えてる？", "週末の予定覚えてる"]:
        main(["similarity", "--config", config, "--json", question, "箱根に行く"])
        cosines.append(json.loads(capsys.readouterr().out)["cosine"])
    assert len(set(cosines)) == 1


def test_missing_weights_are_a_clear_message_not_a_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, "embed: {use: qwen, model: Qwen/Qwen3-Embedding-0.6B, "
                                    f"cache_dir: '{tmp_path}'}}\n")
    assert main(["embed", "--config", config, "x"]) == 1
    err = capsys.readouterr().err
    assert "omoide download Qwen/Qwen3-Embedding-0.6B" in err and "Traceback" not in err


def test_an_unset_api_key_variable_is_named(tiny_qwen_dir: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MODELSCOPE_API_KEY", raising=False)
    config = write_config(tmp_path, local_yaml(tiny_qwen_dir).rstrip("}\n") +
                          ", fallback: {use: qwen_api, dims: 32,"
                          " api_key: {$env: MODELSCOPE_API_KEY}}}\n")
    with pytest.raises(SystemExit) as info:
        main(["embed", "--config", config, "x"])
    assert info.value.code == 2
    assert "MODELSCOPE_API_KEY" in capsys.readouterr().err


def test_embed_says_when_the_agreeing_api_served(
        tiny_qwen_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, serve_app: Callable[[object], str]) -> None:
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_qwen_dir)
    model = AutoModel.from_pretrained(tiny_qwen_dir, dtype=torch.float32).eval()
    app = FastAPI()

    @app.post("/v1/embeddings")
    async def embeddings(request: Request) -> dict[str, object]:
        body = await request.json()
        rows = []
        for i, text in enumerate(body["input"]):
            with torch.no_grad():
                vec = model(**tok(text, return_tensors="pt")).last_hidden_state[0, -1]
            rows.append({"object": "embedding", "index": i, "embedding": vec.tolist()})
        return {"object": "list", "data": rows, "model": body["model"]}

    url = serve_app(app)
    monkeypatch.setenv("MODELSCOPE_API_KEY", "ms-test")
    config = write_config(tmp_path, local_yaml(tiny_qwen_dir).rstrip("}\n") +
                          f", fallback: {{use: qwen_api, dims: 32, base_url: '{url}/v1',"
                          " api_key: {$env: MODELSCOPE_API_KEY}}}\n")
    assert main(["embed", "--config", config, "箱根"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["backend"] == "qwen_api" and out["model"] == tiny_qwen_dir.name


def test_download_without_a_reachable_hub_fails_clearly(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    assert main(["download", "Qwen/Qwen3-Embedding-0.6B", "--to", str(tmp_path / "m")]) == 1
    err = capsys.readouterr().err
    assert "cannot download Qwen/Qwen3-Embedding-0.6B" in err and "Traceback" not in err
    assert "model: /path/to/dir" in err
