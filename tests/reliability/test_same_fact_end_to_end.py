"""The issue's dedup failures, end to end on the offline stack (multilingual-e5 vectors,
Qdrant local, the stand-in's extraction): two plans stay two plans, six friends stay six,
and a moved plan or a changed preference still replaces the old one."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

pytestmark = pytest.mark.skipif(
    any(__import__("importlib").util.find_spec(m) is None
        for m in ("omoide_store_qdrant", "omoide_standins", "omoide_embed_e5")),
    reason="needs the offline stack's plugins (store_qdrant, standins, embed_e5)")

SAID = "2026-09-27T20:{:02d}:00+09:00"   # a Sunday evening in Tokyo


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory, configs: Path) -> Iterator[TestClient]:
    from omoide.config import validate_config, wanted_components
    from omoide.plugins import build_registry
    from omoide.server.app import create_app
    from omoide.testing.auth import admin_client

    data = tmp_path_factory.mktemp("same-fact")
    raw: dict[str, Any] = yaml.safe_load((configs / "offline.yaml").read_text(encoding="utf-8"))
    raw["server"]["data_dir"] = str(data)
    raw["store"]["path"] = str(data / "qdrant")
    raw["devices"] = []
    raw["memory"]["time_budget_ms"] = 5000
    settings = validate_config(raw, source="offline.yaml")
    app = create_app(settings, build_registry(wanted_components(settings.envelope)))
    with admin_client(app) as c:
        deadline = time.monotonic() + 180
        while c.get("/healthz").json()["status"] == "starting":
            assert time.monotonic() < deadline, "the offline stack did not start"
            time.sleep(0.1)
        yield c


def say(client: TestClient, user: str, text: str, minute: int) -> None:
    r = client.post("/v1/turns", json={"user": user, "text": text, "now": SAID.format(minute)})
    assert r.status_code == 200, r.text


def extract(client: TestClient, user: str) -> dict[str, Any]:
    return client.post("/v1/memory/extract", json={"user": user}).json()  # type: ignore[no-any-return]


def current(client: TestClient, user: str) -> list[str]:
    return [m["text"] for m in client.get(f"/v1/users/{user}/memories").json()["memories"]
            if not m["superseded_by"]]


def test_a_dentist_appointment_does_not_replace_the_hakone_plan(client: TestClient) -> None:
    say(client, "plans", "来週の土曜日に友達と箱根に行くんだ", 0)
    extract(client, "plans")
    say(client, "plans", "明日は歯医者に行く予定なんだ", 5)
    report = extract(client, "plans")
    assert report["superseded"] == []
    texts = current(client, "plans")
    assert any("箱根" in t for t in texts) and any("歯医者" in t for t in texts)
    body = client.post("/v1/turns", json={"user": "plans", "text": "週末の予定覚えてる?",
                                          "now": SAID.format(30)}).json()
    assert any("箱根" in m["text"] for m in body["memories"])


def test_six_friends_in_six_cities_are_six_memories(client: TestClient) -> None:
    friends = [("佐藤", "札幌"), ("鈴木", "仙台"), ("田中", "福岡"), ("高橋", "名古屋"),
               ("伊藤", "大阪"), ("渡辺", "京都")]
    for i, (name, city) in enumerate(friends):
        say(client, "friends", f"友達の{name}さんは{city}に住んでる", i)
    report = extract(client, "friends")
    assert (len(report["stored"]), report["skipped_duplicates"]) == (6, 0)
    assert len(current(client, "friends")) == 6


def test_a_moved_plan_and_a_changed_preference_replace_what_they_change(
        client: TestClient) -> None:
    say(client, "changes", "来週の土曜日に友達と箱根に行くんだ", 0)
    say(client, "changes", "ラーメンが好きなんだ", 1)
    extract(client, "changes")
    say(client, "changes", "箱根は来週の日曜日に変更になったんだ", 10)
    say(client, "changes", "ラーメンより蕎麦派になった", 11)
    report = extract(client, "changes")
    assert len(report["superseded"]) == 2
    texts = current(client, "changes")
    assert not any("土曜日" in t for t in texts) and any("日曜日" in t for t in texts)
    assert not any(t == "あなたはラーメンが好きだ。" for t in texts)


def test_the_same_thing_said_again_in_fewer_words_is_one_memory(client: TestClient) -> None:
    say(client, "twice", "最近、仕事終わりにギターの練習をしてるんだ", 0)
    extract(client, "twice")
    say(client, "twice", "最近ギターの練習をしてるんだ", 20)
    report = extract(client, "twice")
    assert (report["stored"], report["skipped_duplicates"]) == ([], 1)
