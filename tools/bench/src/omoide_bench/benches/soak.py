"""``omoide bench soak``: many people talking for a while; nothing may get stuck or lost.

    omoide bench soak --config FILE [--users 20] [--seconds 60] [--seed 1] [--json]

Runs the configured server in this process (its data in a temporary directory) and lets
``--users`` people hold text turns over HTTP for ``--seconds``: plans, people, places,
preferences and their changes, questions, now and then a 4000-character monologue.
Extraction runs as in production (every 8 exchanges, on idle); at the end it is forced
for everyone. Reported: turns and their latency (p50/p95), turns with something in
``degraded``, exchanges journaled, exchanges still pending or quarantined after the
final extraction (stuck people), memories stored, and an audit of exactly-once storage:
every fact a finished extraction batch planned to store is in the store once, and the
store holds nothing no batch planned (``missing`` and ``extra`` must be 0).
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
from dataclasses import replace
from pathlib import Path
from typing import Any

FRIENDS = ["佐藤", "鈴木", "田中", "高橋", "伊藤", "渡辺", "山本", "中村", "小林", "加藤"]
PLACES = ["箱根", "京都", "金沢", "沖縄", "札幌", "鎌倉", "日光", "別府", "松本", "横浜"]
WHEN = ["明日", "来週の土曜日", "今度の日曜日", "来週の金曜日", "明後日"]
LIKES = ["ラーメン", "蕎麦", "チーズケーキ", "日本酒", "カレー", "寿司", "コーヒー", "抹茶"]
HABITS = ["最近、仕事終わりにギターの練習をしてるんだ", "毎朝ジョギングをしてるんだ",
          "週に2回ジムに通ってるんだ", "最近ヨガを始めたんだ", "毎晩日記を書いてるんだ"]
QUESTIONS = ["週末の予定覚えてる?", "私の好きな食べ物って何だっけ?", "日本で一番高い山は？",
             "おすすめの映画ある？", "こんにちは"]


def utterance(rng: random.Random) -> str:
    """One thing a person says (the stand-in extractor reads most of these as facts)."""
    roll = rng.random()
    if roll < 0.25:
        return f"{rng.choice(WHEN)}に{rng.choice(FRIENDS)}さんと{rng.choice(PLACES)}に行くんだ"
    if roll < 0.4:
        return f"友達の{rng.choice(FRIENDS)}さんは{rng.choice(PLACES)}に住んでるんだ"
    if roll < 0.55:
        return f"{rng.choice(LIKES)}が好きなんだ"
    if roll < 0.62:
        a, b = rng.sample(LIKES, 2)
        return f"{a}より{b}派になった"
    if roll < 0.7:
        return f"{rng.choice(PLACES)}に行くの、{rng.choice(WHEN)}に変更になったんだ"
    if roll < 0.8:
        return rng.choice(HABITS)
    if roll < 0.995:
        return rng.choice(QUESTIONS)
    story = "友達と旅行に行って、温泉に入って、美味しいものを食べたんだ。"
    return ("昔の話なんだけど、" + story * 120)[:4000]


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("soak", help="many people talking for a while; nothing stuck or lost")
    p.add_argument("--config", required=True, help="config (YAML) of the server to soak")
    p.add_argument("--users", type=int, default=20, help="people talking at once")
    p.add_argument("--seconds", type=float, default=60.0, help="how long they talk")
    p.add_argument("--seed", type=int, default=1, help="seed of what they say")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=lambda args: asyncio.run(_bench(args)))


def _rss_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return float("nan")


async def _bench(args: argparse.Namespace) -> int:
    import httpx

    from omoide.commands._common import load_or_exit
    from omoide.config import wanted_components
    from omoide.plugins import build_registry
    from omoide.server.app import create_app
    from omoide_bench.benches._stats import percentiles

    settings = load_or_exit(args.config)
    with tempfile.TemporaryDirectory(prefix="omoide-soak-") as tmp:
        envelope = settings.envelope.model_copy(update={
            "server": settings.server.model_copy(update={"data_dir": tmp})})
        components = {k: v for k, v in settings.components.items()
                      if not k.startswith("devices[")}   # no device endpoints needed
        store = components["store"]
        if getattr(store.config, "path", None):        # a local store: soak a fresh one
            components["store"] = replace(store, config=store.config.model_copy(
                update={"path": str(Path(tmp) / "store")}))
        settings = replace(settings, envelope=envelope, components=components)
        registry = build_registry(wanted_components(settings.envelope))
        app = create_app(settings, registry)
        server = app.state.omoide
        await server.start()
        if not server.ready.is_set():
            print(f"the server did not start: {server.health()}", file=sys.stderr)
            return 1
        report = await _soak(args, app, httpx, percentiles)
        await server.stop()
    load = os.getloadavg()
    report["load_average"] = [round(x, 2) for x in load]
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        t = report["turns"]
        print(f"{args.users} people for {args.seconds:g} s: {t['count']} turns,"
              f" p50 {t['latency_ms']['p50']} ms p95 {t['latency_ms']['p95']} ms,"
              f" {t['degraded']} degraded, {t['failed']} failed")
        x = report["extraction"]
        print(f"  journaled {x['exchanges']} exchanges; after the final extraction"
              f" {x['pending']} pending, {x['quarantined']} quarantined,"
              f" {x['stuck_people']} people stuck")
        a = report["audit"]
        print(f"  {a['memories']} memories; exactly once: {a['missing']} missing,"
              f" {a['extra']} extra; RSS {report['rss_mb']['before']} ->"
              f" {report['rss_mb']['after']} MB; load {report['load_average']}")
    bad = (report["extraction"]["stuck_people"] or report["audit"]["missing"]
           or report["audit"]["extra"] or report["turns"]["failed"])
    return 1 if bad else 0


async def _soak(args: argparse.Namespace, app: Any, httpx: Any, percentiles: Any,
                ) -> dict[str, Any]:
    rng = random.Random(args.seed)
    users = [f"soak{i:03d}" for i in range(args.users)]
    latencies: list[float] = []
    degraded = failed = 0
    rss_before = _rss_mb()
    transport = httpx.ASGITransport(app=app)
    admin = {"Authorization": f"Bearer {app.state.tokens.admin_token()}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost",
                                 headers=admin, timeout=120) as client:
        deadline = time.monotonic() + args.seconds

        async def talk(user: str, seed: int) -> None:
            nonlocal degraded, failed
            person = random.Random(seed)
            while time.monotonic() < deadline:
                started = time.perf_counter()
                r = await client.post("/v1/turns", json={"user": user,
                                                         "text": utterance(person)})
                latencies.append((time.perf_counter() - started) * 1000)
                if r.status_code != 200:
                    failed += 1
                elif r.json()["degraded"]:
                    degraded += 1
                await asyncio.sleep(person.uniform(0, 0.05))

        await asyncio.gather(*(talk(u, rng.randrange(1 << 30)) for u in users))
        memory = app.state.omoide.memory
        await memory.wait_for_extractions()
        for user in users:
            await client.post("/v1/memory/extract", json={"user": user})
        pending = (await client.get("/v1/memory/pending")).json()["pending"]
        audit = await _audit(memory, users)
    stuck = {p["user"] for p in pending if p["exchanges"] or p["quarantined"]}
    return {
        "users": args.users, "seconds": args.seconds,
        "turns": {"count": len(latencies), "latency_ms": percentiles(latencies),
                  "degraded": degraded, "failed": failed},
        "extraction": {"exchanges": await memory.journal.count_exchanges(),
                       "pending": sum(p["exchanges"] for p in pending),
                       "quarantined": sum(p["quarantined"] for p in pending),
                       "stuck_people": len(stuck)},
        "audit": audit,
        "rss_mb": {"before": rss_before, "after": _rss_mb()},
    }


async def _audit(memory: Any, users: list[str]) -> dict[str, int]:
    """Every memory a finished batch planned is stored once; nothing else is stored."""
    missing = extra = total = 0
    for user in users:
        planned = {p.memory.id for b in await memory.journal.batches(user)
                   if b.state == "done" for p in b.plan or () if p.memory is not None}
        stored = [m.id for m in await memory.list_memories(user)]
        total += len(stored)
        missing += len(planned - set(stored))
        extra += len(set(stored) - planned) + len(stored) - len(set(stored))
    return {"memories": total, "missing": missing, "extra": extra}
