"""``omoide bench memory_read``: read-path latency with many memories for one user.

    omoide bench memory_read [--config FILE] [--memories 10000] [--store memory|qdrant]
                             [--queries 200] [--index-budget-mb MB] [--tmp DIR] [--json]

Fills one user's store with ``--memories`` synthetic Japanese facts (dated plans,
habits, people, places), then times, for each engine, the recall a turn makes: the
same ``MemoryEngine.recall(user, text, now, engine=...)`` call the pipeline's
``MemoryService.recall`` makes, with the config's ``memory:`` section (only the time
budget lifted, so a slow read is measured rather than cut), **after the person's index
is ready** (``engine.index(user)`` awaited first), over a fixed set of questions: the
whole read, and the read without the query embedding (the target is p95 <= 20 ms
without it; every robust recall also carries the person's profile block, so its cost
is included). ``bench scale`` times the same call. Separately: the index build (the
store's scroll and the analysis of every memory), the index's size per memory (the
process's RSS growth while it was built, an upper bound that also holds what the build
left behind in the allocator, and the cache's estimate) and the process's RSS. A recall
before the index is ready (dense recall from the store) is not timed here: with the
lifted time budget it would wait for the build.

Memory vectors come from the hashing test double, made in bulk (their values do not
change search time); queries are embedded by the configured embedder (``--config``), or
by the double when no config is given. The store lives in a temporary directory on
``/dev/shm`` when there is one (``--tmp`` to choose): Qdrant's local mode commits every
point on its own, and on a disk those syncs were most of a 100,000-memory fill.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from omoide_bench.benches._stats import rss_bytes, rss_mb

QUESTIONS = ["週末の予定覚えてる?", "最近私が練習してることって何？", "おすすめの映画ある？",
             "日本で一番高い山は？", "来週の土曜日ってなんだっけ", "むぎの健康診断いつだっけ",
             "明日の待ち合わせって何時だっけ?", "連休ってどこ行くんだっけ?", "私の好きなケーキ覚えてる?",
             "次の歯医者いつだっけ", "あやと何するんだっけ", "先月のバレンタインって何あげたっけ"]
NAMES = ["健太", "美咲", "あや", "翔太", "亮", "真由", "大輝", "さくら", "蓮", "陽菜", "佐藤さん",
         "田中さん", "むぎ", "こはく", "だいふく", "コタロウ", "莉子", "恵子", "遥", "大輔"]
PLACES = ["箱根", "京都", "金沢", "沖縄", "石垣島", "新宿", "渋谷", "横浜", "札幌", "別府",
          "松本", "大阪", "福岡", "仙台", "名古屋", "井の頭公園", "駒沢公園", "東京ドーム", "鎌倉", "日光"]
ACTS = ["映画を観る", "ラーメンを食べる", "フットサルをする", "買い物に行く", "花見をする",
        "温泉に行く", "キャンプをする", "ライブを観る", "歯医者に行く", "美容院に行く",
        "健康診断を受ける", "ギターの練習をする", "ジョギングをする", "カフェで勉強する",
        "釣りに行く", "ドライブに行く", "ゴルフをする", "ヨガに通う", "料理教室に行く", "プレゼントを買う"]
LIKES = ["辛い料理", "チーズケーキ", "日本酒", "納豆", "パクチー", "コーヒー", "抹茶", "カレー",
         "寿司", "焼き肉"]


def synthetic_memories(n: int, user: str, now: datetime, seed: int = 7) -> list[Any]:
    from omoide.types import Memory
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        said = now - timedelta(days=rnd.randint(0, 720), minutes=rnd.randint(0, 1440))
        kind = rnd.random()
        who, where, act = rnd.choice(NAMES), rnd.choice(PLACES), rnd.choice(ACTS)
        if kind < 0.5:
            d = said.date() + timedelta(days=rnd.randint(1, 40))
            text = f"あなたは{d.year}年{d.month}月{d.day}日に{who}と{where}で{act}予定だ。"
        elif kind < 0.7:
            text = f"あなたは毎週{rnd.choice('月火水木金土日')}曜日に{where}で{act}。"
        elif kind < 0.85:
            text = f"あなたは{rnd.choice(LIKES)}が好きで、よく{who}と{where}で食べる。"
        else:
            text = f"あなたの友達の{who}は{where}に住んでいて、最近{act}のが趣味だ。"
        out.append(Memory(f"syn{i}", user, f"{text}（{i}）", said))
    return out


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("memory_read", help="recall latency with many memories for one user")
    p.add_argument("--config", help="config (YAML) whose embedder embeds the queries")
    p.add_argument("--memories", type=int, default=10_000, help="memories of the user")
    p.add_argument("--store", choices=("memory", "qdrant"), default="memory",
                   help="in-memory store double or Qdrant local mode in a temp dir")
    p.add_argument("--queries", type=int, default=120, help="timed recalls per engine")
    p.add_argument("--index-budget-mb", type=float, default=None,
                   help="memory.index.budget_mb (default: the config's)")
    p.add_argument("--tmp", default=None,
                   help="where the temporary store goes (default: /dev/shm if present)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=lambda args: asyncio.run(_bench(args)))


async def _bench(args: argparse.Namespace) -> int:
    embedder, runtime, tz, memory = await _query_embedder(args.config)
    report = await _measure(args, embedder, tz, memory)
    if runtime is not None:
        await runtime.stop()
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        profile, index = report["profile"], report["index"]
        print(f"{args.memories} memories, store {args.store}, embedder {embedder.model_id};"
              f" filled in {report['fill_seconds']} s; index built in"
              f" {report['index_build_ms']:.0f} ms; profile block {profile['facts']}"
              f" facts, {profile['chars']} characters ({profile['over_budget']} over the "
              "budget)")
        print(f"  index: {index['rss_growth_bytes_per_memory']} bytes/memory (RSS growth"
              " while built: an upper bound, first-use allocations included, meaningful from"
              f" ~10,000 memories), {index['estimated_bytes_per_memory']} estimated, budget"
              f" {index['budget_mb']} MB, ready: {index['ready']}; process RSS"
              f" {report['rss_mb']['now']} MB (peak {report['rss_mb']['peak']} MB)")
        for name, r in report["engines"].items():
            print(f"  {name:<8} without embedding p50 {r['without_embedding_ms']['p50']} ms"
                  f" p95 {r['without_embedding_ms']['p95']} ms | with embedding p50"
                  f" {r['with_embedding_ms']['p50']} ms p95 {r['with_embedding_ms']['p95']} ms"
                  f" | read CPU p50 {r['read_cpu_ms']['p50']} ms p95"
                  f" {r['read_cpu_ms']['p95']} ms")
    sys.stdout.flush()
    return 0


async def _query_embedder(config: str | None) -> tuple[Any, Any, str, Any]:
    """The started embedder that embeds the queries (the config's, else a hash double),
    the runtime holding it (None for the double), the time zone and the ``memory:``
    settings (the config's, else the defaults)."""
    from omoide.memory.config import MemoryConfig
    from omoide.testing.doubles import HashEmbedder, HashEmbedderConfig

    if not config:
        embedder = HashEmbedder(HashEmbedderConfig(dims=384))
        await embedder.start()
        return embedder, None, "Asia/Tokyo", MemoryConfig()
    from omoide.commands._common import load_or_exit
    from omoide.runtime import Runtime
    settings = load_or_exit(config)
    runtime = Runtime(settings)
    await runtime.start("embed")
    return runtime.embedder, runtime, settings.assistant.timezone, settings.memory


def _bench_store(kind: str, tmp: Path) -> Any:
    """The store to fill: Qdrant local mode in ``tmp`` (the registry's ``qdrant``, as
    ``store: {use: qdrant, path: ...}`` builds it) or the in-memory double."""
    from omoide.testing.doubles import InMemoryStore, MemoryStoreConfig
    from omoide_bench.benches._components import build_component

    if kind == "qdrant":
        return build_component("store", "qdrant", {"path": str(tmp / "qdrant")},
                               needs="bench memory_read --store qdrant needs the store_qdrant"
                                     " plugin (pip install -e plugins/store_qdrant)")
    return InMemoryStore(MemoryStoreConfig())


async def _measure(args: argparse.Namespace, embedder: Any, tz: str, memory: Any
                   ) -> dict[str, Any]:
    """Fill a store with the user's memories, build the index, time the recalls of each
    engine; the report."""
    from omoide.memory.engine import MemoryEngine
    from omoide.testing.doubles import HashEmbedder, HashEmbedderConfig

    filler = HashEmbedder(HashEmbedderConfig(dims=embedder.dims, batch_size=1024))
    await filler.start()
    settings = _memory_settings(memory, args.index_budget_mb)
    with tempfile.TemporaryDirectory(prefix="omoide-bench-memory-", dir=_tmp_root(args)) as tmp:
        store = _bench_store(args.store, Path(tmp))
        await store.start()
        engine = MemoryEngine(settings, embedder=embedder, store=store, chat=None,
                              data_dir=Path(tmp), timezone=tz)
        await engine.start()
        now = datetime(2026, 9, 27, 21, 0, tzinfo=ZoneInfo(tz))
        user = "bench-user"
        fill_s = await _fill(store, filler, synthetic_memories(args.memories, user, now), user)
        rss_before = rss_bytes()
        t = time.perf_counter()
        await engine.index(user)
        index_ms = (time.perf_counter() - t) * 1000
        index = _index_report(engine, user, args.memories, rss_bytes() - rss_before)
        results: dict[str, Any] = {}
        profile = await engine.profile(user)
        for name in ("baseline", "robust"):
            results[name] = await _recall_latencies(engine, user, now, name, args.queries)
        await engine.stop()
        await store.stop()
    return {"memories": args.memories, "store": args.store, "embedder": embedder.model_id,
            "fill_seconds": round(fill_s, 1),
            "index_build_ms": round(index_ms, 1), "index": index,
            "profile": {"facts": len(profile.facts), "chars": profile.chars,
                        "over_budget": len(profile.overflow)},
            "rss_mb": rss_mb(), "engines": results}


def _memory_settings(memory: Any, budget_mb: float | None) -> Any:
    """The ``memory:`` settings the bench reads with: the given ones with the time budget
    lifted (a slow read is measured, not cut) and, if asked, another index budget."""
    update: dict[str, Any] = {"time_budget_ms": 60_000.0}
    if budget_mb is not None:
        update["index"] = memory.index.model_copy(update={"budget_mb": budget_mb})
    return memory.model_copy(update=update)


def _tmp_root(args: argparse.Namespace) -> str | None:
    if args.tmp:
        return str(args.tmp)
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def _index_report(engine: Any, user: str, memories: int, rss_growth: int) -> dict[str, Any]:
    """The person's index: whether it is ready (within the budget), its size per memory
    as the RSS grew while it was built and as the cache estimates it."""
    stats = engine.indexes.stats()
    ready = engine.indexes.peek(user) is not None
    return {"ready": ready, "budget_mb": engine.indexes.settings.budget_mb,
            "rss_growth_bytes_per_memory": round(rss_growth / max(1, memories)),
            "estimated_bytes_per_memory": round(stats.estimated_mb * 2**20 / max(1, memories))
            if ready else None}


async def _fill(store: Any, filler: Any, memories: list[Any], user: str) -> float:
    """Upsert ``memories`` in batches of 4096, their vectors made a batch at a time; the
    seconds it took."""
    from omoide.memory.store_payload import to_payload
    from omoide.types import VectorRecord

    t = time.perf_counter()
    for i in range(0, len(memories), 4096):
        chunk = memories[i:i + 4096]
        vectors = await filler.embed([m.text for m in chunk], "document")
        await store.upsert(user, [VectorRecord(m.id, v, to_payload(m))
                                  for m, v in zip(chunk, vectors, strict=True)])
    return time.perf_counter() - t


async def _recall_latencies(engine: Any, user: str, now: datetime, name: str,
                            queries: int) -> dict[str, Any]:
    """p50/p95 of ``queries`` recalls with engine ``name`` (after three warm-up ones):
    in all, without the query's embedding, the embedding alone, and the CPU time the
    read took on this thread (the embedder works on its own threads): on a busy machine
    the wall time waits for the CPU, the CPU time does not."""
    from omoide_bench.benches._stats import percentiles

    total: list[float] = []
    read: list[float] = []
    embed: list[float] = []
    cpu: list[float] = []
    for i in range(queries + 3):
        started = time.thread_time()
        recall = await engine.recall(user, QUESTIONS[i % len(QUESTIONS)], now, engine=name)
        spent = (time.thread_time() - started) * 1000
        if i < 3:
            continue  # warm-up
        total.append(recall.timings_ms["total"])
        embed.append(recall.timings_ms.get("embed", 0.0))
        read.append(recall.timings_ms["total"] - recall.timings_ms.get("embed", 0.0))
        cpu.append(spent)
    return {"with_embedding_ms": percentiles(total), "without_embedding_ms": percentiles(read),
            "embedding_ms": percentiles(embed), "read_cpu_ms": percentiles(cpu)}
