"""Reliability (issue 27, point 7): control characters never enter memory text.

One rule (:mod:`omoide.text_controls`) at every entry: what a caller sends (an import,
the profile and memory routes, a typed turn) with a NUL, an ESC or another control or
format character is refused with a 4xx that names the character; what a recogniser or
a model produced has them removed, since nobody could fix it.

The server is :func:`omoide.server.app.create_app` under a real uvicorn on 127.0.0.1 with
the test doubles (an ASR whose transcript carries an ANSI escape, a fake chat and TTS, a
hashing embedder, an in-memory store), the real memory engine and journal.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import yaml

from omoide.audio import write_wav
from omoide.components.extractor import Fact, checked_facts
from omoide.config import parse_envelope, validate_components, wanted_components
from omoide.plugins import build_registry
from omoide.server.app import create_app
from omoide.testing.auth import admin_headers
from omoide.testing.http import LocalServer
from omoide.types import AudioClip

CONFIG = """
memory: {retrieve: {use: baseline, threshold: -1}, extraction: {on_disconnect: false}}
vad: {use: fake}
asr: {use: fake, text: "\\e[31m猫が\\0好き\\u202eです"}
embed: {use: fake}
store: {use: fake}
chat: {use: fake, reply: "[happy] いいね。"}
tts: {use: fake}
"""
NDJSON = {"content-type": "application/x-ndjson"}
CONTROLS = ["\x00", "\x1b[31m", "\x7f", "\x85", "\u202e", "\u200b", "\ufeff", "\x0b",
            "\u2028"]


@dataclass
class Server:
    url: str
    admin: dict[str, str]
    data_dir: Path

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        headers = {**self.admin, **kwargs.pop("headers", {})}
        return httpx.post(self.url + path, headers=headers, timeout=30, **kwargs)

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.get(self.url + path, headers=self.admin, timeout=30, **kwargs)

    def memories(self, user: str) -> list[dict[str, Any]]:
        return list(self.get(f"/v1/users/{user}/memories").json()["memories"])

    def journaled(self, user: str) -> list[str]:
        db = sqlite3.connect(self.data_dir / "journal.sqlite3")
        try:
            return [str(r[0]) for r in db.execute(
                "SELECT user_text FROM exchanges WHERE user=?", (user,))]
        finally:
            db.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data_dir = tmp_path_factory.mktemp("controls")
    data = yaml.safe_load(CONFIG) | {
        "server": {"data_dir": str(data_dir), "limits": {"new_users_per_source": 100}}}
    envelope = parse_envelope(data)
    settings = validate_components(envelope, build_registry(wanted_components(envelope)))
    app = create_app(settings, build_registry(wanted_components(envelope)))
    with LocalServer(app, lifespan="on") as url:
        s = Server(url, admin_headers(app), data_dir)
        while s.get("/healthz").json()["status"] == "starting":
            pass
        yield s


def user_for(control: str) -> str:
    return f"u{ord(control[0]):x}"


@pytest.mark.parametrize("control", CONTROLS)
def test_an_import_with_a_control_character_is_refused_by_line(server: Server,
                                                               control: str) -> None:
    user = user_for(control)
    body = (json.dumps({"text": "あなたは猫を飼っている。"}, ensure_ascii=False) + "\n"
            + json.dumps({"text": f"あなたは{control}犬も飼っている。"}) + "\n")
    response = server.post(f"/v1/users/{user}/memories/import", content=body,
                           headers=NDJSON)
    assert response.status_code == 422, response.text
    [problem] = response.json()["problems"]
    assert problem["line"] == 2 and "control characters" in problem["message"]
    assert f"U+{ord(control[0]):04X}" in problem["message"]
    assert server.memories(user) == []


def test_a_control_character_in_an_entity_is_refused_too(server: Server) -> None:
    body = json.dumps({"text": "あなたは猫を飼っている。", "entities": ["む\u202eぎ"]})
    response = server.post("/v1/users/entity/memories/import", content=body, headers=NDJSON)
    assert response.status_code == 422 and "control characters" in response.text


@pytest.mark.parametrize("control", CONTROLS)
def test_a_profile_fact_with_a_control_character_is_refused(server: Server,
                                                            control: str) -> None:
    user = user_for(control)
    response = server.post(f"/v1/users/{user}/profile",
                           json={"text": f"あなたは{control}そばアレルギーがある。"})
    assert 400 <= response.status_code < 500, response.text
    assert "control characters" in response.text
    assert server.memories(user) == []


@pytest.mark.parametrize("control", CONTROLS)
def test_a_typed_turn_with_a_control_character_is_refused_and_not_journaled(
        server: Server, control: str) -> None:
    user = user_for(control)
    response = server.post("/v1/turns", json={"user": user, "text": f"猫が{control}好き"})
    assert response.status_code == 422, response.text
    assert response.json()["problems"][0]["path"] == "body.text"
    assert "control characters" in response.text
    assert server.journaled(user) == []


def test_a_typed_turn_may_still_span_lines(server: Server) -> None:
    response = server.post("/v1/turns", json={"user": "lines", "text": "猫が好き。\n\t犬も好き。"})
    assert response.status_code == 200, response.text
    assert server.journaled("lines") == ["猫が好き。\n\t犬も好き。"]


def test_a_search_with_a_control_character_is_refused(server: Server) -> None:
    response = server.get("/v1/users/alice/memories", params={"q": "猫\x1b[2J"})
    assert response.status_code == 422 and "control characters" in response.text


def test_a_transcript_with_control_characters_is_journaled_without_them(
        server: Server) -> None:
    wav = write_wav(AudioClip(np.full(16000, 0.1, dtype=np.float32), 16000))
    response = server.post("/v1/turns/audio", params={"user": "heard", "speak": "false"},
                           content=wav, headers={"content-type": "audio/wav"})
    assert response.status_code == 200, response.text
    assert server.journaled("heard") == ["[31m猫が好きです"]


def test_facts_from_a_model_lose_their_control_characters() -> None:
    [fact] = checked_facts([Fact("あなたは\x1b[31m猫\x00が\u202e好き\u2028です。", "likes",
                                 ("む\x00ぎ", "\x1b"), "犬\x07が好き")])
    assert fact == Fact("あなたは[31m猫が好き です。", "likes", ("むぎ",), "犬が好き")


def test_text_a_device_recognised_is_journaled_without_control_characters() -> None:
    """A robot's own recogniser (StackChan's ``listen: detect`` text) reaches the turn as
    text, not through HTTP validation: the pipeline removes what the rule forbids."""
    from omoide.config import AssistantSettings
    from omoide.pipeline import sections
    from omoide.pipeline.assistant import Assistant
    from omoide.pipeline.turn import TurnRequest
    from omoide.plugins import build_registry
    from omoide.testing.doubles import FakeASR, FakeChat, FakeTTS, MemoryServiceDouble

    class Events:
        async def on_event(self, event: object) -> None:
            pass

    registry = build_registry([("asr", "fake"), ("memory_engine", "robust")])
    registry.pm.register(sections)
    memory = MemoryServiceDouble()
    assistant = Assistant(settings=AssistantSettings(), asr=FakeASR(FakeASR.Config()),
                          chat=FakeChat(FakeChat.Config()), tts=FakeTTS(FakeTTS.Config()),
                          memory=memory, hooks=registry.pm)
    result = asyncio.run(assistant.run_turn(
        TurnRequest(user="robot", text="ねえ\x1b[31m猫\x00が好き\u202e", speak=False),
        Events()))
    assert result.transcript == "ねえ[31m猫が好き"
    assert [e.user_text for e in memory.journal] == ["ねえ[31m猫が好き"]
