"""kill -9 at random points of extraction, many times; each fact must survive exactly once.

Run as a program (the reliability test does; so can a person)::

    python tests/reliability/kill9_extraction.py --trials 60 --seed 1 --out summary.json

A *zygote* process imports everything once, then for each trial forks:

1. a **victim** that journals a conversation and extracts it with the real stack of the
   write path — the journal (SQLite), the Qdrant local store, the stand-in chat model's
   rule-based extraction, a hashing embedder (a test double: the embedding is not what is
   tested) — and dies by SIGKILL at a random point: either at a random *step* (after the
   chat model answered, before or after any store write, after any journal commit; it
   kills itself there) or at a random *time* into extraction (the zygote kills it);
2. a **survivor** that starts the engine on the same data directory (finishing what the
   victim left), extracts what is left and writes out every memory and every batch.

A reference run without a kill gives what the chat model answered and what the store
should hold. Per trial, *lost* counts reference memories missing (by text, kind and what
supersedes them), *duplicated* counts memories beyond the reference, and *orphans* counts
stored memories that no finished batch's journaled plan accounts for. The summary is
JSON: trials, kills by kind, lost, duplicated, orphans, seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from omoide.memory.config import MemoryConfig
from omoide.memory.engine import MemoryEngine
from omoide.memory.language.lexicon import analyzer
from omoide.testing.doubles import HashEmbedder, HashEmbedderConfig
from omoide.types import Exchange
from omoide_standins.chat import StandinChat, StandinChatConfig
from omoide_store_qdrant.config import QdrantStoreConfig
from omoide_store_qdrant.store import QdrantStore

USER = "alice"
JST = ZoneInfo("Asia/Tokyo")
SAID_AT = datetime(2026, 9, 27, 19, 0, tzinfo=JST)   # a Sunday evening
CONVERSATION = [
    "来週の土曜日に友達と箱根に行くんだ",
    "ラーメンが好きなんだ",
    "友達の佐藤さんは札幌に住んでる",
    "友達の鈴木さんは仙台に住んでる",
    "明日は歯医者に行く予定なんだ",
    "最近、仕事終わりにギターの練習をしてるんだ",
    "猫を2匹飼ってるんだ",
    "友達の田中さんは福岡に住んでる",
    "箱根は来週の日曜日に変更になったんだ",
    "ラーメンより蕎麦派になった",
    "ラーメンが好きなんだ",
    "猫が3匹になったよ",
    "毎朝ジョギングをしてるんだ",
    "友達の高橋さんは名古屋に住んでる",
    "来月、京都に旅行する予定なんだ",
    "妹は看護師なんだ",
]


def engine_for(data: Path) -> MemoryEngine:
    config = MemoryConfig(extraction={"batch_exchanges": 4, "attempts": 1})
    return MemoryEngine(config, embedder=HashEmbedder(HashEmbedderConfig(dims=64)),
                        store=QdrantStore(QdrantStoreConfig(path=str(data / "qdrant"))),
                        chat=StandinChat(StandinChatConfig()), data_dir=data,
                        timezone="Asia/Tokyo")


async def started(data: Path) -> MemoryEngine:
    engine = engine_for(data)
    for component in (engine.embedder, engine.store, engine.chat):
        assert component is not None
        await component.start()
    await engine.start()
    return engine


async def stopped(engine: MemoryEngine) -> None:
    await engine.stop()
    for component in (engine.chat, engine.store, engine.embedder):
        assert component is not None
        await component.stop()


class Steps:
    """Counts the steps of extraction; SIGKILLs this process at step ``kill_at``."""

    def __init__(self, kill_at: int | None) -> None:
        self.kill_at = kill_at
        self.count = 0

    def step(self) -> None:
        self.count += 1
        if self.count == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)


def instrument(engine: MemoryEngine, steps: Steps) -> None:
    """Step after the chat model answers, around every store write, after every commit."""
    ask, upsert = engine._ask_for_facts, engine.store._upsert
    commit = engine.journal._transaction

    async def asking(exchanges: Any) -> Any:
        facts = await ask(exchanges)
        steps.step()
        return facts

    async def upserting(user: str, records: Any) -> None:
        steps.step()
        await upsert(user, records)
        steps.step()

    def committing(work: Any) -> Any:
        result = commit(work)
        steps.step()
        return result

    engine._ask_for_facts = asking  # type: ignore[method-assign]
    engine.store._upsert = upserting  # type: ignore[method-assign]
    engine.journal._transaction = committing  # type: ignore[method-assign]


async def victim(data: Path, kill_at: int | None, ready_fd: int | None) -> tuple[int, float]:
    """Journal the conversation, then extract it (dying at step ``kill_at`` if given).
    Returns the steps counted and the seconds from "go" (what a trial's timed kill
    counts from) to the end of the extraction."""
    engine = await started(data)
    for i, text in enumerate(CONVERSATION):
        await engine.record_exchange(Exchange(f"ex{i:02d}", USER, text, "うんうん",
                                              SAID_AT + timedelta(minutes=3 * i)))
    steps = Steps(kill_at)
    instrument(engine, steps)
    if ready_fd is not None:
        os.write(ready_fd, b"go")
        os.close(ready_fd)
    started_at = time.perf_counter()
    await engine.extract_now(USER)
    extraction_s = time.perf_counter() - started_at
    await stopped(engine)
    return steps.count, extraction_s


def interrupted_batches(data: Path) -> int:
    """Extraction batches the victim left unfinished (answered or planned)."""
    import sqlite3
    if not (data / "journal.sqlite3").exists():
        return 0
    db = sqlite3.connect(data / "journal.sqlite3")
    try:
        return int(db.execute("SELECT COUNT(*) FROM extraction_batches WHERE state IN"
                              " ('answered', 'planned')").fetchone()[0])
    except sqlite3.OperationalError:   # killed before the journal had its tables
        return 0
    finally:
        db.close()


async def survivor(data: Path) -> dict[str, Any]:
    """Start on what the victim left, extract the rest, report memories and batches."""
    interrupted = interrupted_batches(data)
    engine = await started(data)
    await engine.extract_now(USER)
    pending = await engine.pending(USER)
    memories = await engine.list_memories(USER)
    batches = await engine.journal.batches(USER)
    await stopped(engine)
    return {
        "interrupted_batches": interrupted,
        "pending": [p.exchanges for p in pending],
        "memories": [{"id": m.id, "text": m.text, "kind": m.kind,
                      "superseded_by": m.superseded_by} for m in memories],
        "planned_ids": sorted(p.memory.id for b in batches if b.state == "done"
                              for p in b.plan or () if p.memory is not None),
        "answered": [[f.text for f in b.facts] for b in batches if b.state == "done"],
    }


def outcome(report: dict[str, Any]) -> Counter[tuple[str, str, str | None]]:
    """What the store holds, independent of ids: text, kind, text of the superseder."""
    by_id = {m["id"]: m["text"] for m in report["memories"]}
    return Counter((m["text"], m["kind"], by_id.get(m["superseded_by"] or ""))
                   for m in report["memories"])


def fork(work: Any) -> int:
    """Run ``work()`` in a forked child; the child exits with its return value."""
    pid = os.fork()
    if pid == 0:
        try:
            code = int(work() or 0)
        except BaseException:  # noqa: BLE001 - report and die: this is the child
            import traceback
            traceback.print_exc()
            code = 70
        os._exit(code)
    return pid


def wait(pid: int) -> tuple[bool, int]:
    """(killed by SIGKILL, exit code) of child ``pid``."""
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return os.WTERMSIG(status) == signal.SIGKILL, -os.WTERMSIG(status)
    return False, os.WEXITSTATUS(status)


def run_survivor(data: Path, out: Path) -> dict[str, Any]:
    def work() -> int:
        out.write_text(json.dumps(asyncio.run(survivor(data)), ensure_ascii=False),
                       encoding="utf-8")
        return 0
    killed, code = wait(fork(work))
    if killed or code != 0:
        raise RuntimeError(f"the survivor failed (exit {code})")
    report: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return report


def reference(root: Path) -> tuple[dict[str, Any], int, float]:
    """A run without a kill: its report, its steps and how long extraction took."""
    data = root / "reference"
    steps_file = root / "reference.steps"

    def work() -> int:
        # timed kills count from the victim's "go", after its start and journaling: so
        # does the time they are drawn from
        steps, extraction_s = asyncio.run(victim(data, None, None))
        steps_file.write_text(json.dumps([steps, extraction_s]))
        return 0
    killed, code = wait(fork(work))
    if killed or code != 0:
        raise RuntimeError(f"the reference run failed (exit {code})")
    steps, seconds = json.loads(steps_file.read_text())
    return run_survivor(data, root / "reference.json"), int(steps), float(seconds)


def trial(root: Path, n: int, rng: random.Random, steps: int, seconds: float,
          expected: Counter[tuple[str, str, str | None]]) -> dict[str, Any]:
    data = root / f"trial{n:03d}"
    by_step = n % 2 == 0
    kill_at = rng.randint(1, steps) if by_step else None
    delay = rng.uniform(0, seconds) if not by_step else 0.0
    read_fd, write_fd = os.pipe()

    def work() -> int:
        os.close(read_fd)
        asyncio.run(victim(data, kill_at, write_fd))
        return 0
    pid = fork(work)
    os.close(write_fd)
    os.read(read_fd, 2)          # the victim starts extracting
    os.close(read_fd)
    if not by_step:
        time.sleep(delay)
        with contextlib.suppress(ProcessLookupError):   # it may have finished already
            os.kill(pid, signal.SIGKILL)
    killed, code = wait(pid)
    if not killed and code != 0:
        raise RuntimeError(f"trial {n}: the victim failed (exit {code})")
    report = run_survivor(data, root / f"trial{n:03d}.json")
    got = outcome(report)
    stored_ids = sorted(m["id"] for m in report["memories"])
    result = {"trial": n, "kill": f"step {kill_at}/{steps}" if by_step else
              f"after {delay:.3f}s", "killed": killed,
              "lost": sum((expected - got).values()),
              "duplicated": sum((got - expected).values()),
              "orphans": len(set(stored_ids) ^ set(report["planned_ids"])),
              "pending": sum(report["pending"]),
              "interrupted_batches": report["interrupted_batches"]}
    shutil.rmtree(data, ignore_errors=True)
    return result


def preload() -> None:
    """Import and load before any fork what every child would otherwise load again (the
    qdrant client takes seconds to import; the dictionary a fraction of one)."""
    import threading

    import qdrant_client  # noqa: F401
    from qdrant_client.local.qdrant_local import QdrantLocal  # noqa: F401
    from sudachipy import Dictionary

    analyzer().morphemes("箱根")
    Dictionary()
    assert threading.active_count() == 1, "no thread may run when the zygote forks"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=60)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, help="write the JSON summary here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)   # the engine's warnings are expected here
    preload()
    rng = random.Random(args.seed)
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="omoide-kill9-") as tmp:
        root = Path(tmp)
        ref, steps, seconds = reference(root)
        expected = outcome(ref)
        results = [trial(root, n, rng, steps, seconds, expected) for n in range(args.trials)]
    summary = {
        "trials": len(results), "reference_steps": steps,
        "reference_extraction_s": round(seconds, 3),
        "reference_memories": len(ref["memories"]),
        "reference_facts_answered": sum(len(a) for a in ref["answered"]),
        "killed": sum(r["killed"] for r in results),
        "restarts_finishing_a_batch": sum(r["interrupted_batches"] > 0 for r in results),
        "lost": sum(r["lost"] for r in results),
        "duplicated": sum(r["duplicated"] for r in results),
        "orphans": sum(r["orphans"] for r in results),
        "left_pending": sum(r["pending"] for r in results),
        "seconds": round(time.perf_counter() - began, 1),
        "results": results,
    }
    text = json.dumps(summary, ensure_ascii=False, indent=1)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    print(json.dumps({k: v for k, v in summary.items() if k != "results"}))
    bad = summary["lost"] or summary["duplicated"] or summary["orphans"] or \
        summary["left_pending"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
