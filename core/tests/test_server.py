"""The HTTP server: health, text and audio turns, errors as JSON, fail-fast start."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from omoide.audio import read_wav, write_wav
from omoide.config import load_yaml, validate_config
from omoide.plugins import PluginRegistry
from omoide.server.app import create_app
from omoide.testing.auth import admin_client
from omoide.testing.doubles import MemoryServiceDouble
from omoide.types import AudioClip

CONFIG = """
server: {{data_dir: {data}}}
vad: {{use: fake}}
asr: {{use: fake, text: 今日は何の日？}}
embed: {{use: fake}}
store: {{use: fake}}
chat: {{use: fake, reply: "[happy] 今日はいい日だよ。散歩しよう。"}}
tts: {{use: fake}}
"""


def _settings(tmp_path: Path, registry: PluginRegistry, extra: str = "") -> Any:
    text = CONFIG.format(data=tmp_path) + extra
    return validate_config(load_yaml(text), registry=registry, environ={})


def _wait_ready(client: TestClient, timeout: float = 10) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = client.get("/healthz").json()
        if body["status"] != "starting":
            return body  # type: ignore[no-any-return]
        time.sleep(0.02)
    raise AssertionError("server did not become ready")


@pytest.fixture
def memory() -> MemoryServiceDouble:
    return MemoryServiceDouble()


@pytest.fixture
def client(tmp_path: Path, registry: PluginRegistry,
           memory: MemoryServiceDouble) -> Iterator[TestClient]:
    app = create_app(_settings(tmp_path, registry), registry, memory=memory)
    with admin_client(app) as c:
        _wait_ready(c)
        yield c


def test_healthz_lists_every_component_as_ready(client: TestClient) -> None:
    body = client.get("/healthz").json()
    assert body["status"] == "ready"
    assert {"asr", "embed", "store", "chat", "tts", "vad", "memory"} <= set(body["components"])
    assert all(c["state"] == "ready" for c in body["components"].values())
    assert body["components"]["asr"]["stand_in"]  # the doubles say what they are


def test_a_text_turn_returns_reply_emotion_memories_and_trace(
        client: TestClient, memory: MemoryServiceDouble) -> None:
    response = client.post("/v1/turns", json={"user": "u1", "text": "やあ"})
    assert response.status_code == 200
    body = response.json()
    assert body["reply"] == "今日はいい日だよ。散歩しよう。"
    assert body["emotion"] == "happy"
    assert body["memories"] == []
    assert {"end_of_speech", "retrieve", "chat_first_token", "done"} <= set(
        body["trace"]["stages"])
    assert [e.user_text for e in memory.journal] == ["やあ"]


def test_traces_are_kept_for_the_http_api_and_written_as_json_lines(
        client: TestClient, tmp_path: Path) -> None:
    client.post("/v1/turns", json={"user": "u1", "text": "やあ"})
    traces = client.get("/v1/traces", params={"user": "u1"}).json()["traces"]
    assert len(traces) == 1 and traces[0]["user"] == "u1"
    lines = (tmp_path / "traces.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 and '"chat_first_token"' in lines[0]


def test_an_audio_turn_takes_wav_and_returns_text_and_audio(client: TestClient) -> None:
    wav = write_wav(AudioClip(np.full(24000, 0.1, dtype=np.float32), 48000))
    response = client.post("/v1/turns/audio", params={"user": "u1"}, content=wav,
                           headers={"content-type": "audio/wav"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["transcript"] == "今日は何の日?"  # NFKC-normalised by the ASR template
    audio = read_wav(base64.b64decode(body["audio_wav_base64"]))
    assert audio.duration_s > 0.5


@pytest.mark.parametrize(("payload", "status"), [
    ({"user": "u1"}, 422),
    ({"user": "", "text": "x"}, 422),
    ({"user": "u1", "text": "x", "unexpected": 1}, 422),
])
def test_malformed_text_turns_get_a_json_4xx(client: TestClient, payload: dict[str, Any],
                                             status: int) -> None:
    response = client.post("/v1/turns", json=payload)
    assert response.status_code == status
    assert "error" in response.json()


def test_invalid_json_and_corrupt_wav_are_4xx_and_the_server_keeps_serving(
        client: TestClient) -> None:
    bad_json = client.post("/v1/turns", content=b"{not json",
                           headers={"content-type": "application/json"})
    assert bad_json.status_code == 422
    corrupt = client.post("/v1/turns/audio", params={"user": "u1"}, content=b"RIFF....garbage",
                          headers={"content-type": "audio/wav"})
    assert corrupt.status_code == 400 and "wav" in corrupt.json()["error"]
    assert client.post("/v1/turns", json={"user": "u1", "text": "まだいる？"}).status_code == 200


def test_a_component_that_fails_to_start_is_reported_and_fatal(
        tmp_path: Path, registry: PluginRegistry) -> None:
    from omoide.testing.doubles import FakeTTS

    class BrokenTTS(FakeTTS):
        async def _start(self) -> None:
            raise RuntimeError("no voice files")

    settings = _settings(tmp_path, registry)
    fatal: list[str] = []
    app = create_app(settings, registry, memory=MemoryServiceDouble(), on_fatal=fatal.append)
    server = app.state.omoide
    server.runtime._by_path["tts"] = BrokenTTS(FakeTTS.Config())
    server.runtime.tts = server.runtime._by_path["tts"]
    with admin_client(app) as client:
        body = _wait_ready(client)
        assert body["status"] == "failed"
        assert "no voice files" in body["components"]["tts"]["reason"]
        assert client.post("/v1/turns", json={"user": "u", "text": "x"}).status_code == 503
    assert fatal and "no voice files" in fatal[0]


def test_the_web_page_is_served(client: TestClient) -> None:
    response = client.get("/")
    assert response.status_code == 200
    assert "text/html" in response.headers["content-type"]
    assert "/v1/traces" in response.text and "/healthz" in response.text
    assert "/v1/session" in response.text   # it signs in with a token
