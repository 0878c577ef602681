"""Turns that lose memory say so: a failing journal, a recall past its budget or failing.

The server runs the real memory engine over the test-double components; journal failures
are real SQLite lock timeouts (another connection holds the journal's write lock).
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from omoide.config import load_yaml, validate_config
from omoide.plugins import PluginRegistry
from omoide.server.app import create_app
from omoide.testing.auth import admin_client

CONFIG = """
server: {{data_dir: {data}}}
memory: {{time_budget_ms: {budget}}}
asr: {{use: fake}}
embed: {{use: fake, latency_ms: {embed_ms}}}
store: {{use: fake}}
chat: {{use: fake, reply: "[happy] うん、覚えてるよ。"}}
tts: {{use: fake}}
"""


def _client(tmp_path: Path, registry: PluginRegistry, *, budget: float = 300,
            embed_ms: float = 0) -> TestClient:
    text = CONFIG.format(data=tmp_path, budget=budget, embed_ms=embed_ms)
    settings = validate_config(load_yaml(text), registry=registry, environ={})
    return admin_client(create_app(settings, registry))


def _wait(client: TestClient, status: str, timeout: float = 10) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = client.get("/healthz").json()
        if body["status"] == status:
            return body  # type: ignore[no-any-return]
        time.sleep(0.02)
    raise AssertionError(f"server never became {status}: {client.get('/healthz').json()}")


@pytest.fixture
def client(tmp_path: Path, registry: PluginRegistry) -> Iterator[TestClient]:
    with _client(tmp_path, registry) as c:
        _wait(c, "ready")
        engine = c.app.state.omoide.memory  # type: ignore[attr-defined]
        engine.journal.busy_timeout_s = 0.05
        engine.journal.reopen()
        engine.keeper.probe_seconds = 0.05
        yield c


def turn(client: TestClient, text: str = "週末の予定覚えてる?") -> dict[str, Any]:
    r = client.post("/v1/turns", json={"user": "me", "text": text})
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def test_a_turn_whose_exchange_was_not_journaled_says_so(client: TestClient,
                                                         tmp_path: Path) -> None:
    other = sqlite3.connect(tmp_path / "journal.sqlite3", isolation_level=None, timeout=0)
    other.execute("BEGIN EXCLUSIVE")
    try:
        body = turn(client)
        assert body["reply"]
        assert any("journal-spill.jsonl" in d for d in body["degraded"]), body["degraded"]
        health = client.get("/healthz")
        assert health.json()["status"] == "degraded"
        memory = health.json()["components"]["memory"]
        assert memory["state"] == "failed" and "locked" in memory["reason"]
    finally:
        other.execute("ROLLBACK")
        other.close()
    _wait(client, "ready")
    pending = client.get("/v1/memory/pending").json()["pending"]
    assert [(p["user"], p["exchanges"]) for p in pending] == [("me", 1)]


def test_a_journaled_turn_reports_nothing_degraded(client: TestClient) -> None:
    assert turn(client, "こんにちは")["degraded"] == []


def test_a_recall_whose_query_embedding_is_late_answers_without_it_and_says_so(
        tmp_path: Path, registry: PluginRegistry) -> None:
    with _client(tmp_path, registry, budget=100, embed_ms=2000) as c:
        _wait(c, "ready")
        body = turn(c)
    assert body["reply"]
    assert any("embedding" in d and "without the dense channel" in d for d in body["degraded"])


def test_a_recall_past_its_time_budget_says_the_turn_had_no_memory(
        tmp_path: Path, registry: PluginRegistry) -> None:
    with _client(tmp_path, registry, budget=100) as c:
        _wait(c, "ready")
        store = c.app.state.omoide.memory.store  # type: ignore[attr-defined]

        async def hanging(*args: Any, **kwargs: Any) -> Any:
            await asyncio.sleep(30)

        store.search = hanging
        store.scroll_page = hanging
        body = turn(c)
    assert body["memories"] == []
    assert any("time budget" in d and "no memory this turn" in d for d in body["degraded"])


def test_a_failing_recall_says_the_turn_had_no_memory(client: TestClient) -> None:
    engine = client.app.state.omoide.memory  # type: ignore[attr-defined]

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("store down")

    engine.store.search = broken
    engine.store.scroll_page = broken
    body = turn(client)
    assert any("recall failed" in d and "store down" in d for d in body["degraded"])


def test_the_trace_names_the_read_engine_that_recalled(client: TestClient) -> None:
    turn(client)
    trace = client.get("/v1/traces").json()["traces"][-1]
    assert trace["stages"]["retrieve"]["component"] == "robust"
