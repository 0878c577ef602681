"""Extraction that cannot stall: what stalled a person's extraction forever before.

A real ``omoide serve`` talks to a local OpenAI-compatible chat server (the ``modelscope``
chat plugin with ``base_url``) that extracts with the stand-in's rules — and answers
garbage, every time, for any conversation holding one marked exchange. Each trigger is
one person:

- an exchange dated 9999-12-31 already in the journal (date arithmetic overflows);
- 35 statements waiting at once (the stand-in would answer more than 30 facts);
- one 4000-character statement;
- one exchange the chat model never answers sensibly.

Every other exchange is extracted in the first run; the bad one is quarantined with its
reason and can be skipped.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

pytestmark = pytest.mark.skipif(
    any(__import__("importlib").util.find_spec(m) is None
        for m in ("omoide_store_qdrant", "omoide_standins", "omoide_chat_modelscope")),
    reason="needs the store_qdrant, standins and chat_modelscope plugins")

POISON = "呪文ホゲホゲ"
NOW = "2026-09-27T20:{:02d}:00+09:00"
FRIENDS = ["佐藤", "鈴木", "田中", "高橋", "伊藤", "渡辺", "山本", "中村", "小林", "加藤",
           "吉田", "山田"]
CITIES = ["札幌", "仙台", "福岡", "名古屋", "大阪", "京都", "神戸", "広島", "金沢", "那覇",
          "松山", "長野"]


def chat_server_app() -> Any:
    """An OpenAI-compatible chat server: SSE streams; extraction by the stand-in's rules,
    garbage for a conversation holding ``POISON``."""
    from omoide_standins.chat import _sudachi_tokenizer
    from omoide_standins.extraction import facts_json

    app = FastAPI()
    tokenizer = _sudachi_tokenizer()
    lock = threading.Lock()

    def chunk(content: str, finish: str | None = None) -> str:
        body = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "local",
                "choices": [{"index": 0, "delta": {"content": content},
                             "finish_reason": finish}]}
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"

    async def events(text: str) -> AsyncIterator[str]:
        for i in range(0, len(text), 64):
            yield chunk(text[i:i + 64])
            await asyncio.sleep(0)
        yield chunk("", "stop")
        yield "data: [DONE]\n\n"

    @app.post("/v1/chat/completions")
    async def completions(request: Request) -> Any:
        body = await request.json()
        prompt = body["messages"][-1]["content"]
        if body.get("response_format", {}).get("type") == "json_object":
            if POISON in prompt:
                text = "すみません、その会話からは何も抜き出せませんでした。"
            else:
                with lock:
                    text = facts_json(prompt, tokenizer)
        else:
            text = "[neutral] うん、なるほど。"
        return StreamingResponse(events(text), media_type="text/event-stream")

    return app


@pytest.fixture(scope="module")
def chat_url() -> Iterator[str]:
    from omoide.testing.http import LocalServer
    with LocalServer(chat_server_app()) as url:
        yield url


def seed_far_future_exchange(data: Path) -> None:
    """Put an exchange dated 9999-12-31 into the journal, as an older server could have."""
    from omoide.memory.journal.exchange_log import Journal
    from omoide.types import Exchange

    journal = Journal(data / "journal.sqlite3")
    journal.open()
    asyncio.run(journal.append(Exchange(
        "far-future", "far", "来年は海外に行きたいな", "いいね",
        datetime(9999, 12, 31, 23, 59, tzinfo=ZoneInfo("UTC")))))
    journal.close()


def turn(server: Any, user: str, text: str, minute: int = 0) -> None:
    server.post("/v1/turns", {"user": user, "text": text, "now": NOW.format(minute)})


def extract(server: Any, user: str) -> dict[str, Any]:
    return server.post("/v1/memory/extract", {"user": user})  # type: ignore[no-any-return]


def memories(server: Any, user: str) -> list[str]:
    return [m["text"] for m in server.get(f"/v1/users/{user}/memories")["memories"]]


@pytest.fixture(scope="module")
def server(chat_url: str, tmp_path_factory: pytest.TempPathFactory,
           start_omoide: Any) -> Iterator[Any]:
    data = tmp_path_factory.mktemp("stall") / "data"
    data.mkdir()
    seed_far_future_exchange(data)
    running = start_omoide(data, chat=f"modelscope, base_url: '{chat_url}/v1', model: local",
                           extra="memory: {extraction: {attempts: 1, max_attempts: 2}}\n")
    yield running
    running.stop()


def test_an_exchange_dated_9999_is_quarantined_and_the_next_one_extracted(server: Any,
                                                                         ) -> None:
    turn(server, "far", "来週の土曜日に友達と箱根に行くんだ", 50)
    report = extract(server, "far")
    assert report["quarantined"] == ["far-future"] and report["exchanges"] == 1, str(report)
    assert any("箱根" in t for t in memories(server, "far"))
    [dead] = server.get("/v1/memory/quarantine?user=far")["quarantined"]
    assert "outside the calendar" in dead["reason"]


def test_35_statements_waiting_at_once_are_all_extracted(server: Any) -> None:
    for i in range(35):
        turn(server, "many", f"友達の{FRIENDS[i % 12]}さんは{CITIES[(i * 5) % 12]}に"
                             f"{i + 1}年住んでるんだ", i)
    report = extract(server, "many")    # some were extracted already (every 8 exchanges)
    assert (report["pending"], report["quarantined"]) == (False, [])
    assert len(memories(server, "many")) == 35
    assert server.get("/v1/memory/pending?user=many") == {"pending": []}


def test_a_4000_character_statement_is_extracted_with_the_next_one(server: Any) -> None:
    long = ("最近、仕事終わりにギターの練習をしてるんだ。" * 200)[:4000]
    turn(server, "long", long, 1)
    turn(server, "long", "来月、京都に旅行する予定なんだ", 2)
    report = extract(server, "long")
    assert (report["exchanges"], report["pending"]) == (2, False)
    texts = memories(server, "long")
    assert any("ギター" in t for t in texts) and any("京都" in t for t in texts)


def test_garbage_for_one_exchange_never_blocks_the_others_and_ends_in_quarantine(
        server: Any) -> None:
    turn(server, "garbage", "ラーメンが好きなんだ", 1)
    turn(server, "garbage", f"{POISON}って知ってる", 2)
    turn(server, "garbage", "猫を2匹飼ってるんだ", 3)
    report = extract(server, "garbage")
    assert report["exchanges"] == 2 and report["pending"]
    assert len(memories(server, "garbage")) == 2
    report = extract(server, "garbage")
    [dead] = server.get("/v1/memory/quarantine?user=garbage")["quarantined"]
    assert report["quarantined"] == [dead["exchange_id"]] and POISON in dead["user_text"]
    assert "failed 2 times" in dead["reason"]
    rows = server.get("/v1/memory/pending?user=garbage")["pending"]
    assert [(p["exchanges"], p["quarantined"]) for p in rows] == [(0, 1)]
    skipped = server.post("/v1/memory/skip", {"user": "garbage"})
    assert skipped["skipped"] == [dead["exchange_id"]]
    assert server.get("/v1/memory/quarantine?user=garbage")["quarantined"] == []
