"""The ``standin`` chat model: contract, emotion tags, recall from memory, extraction."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from datetime import UTC
from typing import Any

import pytest

from omoide.testing import ChatModelContract
from omoide.types import ChatMessage, Emotion
from omoide_standins.chat import StandinChat, StandinChatConfig

TAG = re.compile(r"^\[(\w+)\] ")
MEMORY_PROMPT = """あなたは「かな」です。
今日は2026年9月27日（日曜日）です。明日は2026年9月28日（月曜日）です。
<retrieved_memory>
以下はユーザーについて覚えていることです。聞かれない限り話題にしないでください。
- [2026-09-27] あなたは来週の土曜日（2026年10月3日）に友達と箱根に行く予定だ。
- [2026-09-27] あなたは最近、仕事終わりにギターの練習をしている。
</retrieved_memory>"""
PLAIN_PROMPT = "あなたは「かな」です。今日は2026年9月27日（日曜日）です。"


class TestStandinChat(ChatModelContract):
    component_cls = StandinChat


@pytest.fixture
async def chat() -> AsyncIterator[StandinChat]:
    model = StandinChat(StandinChatConfig())
    await model.start()
    try:
        yield model
    finally:
        await model.stop()


async def _reply(chat: StandinChat, system: str, user: str) -> str:
    return await chat.complete([ChatMessage("system", system), ChatMessage("user", user)])


def _emotion(reply: str) -> str:
    m = TAG.match(reply)
    assert m, f"reply does not start with an emotion tag: {reply!r}"
    return m.group(1)


def test_it_says_what_it_stands_in_for() -> None:
    assert StandinChat.stand_in and "modelscope" in StandinChat.stand_in
    assert "MODELSCOPE_API_KEY" in StandinChat.stand_in


async def test_replies_start_with_a_known_emotion_tag(chat: StandinChat) -> None:
    for said in ("こんにちは", "来週箱根に行くんだ", "疲れたなあ", "週末の予定覚えてる?",
                 "日本で一番高い山は？", "ふーん"):
        assert _emotion(await _reply(chat, PLAIN_PROMPT, said)) in {e.value for e in Emotion}


async def test_replies_stream_in_several_pieces(chat: StandinChat) -> None:
    pieces = [d.text async for d in chat.stream([ChatMessage("user", "こんにちは")])]
    assert len(pieces) >= 3 and all(pieces)


async def test_a_recall_question_is_answered_from_the_memory(chat: StandinChat) -> None:
    reply = await _reply(chat, MEMORY_PROMPT, "週末の予定覚えてる?")
    assert reply == ("[happy] 覚えてるよ！来週の土曜日（2026年10月3日）に友達と箱根に行く"
                     "予定だよね。")


async def test_the_best_matching_memory_is_chosen(chat: StandinChat) -> None:
    reply = await _reply(chat, MEMORY_PROMPT, "最近私が練習してることって何？")
    assert "ギター" in reply and "箱根" not in reply


async def test_without_a_memory_it_admits_it_does_not_remember(chat: StandinChat) -> None:
    reply = await _reply(chat, PLAIN_PROMPT, "週末の予定覚えてる?")
    assert _emotion(reply) == "doubtful"
    assert "覚えがない" in reply


async def test_a_general_question_is_not_looked_up_offline(chat: StandinChat) -> None:
    reply = await _reply(chat, PLAIN_PROMPT, "日本で一番高い山は？")
    assert _emotion(reply) == "thinking" and "オフライン" in reply


async def test_memories_are_not_brought_up_unasked(chat: StandinChat) -> None:
    reply = await _reply(chat, MEMORY_PROMPT, "今日はラーメンを食べたよ")
    assert "箱根" not in reply and "ギター" not in reply


async def test_a_plan_gets_a_happy_reaction(chat: StandinChat) -> None:
    reply = await _reply(chat, PLAIN_PROMPT, "来週の土曜日に友達と箱根に行くんだ")
    assert reply == "[happy] いいね！楽しんできてね。"


async def test_the_extraction_call_returns_facts_json(chat: StandinChat) -> None:
    prompt = """<conversation>
[2026-09-27 20:50 (日)] user: 来週の土曜日に友達と箱根に行くんだ
[2026-09-27 20:50 (日)] assistant: いいね！楽しんできてね。
</conversation>"""
    text = await chat.complete([ChatMessage("system", "事実をJSONで抽出してください。"),
                                ChatMessage("user", prompt)], json_output=True)
    assert json.loads(text) == {"facts": [
        {"text": "あなたは来週の土曜日（2026年10月3日）に友達と箱根に行く予定だ。",
         "kind": "plan", "profile": False, "category": None, "entities": ["箱根"]}]}


async def test_same_request_same_reply(chat: StandinChat) -> None:
    first = await _reply(chat, MEMORY_PROMPT, "週末の予定覚えてる?")
    assert first == await _reply(chat, MEMORY_PROMPT, "週末の予定覚えてる?")


async def test_pieces_can_be_paced_for_demos() -> None:
    import time
    model = StandinChat(StandinChatConfig(chunk_chars=8, piece_delay_ms=20))
    await model.start()
    started = time.perf_counter()
    pieces: list[Any] = [d async for d in model.stream([ChatMessage("user", "こんにちは")])]
    elapsed = time.perf_counter() - started
    await model.stop()
    assert elapsed >= 0.02 * (len(pieces) - 1) * 0.9


async def test_memories_rendered_by_the_engine_are_read_but_its_rules_are_not(
        chat: StandinChat) -> None:
    from datetime import date, datetime

    from omoide.memory.recall.memory_block import render_memory_block
    from omoide.types import Memory, RetrievedMemory

    said = datetime(2026, 9, 27, 11, 50, tzinfo=UTC)
    block = render_memory_block([RetrievedMemory(Memory(
        "m1", "u1", "あなたは来週の土曜日（2026年10月3日）に友達と箱根に行く予定だ。", said,
        event_dates=(date(2026, 10, 3),)), 0.9)], "Asia/Tokyo")
    from omoide_standins.replies import memory_lines
    assert memory_lines(block) == [
        "あなたは来週の土曜日（2026年10月3日）に友達と箱根に行く予定だ。"]
    reply = await _reply(chat, PLAIN_PROMPT + "\n" + block, "週末の予定覚えてる?")
    assert reply == ("[happy] 覚えてるよ！来週の土曜日（2026年10月3日）に友達と箱根に行く"
                     "予定だよね。")


async def test_a_wish_and_a_habit_get_encouragement(chat: StandinChat) -> None:
    assert await _reply(chat, PLAIN_PROMPT, "また行きたいな") == "[happy] いいね！きっと叶うよ。"
    habit = await _reply(chat, PLAIN_PROMPT, "最近、仕事終わりにギターの練習をしてるんだ")
    assert habit == "[happy] すごいね！がんばってるんだね。"
