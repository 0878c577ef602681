"""Moments in a running server (the doubles and the real memory engine): a person's
next conversation brings a moment their memories call for after its first sentence,
the console's feed shows it with its reasons, and the ledger in the data folder keeps
it said."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import yaml
from fastapi.testclient import TestClient

from omoide.config import validate_config
from omoide.moments.ledger import MomentLedger
from omoide.plugins import build_registry
from omoide.server.app import create_app
from omoide.testing.auth import BASE_URL, admin_headers

CONFIG = """
asr: {use: fake, text: ただいま}
embed: {use: fake}
store: {use: fake}
chat: {use: standin}
tts: {use: fake}
moments: {quiet_hours: "00:00-00:00", text_turns: true}
"""


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    registry = build_registry([("asr", "fake"), ("chat", "standin"),
                               ("memory_engine", "robust")])
    data = yaml.safe_load(CONFIG)
    data["server"] = {"data_dir": str(tmp_path / "data")}
    app = create_app(validate_config(data, registry=registry, environ={}), registry)
    with TestClient(app, base_url=BASE_URL) as c:
        deadline = time.monotonic() + 20
        while c.get("/healthz").json()["status"] == "starting":
            assert time.monotonic() < deadline, "server did not become ready"
            time.sleep(0.02)
        yield c


def _import_trip(c: TestClient, headers: dict[str, str]) -> None:
    """A trip that ended yesterday (Tokyo time): its follow-up is due all week (the
    stand-in chat model writes the line)."""
    yesterday = datetime.now(ZoneInfo("Asia/Tokyo")).date() - timedelta(days=1)
    said = f"あなたは{yesterday.month}月{yesterday.day}日に箱根へ旅行する予定だ。"
    item = {"id": "trip", "text": said,
            "kind": "plan", "event_dates": [yesterday.isoformat()], "entities": ["箱根"],
            "created_at": (datetime.now(ZoneInfo("Asia/Tokyo")) - timedelta(days=5)
                           ).isoformat()}
    r = c.post("/v1/users/aki/memories/import", headers={
        **headers, "content-type": "application/json"},
        content=json.dumps([item], ensure_ascii=False))
    assert r.status_code == 200, r.text


def test_the_next_conversation_opens_with_the_follow_up(client: TestClient,
                                                        tmp_path: Path) -> None:
    h = admin_headers(client.app)
    _import_trip(client, h)
    first = client.post("/v1/turns", json={"user": "aki", "text": "ただいま"}, headers=h).json()
    greeting, moment = first["sentences"][:2]
    assert moment == "そういえば、箱根、どうだった？" and greeting != moment
    again = client.post("/v1/turns", json={"user": "aki", "text": "うん"}, headers=h).json()
    assert "箱根" not in again["reply"]
    feed = client.get("/v1/turns?user=aki", headers=h).json()
    [moment] = [t for t in feed["turns"] if t.get("moment")]
    assert moment["reply"] == "箱根、どうだった？" and moment["moment"]["kind"] == "follow_up"
    assert moment["moment"]["how"] == "opener" and len(moment["moment"]["reasons"]) == 1


async def test_what_was_said_is_in_the_data_folders_ledger(client: TestClient,
                                                           tmp_path: Path) -> None:
    h = admin_headers(client.app)
    _import_trip(client, h)
    client.post("/v1/turns", json={"user": "aki", "text": "ただいま"}, headers=h)
    [entry] = await MomentLedger(tmp_path / "data" / "moments.sqlite3").entries("aki")
    assert entry.kind == "follow_up" and entry.how == "opener"


def test_the_answer_to_a_follow_up_becomes_a_memory_of_the_plan(client: TestClient) -> None:
    h = admin_headers(client.app)
    _import_trip(client, h)
    client.post("/v1/turns", json={"user": "aki", "text": "ただいま"}, headers=h)
    answer = client.post("/v1/turns", json={"user": "aki", "text": "雨だったけど楽しかったよ"},
                         headers=h).json()
    report = client.post("/v1/memory/extract", json={"user": "aki"}, headers=h)
    assert report.status_code == 200, report.text
    memories = client.get("/v1/users/aki/memories", headers=h).json()["memories"]
    [heard] = [m for m in memories if m["id"] != "trip" and "雨" in m["text"]]
    assert heard["text"] == "あなたは箱根は雨だったけど楽しかった。"
    trip = next(m for m in memories if "旅行する予定" in m["text"])
    assert set(trip["entities"]) & set(heard["entities"]) == {"箱根"}
    assert answer["reply"]   # the turn answered as any other
