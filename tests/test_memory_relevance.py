"""The console's memory search lists what a query is about and nothing else, judged on
the real e5 embedder's vectors (whose cosines sit at 0.8-0.9 for any two sentences)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path

import pytest
import pytest_asyncio

from omoide.memory.config import MemoryConfig
from omoide.memory.control.relevance import RelevanceJudge
from omoide.memory.engine import MemoryEngine
from omoide.testing.doubles import InMemoryStore, MemoryStoreConfig
from omoide.types import Memory

pytest.importorskip("omoide_embed_e5")
from omoide_embed_e5.embedder import E5Config, E5Embedder

pytestmark = pytest.mark.asyncio(loop_scope="module")

NOW = datetime.fromisoformat("2026-04-22T21:40:00+09:00")
MEMORIES = {
    "work": "あなたはIT企業でシステムエンジニアとして働いていて、上司は佐藤さんだ。",
    "wife": "あなたは妻の美咲と二人で、世田谷区のマンションに住んでいる。",
    "spicy": "あなたは辛い料理が好きで、中でも四川風の麻婆豆腐には目がない。",
    "cat": "あなたは茶トラの猫のむぎを飼っていて、むぎは今年3歳になるオスだ。",
    "mother": "あなたの母は静岡に一人で住んでいて、毎年春に新茶を送ってくれる。",
    "jog": "あなたは平日の朝、出社前に近所の公園を30分ジョギングしている。",
    "cat_food": "あなたの猫のむぎは、毎朝7時と夜7時の2回カリカリのご飯を食べる。",
    "game": "あなたは夜にNintendo Switchでスプラトゥーン3をよく遊んでいる。",
    "hay_fever": "あなたはスギ花粉症で、春になると毎朝アレルギーの薬を飲んでいる。",
    "dentist": "あなたは来週の火曜日（2026年4月28日）に歯医者の予約を入れている。",
    "movie": "あなたは来週の土曜日（2026年5月2日）に美咲と新宿で映画を観る予定だ。",
    "new_year": "あなたは成人の日（2027年1月11日）に、実家で開かれる親戚の新年会に出る。",
    "futsal": "あなたの大学時代の友達の健太は、最近フットサルチームのキャプテンになった。",
}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def judge(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RelevanceJudge]:
    embedder = E5Embedder(E5Config())
    await embedder.start()
    store = InMemoryStore(MemoryStoreConfig())
    await store.start()
    engine = MemoryEngine(MemoryConfig(), embedder=embedder, store=store, chat=None,
                          data_dir=Path(tmp_path_factory.mktemp("relevance")),
                          timezone="Asia/Tokyo")
    await engine.start()
    await engine.add_memories("u", [Memory(k, "u", t, datetime.fromisoformat(
        "2026-04-01T20:00:00+09:00")) for k, t in MEMORIES.items()])
    yield RelevanceJudge(engine)
    await engine.stop()
    await embedder.stop()


async def listed(judge: RelevanceJudge, query: str, min_relevance: float = 0.5) -> set[str]:
    return {r.memory.id for r in await judge.search("u", query, now=NOW,
                                                    min_relevance=min_relevance)}


@pytest.mark.parametrize("query", ["株価", "宇宙の起源", "サッカー", "ピアノ", "政治",
                                   "東京タワー", "ワインの産地"])
async def test_an_unrelated_query_lists_nothing(judge: RelevanceJudge, query: str) -> None:
    assert await listed(judge, query) == set()


@pytest.mark.parametrize(("query", "expected"), [
    ("猫", {"cat", "cat_food"}), ("むぎ", {"cat", "cat_food"}), ("歯医者", {"dentist"}),
    ("フットサル", {"futsal"}), ("ジョギング", {"jog"})])
async def test_a_word_the_person_said_lists_exactly_those_memories(
        judge: RelevanceJudge, query: str, expected: set[str]) -> None:
    assert await listed(judge, query) == expected


async def test_a_query_sharing_no_word_finds_a_memory_by_meaning(judge: RelevanceJudge) -> None:
    # (お母さん no longer qualifies: it shares 母 with the memory, kin said any way)
    [found] = await judge.search("u", "ペット", now=NOW)
    assert found.memory.id == "cat" and found.evidence.words == ()
    assert found.evidence.meaning_sd >= 3


async def test_a_date_with_nothing_else_asked_lists_what_falls_in_it(
        judge: RelevanceJudge) -> None:
    assert await listed(judge, "来週の予定") == {"dentist", "movie"}


async def test_a_date_does_not_list_memories_about_something_else(
        judge: RelevanceJudge) -> None:
    assert await listed(judge, "来週の天気") == set()


async def test_a_lower_threshold_lists_more_and_every_result_says_why(
        judge: RelevanceJudge) -> None:
    strict = await judge.search("u", "ペット", now=NOW, min_relevance=0.5)
    loose = await judge.search("u", "ペット", now=NOW, min_relevance=0.2)
    assert {r.memory.id for r in strict} < {r.memory.id for r in loose}
    assert all(r.relevance >= 0.2 for r in loose)
    assert [r.relevance for r in loose] == sorted((r.relevance for r in loose), reverse=True)
