"""Reliability: 200 turns at once on one real server lose nothing and hide nothing.

20 people, 10 memory questions each, all sent together to ``omoide serve`` (SQLite
journal, Qdrant local store, hashing embedder, the stand-in chat model). Every turn is
answered; every exchange is journaled for extraction; and every turn either carried
memory or says in ``degraded`` why it did not (a time budget, a late query vector, an
index not built yet) — never an empty answer that looks like "nothing to remember".
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx

from omoide.testing.auth import admin_headers

PEOPLE = 20
TURNS_EACH = 10
QUESTIONS = ["箱根に行くのっていつだっけ？", "ギターの練習のこと覚えてる？",
             "佐藤さんってどこに住んでるんだっけ？", "好きな食べ物覚えてる？"]
FACTS = ["あなたは来週の土曜日に友達と箱根に行く。", "あなたは仕事終わりにギターの練習をしている。",
         "あなたの友達の佐藤さんは札幌に住んでいる。", "あなたはラーメンが好きだ。"]


def _export() -> str:
    return "".join(json.dumps({"id": f"f{i}", "text": text}, ensure_ascii=False) + "\n"
                   for i, text in enumerate(FACTS))


CONNECTIONS = PEOPLE * TURNS_EACH
"""Every turn on a connection of its own, all from this one address: the server is
told to allow that many (``server.limits.max_connections_per_source``, 64 by default,
is there for floods, not for this test's load)."""


async def _all_at_once(url: str, headers: dict[str, str]) -> list[httpx.Response]:
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120,
                                 limits=httpx.Limits(max_connections=CONNECTIONS)) as client:
        return await asyncio.gather(*(
            client.post("/v1/turns", json={
                "user": f"p{p:02d}", "text": QUESTIONS[t % len(QUESTIONS)]})
            for p in range(PEOPLE) for t in range(TURNS_EACH)))


def test_200_turns_at_once_are_all_answered_journaled_and_honest(
        tmp_path: Path, serve_omoide: Any) -> None:
    server = serve_omoide(tmp_path / "data",
                          server={"limits": {"max_connections_per_source": CONNECTIONS}},
                          extra="memory: {extraction: {idle_minutes: 60, max_exchanges: 1000,"
                                " on_disconnect: false}}\n")
    headers = {"Content-Type": "application/json", **admin_headers(server.data)}
    for p in range(PEOPLE):
        imported = httpx.post(server.url(f"/v1/users/p{p:02d}/memories/import"),
                              content=_export().encode(), timeout=60,
                              headers={**headers, "Content-Type": "application/x-ndjson"})
        assert imported.status_code == 200, imported.text

    answers = asyncio.run(_all_at_once(server.url(""), headers))

    assert [r.status_code for r in answers] == [200] * (PEOPLE * TURNS_EACH)
    bodies = [r.json() for r in answers]
    assert all(b["reply"] for b in bodies)
    silent = [b for b in bodies if not (b["memories"] or b["profile"] or b["degraded"])]
    assert silent == [], silent[:3]
    pending = {p["user"]: p["exchanges"] for p in server.get("/v1/memory/pending")["pending"]}
    assert pending == {f"p{p:02d}": TURNS_EACH for p in range(PEOPLE)}
    assert server.get("/healthz")["status"] == "ready"
