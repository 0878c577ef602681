"""Quarantined exchanges are visible and can be retried or skipped: HTTP and CLI."""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest
from fastapi import FastAPI

from omoide.cli import main
from omoide.memory.journal.exchange_log import Journal
from omoide.server.memory_routes import memory_router
from omoide.testing.auth import BASE_URL, admin_headers, person_headers, protect
from omoide.types import Exchange

from .conftest import fake_chat

JST = ZoneInfo("Asia/Tokyo")
AT = datetime(2026, 9, 27, 20, 0, tzinfo=JST)


async def client_for(engine, person: str | None = None) -> httpx.AsyncClient:  # type: ignore[no-untyped-def]
    """A client of the memory routes behind omoide's guard, as the admin (or a person)."""
    app = FastAPI()
    app.include_router(memory_router(engine))
    protect(app, engine.data_dir)
    headers = person_headers(app, person) if person else admin_headers(app)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL,
                             headers=headers)


async def quarantined_engine(make_engine):  # type: ignore[no-untyped-def]
    """An engine whose chat model answers garbage: one exchange of u1 is quarantined."""
    chat = fake_chat("うまく抜き出せませんでした")
    await chat.start()
    engine = await make_engine(chat=chat, extraction={"attempts": 1, "max_attempts": 1})
    await engine.record_exchange(Exchange("e1", "u1", "猫のむぎを飼ってるんだ", "かわいい", AT))
    await engine.extract_now("u1")
    return engine


async def test_pending_counts_quarantined_exchanges_and_quarantine_gives_the_reason(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await quarantined_engine(make_engine)
    async with await client_for(engine) as c:
        body = (await c.get("/v1/memory/pending")).json()
        assert [(p["user"], p["exchanges"], p["quarantined"]) for p in body["pending"]] == [
            ("u1", 0, 1)]
        [dead] = (await c.get("/v1/memory/quarantine")).json()["quarantined"]
        assert (dead["exchange_id"], dead["user_text"]) == ("e1", "猫のむぎを飼ってるんだ")
        assert "not JSON" in dead["reason"]
        assert (await c.get("/v1/memory/quarantine", params={"user": "u2"})).json() == {
            "quarantined": []}


async def test_retry_over_http_releases_and_extraction_then_stores_the_facts(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await quarantined_engine(make_engine)
    engine.chat = fake_chat('{"facts": [{"text": "あなたは猫のむぎを飼っている。"}]}')
    await engine.chat.start()
    async with await client_for(engine) as c:
        r = await c.post("/v1/memory/retry", json={"user": "u1", "exchange_ids": ["e1"]})
        assert r.json() == {"user": "u1", "released": ["e1"]}
        extracted = (await c.post("/v1/memory/extract", json={"user": "u1"})).json()
    assert extracted["exchanges"] == 1 and extracted["quarantined"] == []
    assert [m.text for m in await engine.list_memories("u1")] == ["あなたは猫のむぎを飼っている。"]


async def test_a_person_sees_only_their_own_quarantine_and_cannot_release_it(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await quarantined_engine(make_engine)
    async with await client_for(engine, person="u1") as c:
        assert len((await c.get("/v1/memory/quarantine")).json()["quarantined"]) == 1
        assert (await c.get("/v1/memory/quarantine", params={"user": "u2"})).status_code == 403
        assert (await c.post("/v1/memory/retry", json={"user": "u1"})).status_code == 403
    async with await client_for(engine, person="u2") as c:
        assert (await c.get("/v1/memory/quarantine")).json() == {"quarantined": []}


async def test_skip_over_http_sets_the_exchange_aside(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await quarantined_engine(make_engine)
    async with await client_for(engine) as c:
        assert (await c.post("/v1/memory/skip", json={"user": "u1"})).json() == {
            "user": "u1", "skipped": ["e1"]}
        assert (await c.get("/v1/memory/pending")).json() == {"pending": []}
        assert (await c.get("/v1/memory/quarantine")).json() == {"quarantined": []}
        bad = await c.post("/v1/memory/skip", json={"user": "u1", "extra": 1})
        assert bad.status_code == 422


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(f"""
server: {{data_dir: {tmp_path / 'data'}}}
asr: {{use: fake}}
embed: {{use: fake}}
store: {{use: fake}}
chat: {{use: fake}}
tts: {{use: fake}}
""", encoding="utf-8")
    journal = Journal(tmp_path / "data" / "journal.sqlite3")
    journal.open()
    asyncio.run(journal.append(Exchange("e1", "u1", "猫のむぎを飼ってるんだ", "かわいい", AT)))
    asyncio.run(journal.quarantine(["e1"], "extraction failed 3 times: not JSON"))
    journal.close()
    return path


def test_memory_pending_prints_quarantined_exchanges(config: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "pending", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "u1: 0 exchanges, 0 failed attempts, 1 quarantined" in out
    assert "u1 e1" in out and "猫のむぎを飼ってるんだ" in out and "not JSON" in out


def test_memory_retry_releases_a_quarantined_exchange(config: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "retry", "--config", str(config), "--user", "u1",
                 "--exchange", "e1"]) == 0
    assert "released 1 exchanges of u1" in capsys.readouterr().out
    assert main(["memory", "pending", "--config", str(config)]) == 0
    assert "u1: 1 exchanges" in capsys.readouterr().out


def test_memory_skip_of_an_unknown_exchange_fails_clearly(config: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    assert main(["memory", "skip", "--config", str(config), "--user", "u1",
                 "--exchange", "nope"]) == 1
    assert "no exchange of u1 to skip" in capsys.readouterr().err
    assert main(["memory", "skip", "--config", str(config), "--user", "u1"]) == 0
    assert "skipped 1 exchanges of u1" in capsys.readouterr().out
