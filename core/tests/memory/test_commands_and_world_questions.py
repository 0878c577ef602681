"""Commands and questions about the world get no memory, with or without 〜だっけ.

Timers, alarms and the weather are commands or world questions however they are phrased
(お願い, 〜たら教えて, 〜かな); 〜だっけ makes a question look like recall, but only a
memory that names the thing asked about answers one with nothing of the person in its
grammar (「1ガロンって何リットルだっけ」), never a sound-alike or a number's unit. A だっけ
question about the person's own life (a name with さん, kin, 去年, a verb of theirs) still
recalls. Runs over the test doubles (hash embedder, in-memory store).
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from omoide.memory.engine import MemoryEngine
from omoide.memory.language.lexicon import analyzer
from omoide.memory.recall.intent import detect
from omoide.types import Memory

JST = ZoneInfo("Asia/Tokyo")
SAID = datetime(2027, 9, 1, 20, 0, tzinfo=JST)
NOW = datetime(2027, 9, 29, 21, 0, tzinfo=JST)   # a Wednesday
MEMORIES = {
    "walk": "あなたは毎朝15分散歩をしている。",
    "pills": "あなたは血圧の薬を1日2回飲んでいる。",
    "bbq": "あなたは今週末の土曜日（2027年10月2日）に友達とバーベキューをする予定だ。",
    "umbrella": "あなたは先月、駅に傘を忘れた。",
    "exam": "あなたは11月14日に認定士の試験を受ける。",
    "matsuo": "あなたは編集の松尾さんから文庫の締め切りを10月20日と言われた。",
    "picasso": "あなたは去年の冬、ピカソ展に母と行った。",
    "checkup": "あなたは先月の健診で血圧が上128、下82だった。",
    "castle": "あなたは先週、名古屋城に友達と行った。",
    "espresso": "あなたはエスプレッソマシンを買った。",
    "ramen": "あなたは駅前のラーメン屋で味噌ラーメンを食べた。",
    "otaku_plan": "あなたは来月、大輝が東京から帰ってくるのを楽しみにしている。",
    "wine": "あなたは来週、酒屋からワインを3本配達してもらう予定だ。",
}


@pytest.fixture
async def engine(make_engine) -> MemoryEngine:  # type: ignore[no-untyped-def]
    engine: MemoryEngine = await make_engine(time_budget_ms=30_000)
    await engine.add_memories("me", [Memory(k, "me", v, SAID) for k, v in MEMORIES.items()])
    return engine


async def injected(engine: MemoryEngine, text: str) -> list[str]:
    return [r.memory.id for r in (await engine.recall("me", text, NOW)).memories]


@pytest.mark.parametrize("text", [
    "15分たったら教えて", "じゅっぷんタイマーお願い", "5分のタイマーお願い",
    "ごふんたったら知らせて", "朝6時に目覚ましお願い", "キッチンタイマー15分お願い",
    # as a recogniser wrote them: お願い as ご願い / を願い, タイマー without its long vowel
    "きっちんタイマは15分ご願い", "朝6時に目覚ましを願い"])
def test_a_request_with_a_duration_or_a_timer_is_a_command(text: str) -> None:
    assert detect(text).command


@pytest.mark.parametrize("text", [
    "15分たったら教えて", "朝6時に目覚ましお願い", "あしたろくじにおこして"])
async def test_a_command_with_numbers_gets_no_memory(engine: MemoryEngine, text: str) -> None:
    assert await injected(engine, text) == []


@pytest.mark.parametrize("text", ["明日って晴れる?", "きょう傘いるかな", "今週末って雨降るかな"])
async def test_a_question_about_the_weather_gets_no_memory(engine: MemoryEngine,
                                                           text: str) -> None:
    """Not the weekend's plan, not the umbrella left at the station."""
    assert detect(text).general
    assert await injected(engine, text) == []


def test_the_weather_of_a_plan_is_about_the_plan() -> None:
    assert not detect("週末のバーベキュー雨降るかな").general


@pytest.mark.parametrize("text", [
    "1ガロンって何リットルだっけ", "うるう年って4年に1回だっけ?", "一年って何秒だっけ?",
    "月までの距離ってどのくらいだっけ", "モナリザ描いたのって誰だっけ?",
    "ガラパゴスってどこの国の島だっけ?"])
async def test_a_world_question_with_dakke_gets_no_memory(engine: MemoryEngine,
                                                        text: str) -> None:
    assert detect(text).impersonal
    assert await injected(engine, text) == []


@pytest.mark.parametrize("text", [
    "松尾さんの締め切りっていつだっけ", "去年の冬どこ行ったっけ", "薬って1日何回飲むんだっけ",
    "私って何の試験受けるんだっけ"])
def test_a_dakke_question_about_the_persons_life_is_not_about_a_thing(text: str) -> None:
    intent = detect(text)
    assert intent.recall and not intent.impersonal


async def test_a_personal_dakke_question_still_recalls(engine: MemoryEngine) -> None:
    assert await injected(engine, "松尾さんの締め切りっていつだっけ") == ["matsuo"]


async def test_a_question_about_a_thing_recalls_the_memory_naming_it(
        engine: MemoryEngine) -> None:
    """Shaped like a world question, answered by the person's own exam."""
    assert "exam" in await injected(engine, "認定士の試験っていつだっけ")


async def test_a_misheard_name_asked_about_still_recalls(engine: MemoryEngine) -> None:
    """A thing's name heard wrong is still heard when it sounds like a whole noun of
    the question (ばーべきゅう, バラベキュー): the sound channel keeps speech working."""
    assert "bbq" in await injected(engine, "ばあべきゅうっていつだっけ")


@pytest.mark.parametrize("text", ["もう寝るわ、おやすみー", "おやすみなさい", "ただいまー"])
async def test_a_greeting_gets_no_memory(engine: MemoryEngine, text: str) -> None:
    """おやすみ is a greeting, not the 休み of a memory inside it."""
    engine_memories = [Memory("holiday", "me", "あなたは来週の金曜日にお休みをとる。", SAID)]
    await engine.add_memories("me", engine_memories)
    assert await injected(engine, text) == []


def test_a_unit_after_a_number_is_no_word_of_its_own() -> None:
    keys = {k for t in analyzer().analyse("うるう年って4年に1回だっけ", query=True).terms
            if t.weight >= 1.0 for k in t.keys}
    assert "回" not in keys and "閏年" in keys



@pytest.mark.parametrize("text", ["去年のクリスマスイブって何してた?", "先週の日曜って何食べた?",
                                  "この前どこ行った?"])
def test_what_was_done_at_a_time_of_theirs_is_their_own_past(text: str) -> None:
    assert detect(text).recall


@pytest.mark.parametrize("text", ["昨日の試合どっちが勝った?", "去年誰が優勝した?",
                                  "江戸時代の首都ってどこだった?"])
def test_what_someone_else_did_is_not_their_own_past(text: str) -> None:
    assert not detect(text).recall


async def test_a_question_in_the_past_tense_recalls_the_record_it_names(
        engine: MemoryEngine) -> None:
    """Shaped like a world question, but asked in the past tense about words of the
    person's own record; the same question in the present asks about the world."""
    assert "checkup" in await injected(engine, "健診の血圧って上いくつだった?")
    assert await injected(engine, "血圧って上いくつなら正常なの?") == []


@pytest.mark.parametrize("text", [
    "名古屋城って誰が建てたんだっけ",           # the doer asked: someone else built it
    "エスプレッソって何気圧で淹れるんだっけ",
    "ラーメンの麺ってなんで縮れてるんだっけ"])
async def test_a_question_about_a_thing_named_needs_a_memory_of_what_it_asks(
        engine: MemoryEngine, text: str) -> None:
    """The person's own memories name the castle, the machine and the ramen, but none says
    who built the castle, at what pressure espresso is made or why the noodles curl."""
    assert detect(text).thing_named
    assert await injected(engine, text) == []


@pytest.mark.parametrize(("text", "memory"), [
    ("ワインって何本届くんだっけ", "wine"),           # the quantity asked is stated
    ("名古屋城って誰と行ったんだっけ", "castle"),     # an action of theirs
    ("大輝っていつ帰ってくるんだっけ", "otaku_plan"),  # when: a plan of theirs
    ("ラーメンってどこで食べたんだっけ", "ramen")])
async def test_a_thing_named_in_a_question_about_their_own_life_still_recalls(
        engine: MemoryEngine, text: str, memory: str) -> None:
    assert memory in (await injected(engine, text))[:3]
