"""The chat extractor's prompt over the wire: an OpenAI-compatible server answers with
recorded answers, and what omoide keeps of them is what lasts.

The server is a real local HTTP server speaking the OpenAI chat protocol (SSE chunks);
the client is the ``modelscope`` chat plugin pointed at it, reached by name through the
registry. Each recorded answer is keyed by the conversation it answers, in the shape
chat models answer (code fences, the ``replaces`` field the prompt asks for); a
conversation without a recording gets an HTTP error, so a change to the conversation
block shows here. (No model is reachable from the test machines: the answers were
written to the prompt's output contract, not captured from a live model.)
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

pytest.importorskip("fastapi")
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import StreamingResponse

from omoide.components.extractor import ExtractionRequest, Fact
from omoide.memory.extract.chat_extractor import ChatExtractor, ChatExtractorConfig
from omoide.memory.extract.prompt import SYSTEM_PROMPT
from omoide.memory.journal.extraction_batches import facts_from_json, facts_to_json
from omoide.types import Exchange

TZ = "Asia/Tokyo"
AT = datetime(2026, 11, 4, 20, 10, tzinfo=ZoneInfo(TZ))

# A conversation mixing statements with a question the recogniser wrote without 「？」,
# a request, a greeting and an update of an earlier habit.
SAID = [("おはよう", "おはよう！"),
        ("近くにいいカフェある", "駅の東口に静かなカフェがありますよ。"),
        ("最近コーヒーをやめて紅茶にしたんだ", "いいですね、紅茶は何が好きですか？"),
        ("アールグレイが好き。10分のタイマーかけて", "10分のタイマーをかけました。")]
ANSWER = """```json
{"facts": [
  {"text": "あなたは最近コーヒーをやめて紅茶を飲むようになった。", "kind": "habit",
   "profile": true, "category": "habit", "replaces": "コーヒーを飲む習慣", "entities": []},
  {"text": "あなたはアールグレイが好きだ。", "kind": "preference", "profile": true,
   "category": "like", "replaces": null, "entities": ["アールグレイ"]}
]}
```"""
SMALL_TALK = [("こんばんは", "こんばんは！"), ("明日って雨降るの", "明日は晴れの予報です。")]
RECORDED = {tuple(u for u, _ in SAID): ANSWER,
            tuple(u for u, _ in SMALL_TALK): '{"facts": []}'}


def chat_server() -> tuple[Any, list[dict[str, Any]]]:
    """An OpenAI-compatible chat server answering the recorded answers (and the bodies
    it received)."""
    app = FastAPI()
    seen: list[dict[str, Any]] = []

    def chunk(content: str, finish: str | None = None) -> str:
        body = {"id": "r1", "object": "chat.completion.chunk", "created": 1, "model": "rec",
                "choices": [{"index": 0, "delta": {"content": content},
                             "finish_reason": finish}]}
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"

    @app.post("/v1/chat/completions")
    async def completions(request: Request) -> Any:
        body = await request.json()
        seen.append(body)
        said = tuple(re.findall(r"\] user: (.*)", body["messages"][-1]["content"]))
        if said not in RECORDED:
            raise HTTPException(404, f"no recorded answer for {said}")
        text = RECORDED[said]

        async def events() -> Any:
            for i in range(0, len(text), 40):
                yield chunk(text[i:i + 40])
            yield chunk("", "stop")
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    return app, seen


@dataclass
class Host:
    chat: Any
    timezone: str = TZ


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    from omoide.testing.http import LocalServer
    app, seen = chat_server()
    with LocalServer(app) as url:
        yield url, seen


async def extract(url: str, said: list[tuple[str, str]]) -> list[Fact]:
    from omoide.plugins import build_registry
    registry = build_registry([("chat", "modelscope")])
    cls = registry.components["chat"].get("modelscope")
    if cls is None:
        pytest.skip("needs the chat_modelscope plugin (an OpenAI-compatible client)")
    chat = cls(cls.Config(base_url=f"{url}/v1", model="rec"))
    await chat.start()
    try:
        extractor = ChatExtractor(ChatExtractorConfig())
        extractor.attach(Host(chat))
        exchanges = tuple(Exchange(f"ex{i}", "me", u, a, AT) for i, (u, a) in enumerate(said))
        return await extractor.extract(ExtractionRequest("me", exchanges, TZ, 400))
    finally:
        await chat.stop()


def test_the_prompt_keeps_questions_requests_and_greetings_out_and_asks_for_replaces(
        ) -> None:
    for rule in ("質問", "依頼", "あいさつ", "「？」が付かない", '"replaces"'):
        assert rule in SYSTEM_PROMPT
    assert '"replaces": null' in SYSTEM_PROMPT.rsplit("出力は", 1)[1]


async def test_a_recorded_answer_keeps_the_statements_and_says_what_an_update_replaces(
        server: tuple[str, list[dict[str, Any]]]) -> None:
    url, seen = server
    facts = await extract(url, SAID)
    assert [(f.text, f.replaces) for f in facts] == [
        ("あなたは最近コーヒーをやめて紅茶を飲むようになった。", "コーヒーを飲む習慣"),
        ("あなたはアールグレイが好きだ。", None)]
    assert facts[0].kind == "profile_habit" and facts[1].entities == ("アールグレイ",)
    body = seen[-1]
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"][0]["content"] == SYSTEM_PROMPT
    assert "[2026-11-04 20:10 (水)] user: 近くにいいカフェある" in body["messages"][-1]["content"]


async def test_small_talk_and_a_question_give_no_facts(
        server: tuple[str, list[dict[str, Any]]]) -> None:
    assert await extract(server[0], SMALL_TALK) == []


def test_what_a_fact_replaces_survives_the_journal() -> None:
    facts = (Fact("あなたは紅茶を飲む。", "habit", (), "コーヒーを飲む習慣"),
             Fact("あなたは猫を飼っている。", "profile_pet", ("むぎ",)))
    assert facts_from_json(facts_to_json(facts)) == facts
    # a journal written before the field existed still reads
    assert facts_from_json('[{"text": "t", "kind": "other", "entities": []}]') == (
        Fact("t", "other", ()),)
