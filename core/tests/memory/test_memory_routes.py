"""The memory control routes, over HTTP (in-process ASGI transport), as the admin."""

from __future__ import annotations

import json
from datetime import datetime
from zoneinfo import ZoneInfo

import httpx
from fastapi import FastAPI

from omoide.server.memory_routes import memory_router
from omoide.testing.auth import BASE_URL, admin_headers, protect
from omoide.types import Exchange, Memory

from .conftest import fake_chat

NOW = datetime(2026, 9, 27, 21, 0, tzinfo=ZoneInfo("Asia/Tokyo"))


async def client_for(engine) -> httpx.AsyncClient:  # type: ignore[no-untyped-def]
    app = FastAPI()
    app.include_router(memory_router(engine))
    protect(app, engine.data_dir)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL,
                             headers=admin_headers(app))


async def test_list_show_search_and_forget(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine()
    await engine.add_memories("u1", [Memory("g", "u1", "あなたはギターの練習をしている。", NOW),
                                     Memory("h", "u1", "あなたは箱根に行く予定だ。", NOW)])
    async with await client_for(engine) as c:
        listed = (await c.get("/v1/users/u1/memories")).json()["memories"]
        assert {m["id"] for m in listed} == {"g", "h"}
        found = (await c.get("/v1/users/u1/memories", params={"q": "ギター"})).json()
        assert found["memories"][0]["id"] == "g"
        assert (await c.get("/v1/users/u1/memories/g")).json()["text"].startswith("あなたはギター")
        assert (await c.get("/v1/users/u2/memories/g")).status_code == 404
        assert (await c.delete("/v1/users/u1/memories/g")).status_code == 200
        assert (await c.get("/v1/users/u1/memories/g")).status_code == 404
        assert (await c.delete("/v1/users/u1/memories/g")).status_code == 404


async def test_export_and_import_round_trip(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine()
    await engine.add_memories("u1", [Memory("g", "u1", "あなたはギターの練習をしている。", NOW)])
    async with await client_for(engine) as c:
        exported = (await c.get("/v1/users/u1/memories/export")).text
        assert json.loads(exported.splitlines()[0])["id"] == "g"
        ndjson = {"content-type": "application/x-ndjson"}
        r = await c.post("/v1/users/u2/memories/import", content=exported, headers=ndjson)
        assert r.status_code == 200 and r.json()["imported"] == 1
        bad = await c.post("/v1/users/u2/memories/import", content="not json", headers=ndjson)
        assert bad.status_code == 422 and bad.json()["problems"][0]["line"] == 1
    assert [m.text for m in await engine.list_memories("u2")] == ["あなたはギターの練習をしている。"]


async def test_forced_extraction_and_pending(make_engine) -> None:  # type: ignore[no-untyped-def]
    chat = fake_chat('{"facts": [{"text": "あなたは猫のむぎを飼っている。", "kind": "profile"}]}')
    await chat.start()
    engine = await make_engine(chat=chat)
    await engine.record_exchange(Exchange("e1", "u1", "猫のむぎを飼ってるんだ", "かわいいね", NOW))
    async with await client_for(engine) as c:
        pending = (await c.get("/v1/memory/pending")).json()["pending"]
        assert pending[0]["user"] == "u1" and pending[0]["exchanges"] == 1
        r = (await c.post("/v1/memory/extract", json={"user": "u1"})).json()
        assert r["exchanges"] == 1 and r["stored"][0]["text"] == "あなたは猫のむぎを飼っている。"
        assert (await c.get("/v1/memory/pending")).json()["pending"] == []
        assert (await c.post("/v1/memory/extract", json={})).status_code == 422


async def test_show_lists_the_versions_of_a_fact_that_changed(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine()
    before = datetime(2026, 3, 2, 20, 0, tzinfo=ZoneInfo("Asia/Tokyo"))
    await engine.add_memories("u1", [
        Memory("old", "u1", "あなたは札幌の円山のアパートで一人暮らしをしている。", before),
        Memory("new", "u1", "あなたは今日、仙台の青葉区のマンションに引っ越した。", NOW),
        Memory("g", "u1", "あなたはギターの練習をしている。", NOW)])
    async with await client_for(engine) as c:
        shown = (await c.get("/v1/users/u1/memories/old")).json()
        assert [(v["id"], v["current"]) for v in shown["versions"]] == [
            ("old", False), ("new", True)]
        assert shown["versions"][0]["superseded_by"] == "new"
        assert "versions" not in (await c.get("/v1/users/u1/memories/g")).json()
