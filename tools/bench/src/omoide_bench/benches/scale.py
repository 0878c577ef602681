"""``omoide bench scale``: many people, many memories, many clients — through the real
store and a real server process; with ``--workers 1,3``, several server processes on a
shared PostgreSQL and a Chroma server instead (:mod:`omoide_bench.benches.workers`).

    omoide bench scale [--config configs/offline.yaml] [--people 1000] [--memories 100]
                       [--store qdrant[,chroma_server,...]] [--clients 32[,100]]
                       [--turns N] [--dir DIR] [--sample 20] [--queries 120] [--json]

For each store (side by side when several are named):

1. **fill** ``--people`` × ``--memories`` through the store plugin: synthetic Japanese
   facts (dated plans, weekly habits, likes, friends). Their vectors are the configured
   embedder's, but **per sentence pattern**: each fact is embedded with its date and
   counter left out, once per distinct pattern (about 23,000 whatever the number of
   people; kept in ``patterns-<model>.npz``), because embedding a million facts one by
   one would take hours. Dense search therefore behaves as with real vectors, except
   that it cannot tell two dates apart. With ``--dir`` the filled data is kept and
   reused by the next run. Qdrant's local mode commits (and syncs) every point on its
   own, so filling is bound by the disk: for bench data, ``eatmydata omoide bench scale
   ... --no-server`` fills 10,000 people in minutes instead of hours (Debian's
   ``eatmydata`` turns fsync into a no-op for that one process); measure in a later run.
2. **in process**: the time to open the store, a store search of one person (no index,
   first time), the wall time ÷ people of asking the store for C people at once (their
   first pages, then searches; C = the first ``--clients``), each sampled person's index
   build, and recall p50/p95 with and without the query embedding (queries are real
   questions embedded by the configured embedder, its query cache off). The recall timed
   is the one a turn makes: ``MemoryEngine.recall(user, text, now)``, the call behind the
   pipeline's ``MemoryService.recall`` (``bench memory_read`` times the same call), with
   the config's ``memory:`` section (time budget lifted), after each sampled person's
   index is ready (built, saved, then loaded by a second engine); the process's RSS
   after them.
3. **a server process** (``omoide serve`` on the config with this store): seconds until
   ``/healthz`` is ready, RSS and open files, then rounds of memory questions from C
   concurrent HTTP clients — right after ready (people nobody asked yet) and settled
   (the same people again, other questions, once the server's CPU has gone quiet,
   i.e. their indexes are built) — with turn p50/p95, retrieve p95, the
   share of turns whose prompt carried the memory they asked about (recalled or in the
   profile block) and that ran out of time; finally how long after
   the load until extraction has caught up (nothing pending; ``--extraction-idle-s``
   sets the idle trigger, which is part of that time).

Stores: ``qdrant`` (local mode, a store per person), ``qdrant_payload`` (local mode, one
shared filtered collection), ``chroma`` (embedded), ``chroma_server`` (``chroma run``,
started by the bench).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, suppress
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np

from omoide.errors import ComponentError
from omoide_bench.benches._stats import rss_mb
from omoide_bench.benches.memory_read import ACTS, LIKES, NAMES, PLACES, synthetic_memories

NOW = datetime(2026, 9, 27, 21, 0, tzinfo=ZoneInfo("Asia/Tokyo"))
STORES = ("qdrant", "qdrant_payload", "chroma", "chroma_server")
DEFAULT_CONFIG = Path("configs/offline.yaml")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("scale", help="many people and clients through the real store and server")
    p.add_argument("--config", default=str(DEFAULT_CONFIG),
                   help="config (YAML) whose embedder and components the server runs")
    p.add_argument("--people", type=int, help="people in the store (default 1000)")
    p.add_argument("--memories", type=int, help="memories per person (default 100)")
    p.add_argument("--store", default="qdrant",
                   help=f"store(s), comma-separated, run side by side: {', '.join(STORES)}")
    p.add_argument("--clients",
                   help="concurrent clients per round, comma-separated (a round pair each;"
                        " default 32)")
    p.add_argument("--turns", type=int, help="turns per round (default: 4 x clients)")
    p.add_argument("--round-people", default="0",
                   help="people a round's turns go to, round robin: a number, 'clients' (one"
                   " person per client), or 0 (default: one per turn)")
    p.add_argument("--dir", help="keep the filled data here and reuse it next time")
    p.add_argument("--sample", type=int, default=20, help="people timed in process")
    p.add_argument("--queries", type=int, default=120, help="recalls timed in process")
    p.add_argument("--index-budget-mb", type=float, default=None,
                   help="memory.index.budget_mb for both phases (default: the config's)")
    p.add_argument("--extraction-idle-s", type=float, default=10.0,
                   help="the server's extraction idle trigger during the bench")
    p.add_argument("--extraction-wait-s", type=float, default=300.0,
                   help="how long to wait for extraction to catch up after the load")
    p.add_argument("--no-server", action="store_true", help="skip the server phase")
    p.add_argument("--restart", action="store_true",
                   help="then restart the server on the same data (saved indexes) and run"
                   " a round on the people of the first one right after ready")
    p.add_argument("--no-empty-baseline", action="store_true",
                   help="skip timing a server start over an empty store first")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=_run)   # --workers: added by omoide_bench.benches.workers


SCALE_DEFAULTS: dict[str, Any] = {"people": 1000, "memories": 100, "clients": "32",
                                  "turns": 0}


def _run(args: argparse.Namespace) -> int:
    for name, value in SCALE_DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    return asyncio.run(_bench(args))


# -- the data ----------------------------------------------------------------------------
def person(i: int) -> str:
    return f"p{i:05d}"


def person_memories(i: int, memories: int) -> list[Any]:
    """Person ``i``'s memories (deterministic: the same every run)."""
    return synthetic_memories(memories, person(i), NOW, seed=1000 + i)


@dataclass(frozen=True)
class Question:
    """A memory question and the id of the memory it asks about: the turn has its
    memory when that one reaches the prompt, recalled or in the profile block (a weekly
    habit or a friend is a profile fact), or another memory that says the same things
    the question names (``alike``: with 100,000 memories from a small vocabulary, 76
    say that you often eat sushi with 蓮, and the question cannot tell them apart)."""

    text: str
    about: str = ""
    alike: frozenset[str] = frozenset()

    def answered_by(self, ids: set[str] | frozenset[str]) -> bool:
        """Whether a turn whose prompt carried the memories ``ids`` had its memory."""
        if not self.about:
            return bool(ids)
        return self.about in ids or not self.alike.isdisjoint(ids)


def questions_about(memories: list[Any]) -> list[Question]:
    """Memory questions a person could ask about their own memories (each names what one
    of them contains, asks in a way the recall gate lets through, and varies enough
    that other people rarely ask the very same words: the query cache must not make
    the load lighter than real questions would)."""
    asked: list[tuple[str, str, tuple[str, ...]]] = []
    for m in memories:
        text = m.text
        who = next((n for n in NAMES if n in text), None)
        where = next((p for p in PLACES if p in text), None)
        like = next((x for x in LIKES if x in text), None)
        act = next((a for a in ACTS if a in text), None)
        if "予定だ" in text and who and where and act:
            asked.append((f"{who}と{where}で{act}のっていつだっけ？", m.id,
                          ("予定だ", f"{who}と{where}で{act}")))
        elif "毎週" in text and where:
            day = text[text.index("毎週") + 2]
            asked.append((f"毎週{day}曜日に{where}で何してるんだっけ？", m.id,
                          (f"毎週{day}曜日に{where}で",)))
        elif like and who:
            asked.append((f"{who}とよく食べる{like}のこと、覚えてる？", m.id,
                          (f"{like}が好きで、よく{who}と",)))
        elif who and where and "友達" in text:
            asked.append((f"{where}に住んでる{who}の趣味ってなんだっけ？", m.id,
                          (f"友達の{who}は{where}に住んで",)))
        if len(asked) >= 12:
            break
    if not asked:
        return [Question("最近の予定覚えてる？")]
    alike: dict[str, set[str]] = {about: set() for _, about, _ in asked}
    for m in memories:
        for _, about, says in asked:
            if m.id != about and all(s in m.text for s in says):
                alike[about].add(m.id)
    return [Question(text, about, frozenset(alike[about])) for text, about, _ in asked]


# -- the store under test ---------------------------------------------------------------
def store_section(kind: str, root: Path, chroma_port: int | None) -> dict[str, Any]:
    if kind == "qdrant":
        return {"use": "qdrant", "path": str(root / "qdrant")}
    if kind == "qdrant_payload":
        return {"use": "qdrant", "path": str(root / "qdrant-payload"), "partition": "payload"}
    if kind == "chroma":
        return {"use": "chroma", "path": str(root / "chroma")}
    if kind == "chroma_server":
        return {"use": "chroma", "host": "127.0.0.1", "port": chroma_port}
    raise SystemExit(f"unknown store {kind!r}; choose from {', '.join(STORES)}")


def settings_for(raw: dict[str, Any], store: dict[str, Any], data_dir: Path,
                 budget_mb: float | None, query_cache: bool,
                 extraction_idle_s: float | None = None) -> dict[str, Any]:
    """The config of one phase: the given one with this store, data dir and overrides."""
    out: dict[str, Any] = json.loads(json.dumps(raw))
    out["store"] = store
    server = out.setdefault("server", {})
    server["data_dir"] = str(data_dir)
    # every simulated person calls from this machine: lift the new-user limit per source
    server.setdefault("limits", {})["new_users_per_source"] = 0
    memory = out.setdefault("memory", {})
    if budget_mb is not None:
        memory.setdefault("index", {})["budget_mb"] = budget_mb
    if extraction_idle_s is not None:
        memory.setdefault("extraction", {})["idle_minutes"] = extraction_idle_s / 60
    if not query_cache:
        out["embed"]["query_cache"] = 0
    return out


def pct(values: list[float]) -> dict[str, float]:
    from omoide_bench.benches._stats import percentiles
    return percentiles(values)


# -- phase 1: fill ----------------------------------------------------------------------
_DATE = re.compile(r"\d+年\d+月\d+日に")
_COUNTER = re.compile(r"（\d+）$")


def pattern(text: str) -> str:
    """A synthetic fact without its date and counter (what its vector is made from)."""
    return _COUNTER.sub("", _DATE.sub("", text))


class PatternVectors:
    """Document vectors of sentence patterns, embedded once each and kept in a file."""

    def __init__(self, embedder: Any, path: Path) -> None:
        self.embedder = embedder
        self.path = path
        self._known: dict[str, Any] = {}
        self._new = 0
        if path.exists():
            with np.load(path, allow_pickle=False) as saved:
                self._known = dict(zip(saved["keys"].tolist(), saved["vectors"], strict=True))

    async def vectors(self, texts: list[str]) -> Any:
        keys = [pattern(t) for t in texts]
        missing = sorted({k for k in keys if k not in self._known})
        for i in range(0, len(missing), 64):
            batch = missing[i:i + 64]
            for key, vector in zip(batch, await self.embedder.embed(batch, "document"),
                                   strict=True):
                self._known[key] = vector
            self._new += len(batch)
            if self._new >= 2000:
                self.save()
        return np.stack([self._known[k] for k in keys])

    def save(self) -> None:
        if self._new:
            keys = list(self._known)
            tmp = self.path.with_suffix(".tmp.npz")
            np.savez(tmp, keys=np.array(keys), vectors=np.stack([self._known[k] for k in keys]))
            os.replace(tmp, self.path)
            self._new = 0


async def fill(store: Any, patterns: PatternVectors, people: int, memories: int,
               progress: Callable[[str], None]) -> float:
    from omoide.memory.store_payload import to_payload
    from omoide.types import VectorRecord

    started = time.perf_counter()
    step = max(1, people // 20)
    for i in range(people):
        ms = person_memories(i, memories)
        for j in range(0, len(ms), 1000):
            chunk = ms[j:j + 1000]
            vectors = await patterns.vectors([m.text for m in chunk])
            await store.upsert(person(i), [VectorRecord(m.id, v, to_payload(m))
                                           for m, v in zip(chunk, vectors, strict=True)])
        if (i + 1) % step == 0 or i + 1 == people:
            patterns.save()
            progress(f"filled {i + 1}/{people} people in {time.perf_counter() - started:.0f} s")
    return time.perf_counter() - started


# -- phase 2: in process ----------------------------------------------------------------
async def in_process(raw: dict[str, Any], work: Path, args: argparse.Namespace,
                     marker: Path, progress: Callable[[str], None]) -> dict[str, Any]:
    """The store and the memory engine in this process: open and fill the store (once per
    ``marker``), time its reads, build and load indexes, time recalls."""
    from omoide.config import validate_config
    from omoide.memory.engine import MemoryEngine
    from omoide.runtime import Runtime

    settings = validate_config(raw, source="bench scale")
    runtime = Runtime(settings)
    await runtime.start("embed")
    embedder = runtime.embedder
    try:
        out = await open_and_fill(runtime, work, args, marker, progress)
        memory = settings.memory.model_copy(update={"time_budget_ms": 60_000.0})
        data_dir = work / f"in-process-run-{int(time.time())}"  # no saved indexes yet
        sample = random.Random(5).sample(range(args.people), min(args.sample, args.people))

        def new_engine() -> MemoryEngine:
            return MemoryEngine(memory, embedder=embedder, store=runtime.store, chat=None,
                                data_dir=data_dir, timezone=settings.assistant.timezone)

        out["store_search_ms"] = pct(await store_search_times(runtime.store, embedder, args))
        out["store_together_ms"] = await store_reads_together(runtime.store, embedder, args)
        first = new_engine()
        await first.start()
        out["index_build_ms"] = pct(await index_times(first, sample))
        await first.stop()  # saves the indexes
        engine = new_engine()
        await engine.start()
        try:
            out["index_load_ms"] = pct(await index_times(engine, sample))
            out["indexed"] = asdict(engine.indexes.stats())
            progress(f"indexes built and loaded for {len(sample)} people")
            out.update(await timed_recalls(engine, sample, args))
            out["rss_mb"] = rss_mb()
        finally:
            await engine.stop()
    finally:
        await runtime.stop()
    return out


async def open_and_fill(runtime: Any, work: Path, args: argparse.Namespace, marker: Path,
                        progress: Callable[[str], None]) -> dict[str, Any]:
    """Start and open the runtime's store (``open_ms``), and fill it unless ``marker``
    says an earlier run did (``fill_s``)."""
    embedder = runtime.embedder
    fingerprint = await embedder.fingerprint()
    out: dict[str, Any] = {}
    for module in ("qdrant_client", "chromadb"):  # time the store, not its imports
        with suppress(ImportError):
            importlib.import_module(module)
    started = time.perf_counter()
    await runtime.start("store")
    await runtime.store.open(fingerprint)
    out["open_ms"] = round((time.perf_counter() - started) * 1000, 1)
    if not marker.exists():
        progress(f"filling {args.people} x {args.memories}")
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", fingerprint.model)
        patterns = PatternVectors(embedder, work.parent / f"patterns-{name}.npz")
        out["fill_s"] = round(await fill(runtime.store, patterns, args.people,
                                         args.memories, progress), 1)
        marker.write_text(json.dumps({"people": args.people, "memories": args.memories,
                                      "model": fingerprint.model}), encoding="utf-8")
    else:
        out["fill_s"] = "reused"
    return out


async def index_times(engine: Any, sample: list[int]) -> list[float]:
    """How long (ms) ``engine`` takes to index each sampled person."""
    times = []
    for i in sample:
        t = time.perf_counter()
        await engine.index(person(i))
        times.append((time.perf_counter() - t) * 1000)
    return times


async def timed_recalls(engine: Any, sample: list[int], args: argparse.Namespace
                        ) -> dict[str, Any]:
    """``args.queries`` recalls (after three warm-up ones) of questions about the sampled
    people's memories: latency with and without the embedding, the share answered from
    memory, and the failed ones."""
    plan = [(person(i), q) for i in sample
            for q in questions_about(person_memories(i, args.memories))]
    random.Random(6).shuffle(plan)
    total: list[float] = []
    without: list[float] = []
    got = failed = 0
    for k in range(args.queries + 3):
        user, question = plan[k % len(plan)]
        recall = await engine.recall(user, question.text, NOW)
        if recall.error or recall.timed_out:
            failed += 1
        if k < 3:
            continue  # warm-up
        got += question.answered_by(
            {r.memory.id for r in recall.memories} | recall.profile.ids)
        total.append(recall.timings_ms["total"])
        without.append(recall.timings_ms["total"] - recall.timings_ms.get("embed", 0.0))
    return {"recall_with_embedding_ms": pct(total), "recall_without_embedding_ms": pct(without),
            "recall_with_memory": round(got / max(1, len(total)), 3), "recall_failed": failed}


async def first_questions(embedder: Any, people: list[int], memories: int,
                          ) -> list[tuple[str, Any]]:
    """Each person's id and the query vector of their first question (made before any
    store is timed)."""
    return [(person(i), await embedder.embed_query(
        questions_about(person_memories(i, memories))[0].text)) for i in people]


async def store_search_times(store: Any, embedder: Any, args: argparse.Namespace,
                             ) -> list[float]:
    """One person's nearest memories asked of the store itself, the first time for that
    person in this process (the dense recall of a person whose index is not ready);
    the query vectors are made first, so only the store is timed."""
    from omoide.memory.stage_views import EARLY_CANDIDATES

    people = random.Random(7).sample(range(args.people), min(args.sample, args.people))
    asked = await first_questions(embedder, people, args.memories)
    times = []
    for user, vector in asked:
        started = time.perf_counter()
        await store.search(user, vector, EARLY_CANDIDATES)
        times.append((time.perf_counter() - started) * 1000)
    return times


async def store_reads_together(store: Any, embedder: Any, args: argparse.Namespace,
                               ) -> dict[str, float]:
    """Wall time ÷ people of asking the store for many people at once, each for the first
    time in this process: an index build's first page, then a search (the reads of
    people whose turns come together; a store may answer several in one call)."""
    from omoide.memory.stage_views import EARLY_CANDIDATES

    count = max(1, min(int(args.clients.split(",")[0]), args.people // 2))
    people = random.Random(8).sample(range(args.people), min(2 * count, args.people))
    pages, searched = people[:count], people[count:] or people[:count]
    asked = await first_questions(embedder, searched, args.memories)
    started = time.perf_counter()
    await asyncio.gather(*(store.scroll_page(person(i)) for i in pages))
    page_ms = (time.perf_counter() - started) * 1000 / count
    started = time.perf_counter()
    await asyncio.gather(*(store.search(user, vector, EARLY_CANDIDATES)
                           for user, vector in asked))
    search_ms = (time.perf_counter() - started) * 1000 / count
    return {"people": count, "first_page": round(page_ms, 1), "search": round(search_ms, 1)}


# -- phase 3: a server process ----------------------------------------------------------
def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def proc_stats(pid: int | None) -> dict[str, float]:
    """RSS (MB) and open file descriptors of a process (Linux /proc)."""
    if pid is None:
        return {}
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        rss_kb = next(int(line.split()[1]) for line in status.splitlines()
                      if line.startswith("VmRSS"))
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, StopIteration):
        return {}
    return {"rss_mb": round(rss_kb / 1024, 1), "open_files": fds}


@dataclass
class Round:
    name: str
    clients: int
    turns: int
    turn_ms: dict[str, float] = field(default_factory=dict)
    retrieve_ms: dict[str, float] = field(default_factory=dict)
    with_memory: float = 0.0
    out_of_time: float = 0.0
    failed: int = 0
    seconds: float = 0.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def until_quiet(*pids: int, share: float = 0.15, window_s: float = 1.0,
                      limit_s: float = 300.0) -> float:
    """Wait until the processes together use less than ``share`` of a core over
    ``window_s`` (the server, and a store server it waits on)."""
    started = time.monotonic()
    while time.monotonic() - started < limit_s:
        before = sum(cpu_seconds(p) for p in pids)
        await asyncio.sleep(window_s)
        if sum(cpu_seconds(p) for p in pids) - before < share * window_s:
            break
    return time.monotonic() - started


class Sampler:
    """Peak RSS and open files of a process, sampled in the background."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak: dict[str, float] = {}
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            for k, v in proc_stats(self.pid).items():
                self.peak[k] = max(self.peak.get(k, 0.0), v)
            await asyncio.sleep(0.25)

    def __enter__(self) -> Sampler:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()


async def run_round(client: Any, url: str, name: str, plan: list[tuple[str, Question]],
                    clients: int) -> Round:
    turns: list[float] = []
    retrieves: list[float] = []
    got = late = failed = 0
    todo: Iterator[tuple[str, Question]] = iter(plan)

    async def one_client() -> None:
        nonlocal got, late, failed
        for user, question in todo:
            t = time.perf_counter()
            try:
                r = await client.post(f"{url}/v1/turns", json={
                    "user": user, "text": question.text, "now": NOW.isoformat()})
                body = r.json()
                ok = r.status_code == 200
            except Exception:  # noqa: BLE001 - counted as a failed turn
                ok, body = False, {}
            turns.append((time.perf_counter() - t) * 1000)
            if not ok:
                failed += 1
                continue
            stage = (body.get("trace") or {}).get("stages", {}).get("retrieve") or {}
            if stage.get("end_ms") is not None:
                retrieves.append(stage["end_ms"] - stage["start_ms"])
            if "time budget" in (stage.get("note") or ""):
                late += 1
            got += question.answered_by(
                {m["id"] for m in body.get("memories") or []}
                | {f["id"] for f in body.get("profile") or []})

    started = time.perf_counter()
    await asyncio.gather(*(one_client() for _ in range(clients)))
    n = max(1, len(plan))
    return Round(name, clients, len(plan), pct(turns), pct(retrieves), round(got / n, 3),
                 round(late / n, 3), failed, round(time.perf_counter() - started, 1))


def round_people(option: str, clients: int) -> int:
    """People per round from ``--round-people`` (0: one per turn)."""
    return clients if option == "clients" else int(option)


def round_plan(people: list[int], turns: int, memories: int, offset: int,
               round_people: int) -> list[tuple[str, Question]]:
    chosen = people[:round_people] if round_people else people[:turns]
    asked: dict[int, list[Question]] = {}
    plan = []
    for k in range(turns):
        i = chosen[k % len(chosen)]
        qs = asked.setdefault(i, questions_about(person_memories(i, memories)))
        plan.append((person(i), qs[(offset + k // len(chosen)) % len(qs)]))
    return plan


def yaml_data(path: Path) -> dict[str, Any]:
    import yaml

    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


class ServerProcess:
    """``omoide serve`` on a config, started and stopped by the bench."""

    def __init__(self, raw: dict[str, Any], work: Path, name: str) -> None:
        import yaml

        self.config = work / f"{name}-{int(time.time())}.yaml"
        self.config.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
        self.log_path = self.config.with_suffix(".log")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    async def start(self, client: Any, out: dict[str, Any]) -> int:
        """Start it; record ``listening_s`` and ``ready_s``; return its pid."""
        import httpx

        omoide = Path(sys.executable).with_name("omoide")
        command = [str(omoide), "serve", "--config", str(self.config), "--port", str(self.port)]
        if profiles := os.environ.get("OMOIDE_BENCH_PROFILE_DIR"):
            # the server's main thread under cProfile between two SIGUSR1s (profiling)
            Path(profiles).mkdir(parents=True, exist_ok=True)
            command = [sys.executable, "-m", "omoide_bench.profiled",
                       str(Path(profiles) / f"{self.config.stem}.prof"), *command]
        with self.log_path.open("wb") as log:
            started = time.monotonic()
            self.proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        status = "down"
        while status != "ready":
            if self.proc.poll() is not None or time.monotonic() - started > 600:
                raise RuntimeError(f"the server did not become ready ({status}); see"
                                   f" {self.log_path}")
            try:
                status = (await client.get(f"{self.url}/healthz")).json()["status"]
                out.setdefault("listening_s", round(time.monotonic() - started, 2))
            except (httpx.TransportError, ValueError):
                pass
            await asyncio.sleep(0.05)
        out["ready_s"] = round(time.monotonic() - started, 2)
        from omoide.server.tokens import TokenStore

        data_dir = Path(yaml_data(self.config)["server"]["data_dir"])
        client.headers["Authorization"] = f"Bearer {TokenStore(data_dir).admin_token()}"
        return self.proc.pid

    def profiling(self, on: bool) -> None:
        """Start (``on``) or stop its profile, when it runs under one
        (``OMOIDE_BENCH_PROFILE_DIR``: :mod:`omoide_bench.profiled`)."""
        profiles = os.environ.get("OMOIDE_BENCH_PROFILE_DIR")
        if self.proc is None or not profiles:
            return
        self.proc.send_signal(signal.SIGUSR1)
        # and each thread's CPU seconds so far (the profile sees the main thread only)
        threads: dict[str, float] = {}
        for task in Path(f"/proc/{self.proc.pid}/task").glob("*"):
            with suppress(OSError, IndexError, ValueError):
                stat = (task / "stat").read_text()
                name = (task / "comm").read_text().strip()
                fields = stat.rsplit(")", 1)[1].split()
                ticks = int(fields[11]) + int(fields[12])      # utime + stime
                name = "main" if task.name == str(self.proc.pid) else f"other ({name})"
                threads[name] = threads.get(name, 0.0) + ticks / os.sysconf("SC_CLK_TCK")
        path = Path(profiles) / f"{self.config.stem}.threads.jsonl"
        with path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"on": on, "cpu_s": threads}) + "\n")

    def stop(self) -> str:
        """Stop it; return its log."""
        if self.proc is not None:
            if os.environ.get("OMOIDE_BENCH_PROFILE_DIR"):
                # uvicorn raises SIGTERM again once it has stopped, which would end the
                # process before cProfile writes; SIGINT ends it with KeyboardInterrupt
                self.proc.send_signal(signal.SIGINT)
            else:
                self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        return self.log_path.read_text(errors="replace")


async def empty_baseline(raw: dict[str, Any], work: Path) -> dict[str, Any]:
    """Seconds to ready and RSS of the same server over an empty store."""
    import httpx

    empty = json.loads(json.dumps(raw))
    store = empty["store"]
    if "path" in store:
        store["path"] = str(work / f"empty-store-{int(time.time())}")
    else:
        store["collection"] = f"empty{int(time.time())}"
    out: dict[str, Any] = {}
    server = ServerProcess(empty, work, "empty")
    try:
        async with httpx.AsyncClient(timeout=60) as client:
            pid = await server.start(client, out)
            out["at_ready"] = proc_stats(pid)
    finally:
        server.stop()
        await remove_empty_store(store)
    return out


async def remove_empty_store(store: dict[str, Any]) -> None:
    """Delete the empty store of the baseline (a directory, or a collection on the
    Chroma server, which later runs would otherwise find there)."""
    if "path" in store:
        shutil.rmtree(store["path"], ignore_errors=True)
        return
    from omoide_bench.benches._components import build_component

    chroma = build_component("store", store["use"],
                             {k: v for k, v in store.items() if k != "use"},
                             needs=f"bench scale needs the {store['use']} store plugin")
    try:
        await chroma.start()
        await chroma.reset()
    except ComponentError as exc:  # a leftover collection does not void the run
        print(f"[bench scale] could not delete the empty collection {store['collection']}:"
              f" {exc}", file=sys.stderr)
    finally:
        await chroma.stop()


async def server_phase(raw: dict[str, Any], work: Path, args: argparse.Namespace,
                       progress: Callable[[str], None],
                       store_pids: tuple[int, ...] = ()) -> dict[str, Any]:
    import httpx

    out: dict[str, Any] = {}
    if not args.no_empty_baseline:
        out["empty_store"] = await empty_baseline(raw, work)
        progress(f"server over an empty store: {out['empty_store']}")
    server = ServerProcess(raw, work, "server")
    url = server.url
    try:
        async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(
                max_connections=512, max_keepalive_connections=512)) as client:
            pid = await server.start(client, out)
            out["at_ready"] = proc_stats(pid)
            progress(f"server ready in {out['ready_s']} s: {out['at_ready']}")
            fresh = list(range(args.people))
            random.Random(11).shuffle(fresh)
            rounds: list[Round] = []
            asked: list[int] = []
            with Sampler(pid) as sampler:
                for c in [int(x) for x in args.clients.split(",")]:
                    turns = args.turns or 4 * c
                    per_round = round_people(args.round_people, c)
                    want = per_round or turns
                    cold = fresh[:want] if len(fresh) >= want else None
                    if cold is not None:
                        fresh = fresh[want:]
                    elif not rounds:  # fewer people than turns: they are all new anyway
                        cold = fresh
                    if cold is not None:
                        plan = round_plan(cold, turns, args.memories, 0, per_round)
                        rounds.append(await run_round(client, url, "after ready", plan, c))
                        progress(f"round {asdict(rounds[-1])}")
                    people = cold or list(range(min(want, args.people)))
                    asked = asked or people
                    out.setdefault("settle_s", []).append(
                        round(await until_quiet(pid, *store_pids), 1))
                    plan = round_plan(people, turns, args.memories, 1, per_round)
                    rounds.append(await run_round(client, url, "settled", plan, c))
                    progress(f"round {asdict(rounds[-1])}")
                load_ended = time.monotonic()
                caught_up, left = None, None
                while time.monotonic() - load_ended < args.extraction_wait_s:
                    pending = (await client.get(f"{url}/v1/memory/pending")).json()["pending"]
                    left = sum(p["exchanges"] for p in pending)
                    if not left:
                        caught_up = round(time.monotonic() - load_ended, 1)
                        break
                    await asyncio.sleep(1.0)
            out["rounds"] = [asdict(r) for r in rounds]
            out["peak"] = sampler.peak
            out["extraction_caught_up_s"] = caught_up
            out["extraction_pending_left"] = left if caught_up is None else 0
            health = (await client.get(f"{url}/healthz")).json()
            out["query_lane"] = health["components"].get("embed", {}).get("queries")
            out["final"] = proc_stats(pid)
    finally:
        text = server.stop()
    out["store_calls_over_timeout"] = text.count("took longer than")
    out["recalls_out_of_time_logged"] = text.count("no memory this turn")
    if args.restart and asked:
        out["restart"] = await restart_phase(raw, work, args, asked, progress, store_pids)
    return out


async def restart_phase(raw: dict[str, Any], work: Path, args: argparse.Namespace,
                        people: list[int], progress: Callable[[str], None],
                        store_pids: tuple[int, ...] = ()) -> dict[str, Any]:
    """The same server started again on the same data: the people of the first round
    ask again right after ready (their indexes were saved), then once it is quiet."""
    import httpx

    out: dict[str, Any] = {}
    server = ServerProcess(raw, work, "restart")
    clients = int(args.clients.split(",")[0])
    turns = args.turns or 4 * clients
    try:
        async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(
                max_connections=512, max_keepalive_connections=512)) as client:
            pid = await server.start(client, out)
            out["at_ready"] = proc_stats(pid)
            rounds = [await run_round(client, server.url, "after restart", round_plan(
                people, turns, args.memories, 2, round_people(args.round_people, clients)),
                clients)]
            out["settle_s"] = round(await until_quiet(pid, *store_pids), 1)
            rounds.append(await run_round(client, server.url, "settled after restart",
                                          round_plan(people, turns, args.memories, 3,
                                                     round_people(args.round_people,
                                                                  clients)), clients))
            out["rounds"] = [asdict(r) for r in rounds]
            out["final"] = proc_stats(pid)
            progress(f"restart: {out}")
    finally:
        text = server.stop()
    out["store_calls_over_timeout"] = text.count("took longer than")
    return out


# -- the run ----------------------------------------------------------------------------
RUN_DATA_PREFIXES = ("in-process-run-", "server-data-")
"""Data dirs one run makes in ``--dir`` (its servers' data dirs, the in-process indexes),
removed when it ends well; ``in-process-config`` is one dir every run reuses."""


async def run_store(kind: str, raw: dict[str, Any], root: Path, args: argparse.Namespace,
                    progress: Callable[[str], None]) -> dict[str, Any]:
    from omoide_bench.benches._components import component_class

    report: dict[str, Any] = {"store": kind, "people": args.people, "memories": args.memories}
    before = set(root.iterdir())
    with ExitStack() as stack:
        chroma_port = None
        if kind == "chroma_server":  # the registry's `chroma` store runs its own server
            chroma_store = component_class("store", "chroma", needs="bench scale --store "
                                           "chroma_server needs the store_chroma plugin")
            chroma = stack.enter_context(chroma_store.local_server(root / "chroma-server"))
            chroma_port = chroma.port
        store = store_section(kind, root, chroma_port)
        marker = root / f"filled-{kind}.json"
        if marker.exists():
            filled = json.loads(marker.read_text(encoding="utf-8"))
            if (filled["people"], filled["memories"]) != (args.people, args.memories):
                raise SystemExit(f"{root} holds {filled['people']} x {filled['memories']} for"
                                 f" {kind}; use another --dir")
        phase = settings_for(raw, store, root / "in-process-config", args.index_budget_mb,
                             query_cache=False)
        report["in_process"] = await in_process(phase, root, args, marker, progress)
        progress(f"{kind} in process: {report['in_process']}")
        if not args.no_server:
            phase = settings_for(raw, store, root / f"server-data-{int(time.time())}",
                                 args.index_budget_mb, query_cache=True,
                                 extraction_idle_s=args.extraction_idle_s)
            report["server"] = await server_phase(
                phase, root, args, progress,
                (chroma.pid,) if kind == "chroma_server" and chroma.pid else ())
            if kind == "chroma_server":
                report["server"]["chroma_server"] = proc_stats(chroma.pid)
    # the run went through: its data dirs go (the filled store and the logs stay)
    for entry in set(root.iterdir()) - before:
        if entry.name.startswith(RUN_DATA_PREFIXES):
            shutil.rmtree(entry, ignore_errors=True)
    return report


async def _bench(args: argparse.Namespace) -> int:
    import yaml

    raw = yaml.safe_load(Path(args.config).read_text(encoding="utf-8"))
    kinds = [k.strip() for k in args.store.split(",") if k.strip()]
    for k in kinds:
        store_section(k, Path("."), 0)  # unknown names fail before any work

    def progress(line: str) -> None:
        print(f"[bench scale] {line}", file=sys.stderr, flush=True)

    reports = []
    with ExitStack() as stack:
        base = Path(args.dir) if args.dir else Path(stack.enter_context(
            tempfile.TemporaryDirectory(prefix="omoide-bench-scale-")))
        for kind in kinds:
            root = base / f"{kind}-{args.people}x{args.memories}"
            root.mkdir(parents=True, exist_ok=True)
            reports.append(await run_store(kind, raw, root.resolve(), args, progress))
    load = os.getloadavg()
    result = {"load_average": [round(x, 2) for x in load], "cpus": os.cpu_count(),
              "config": args.config, "reports": reports}
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
    else:
        print(render(result))
    return 0


def render(result: dict[str, Any]) -> str:
    """The reports as one Markdown table, a column per store."""
    reports = result["reports"]
    rows: list[tuple[str, list[str]]] = []

    def row(label: str, get: Callable[[dict[str, Any]], Any]) -> None:
        cells = []
        for r in reports:
            try:
                value = get(r)
            except (KeyError, IndexError, TypeError):
                value = None
            cells.append("–" if value is None else str(value))
        rows.append((label, cells))

    def p(d: dict[str, float]) -> str:
        return f"{d['p50']} / {d['p95']}"

    row("people × memories", lambda r: f"{r['people']} × {r['memories']}")
    row("fill (s; vectors per sentence pattern)", lambda r: r["in_process"]["fill_s"])
    row("open store (ms)", lambda r: r["in_process"]["open_ms"])
    row("store search of one person, no index, first time p50 / p95 (ms)",
        lambda r: p(r["in_process"]["store_search_ms"]))
    row("store, many people at once (no index, first time): first page / search, wall"
        " ÷ people (ms)", lambda r: "{first_page} / {search} ({people} people)".format(
            **r["in_process"]["store_together_ms"]))
    row("index build per person p50 / p95 (ms)", lambda r: p(r["in_process"]["index_build_ms"]))
    row("index load (saved copy) p50 / p95 (ms)", lambda r: p(r["in_process"]["index_load_ms"]))
    row("recall without embedding p50 / p95 (ms)",
        lambda r: p(r["in_process"]["recall_without_embedding_ms"]))
    row("recall with embedding p50 / p95 (ms)",
        lambda r: p(r["in_process"]["recall_with_embedding_ms"]))
    row("in-process recalls with the memory asked about (recalled or profile)",
        lambda r: r["in_process"]["recall_with_memory"])
    row("in-process RSS after the recalls (MB, peak)",
        lambda r: f"{r['in_process']['rss_mb']['now']} ({r['in_process']['rss_mb']['peak']})"
        if "rss_mb" in r["in_process"] else "-")
    row("server over an empty store: ready (s) / RSS (MB)",
        lambda r: f"{r['server']['empty_store']['ready_s']} /"
        f" {r['server']['empty_store']['at_ready']['rss_mb']}")
    row("server listening / ready (s)",
        lambda r: f"{r['server']['listening_s']} / {r['server']['ready_s']}")
    row("RSS at ready / peak / end (MB)", lambda r: " / ".join(str(x) for x in (
        r["server"]["at_ready"]["rss_mb"], r["server"]["peak"]["rss_mb"],
        r["server"]["final"]["rss_mb"])))
    row("open files at ready / peak", lambda r: f"{r['server']['at_ready']['open_files']} /"
        f" {r['server']['peak']['open_files']}")
    n_rounds = max((len(r.get("server", {}).get("rounds", [])) for r in reports), default=0)
    for i in range(n_rounds):
        rows.extend(_round_rows(reports, i))
    row("turn p95 right after ready ÷ settled", lambda r: _ratio(r["server"]["rounds"]))
    row("restart: ready (s) / RSS (MB)", lambda r: f"{r['server']['restart']['ready_s']} /"
        f" {r['server']['restart']['at_ready']['rss_mb']}")
    for i in range(2):
        rows.extend(_round_rows([{"server": (r.get("server") or {}).get("restart") or {}}
                                 for r in reports], i))
    row("turn p95 right after restart ÷ settled",
        lambda r: _ratio(r["server"]["restart"]["rounds"], "after restart",
                         "settled after restart"))
    row("extraction caught up after the load (s)",
        lambda r: r["server"]["extraction_caught_up_s"]
        if r["server"]["extraction_caught_up_s"] is not None
        else f"not within the wait ({r['server']['extraction_pending_left']} pending)")
    row("store calls over their timeout", lambda r: r["server"]["store_calls_over_timeout"])
    row("query lane (asked / cached / shared / model calls)", lambda r: "{asked} / {cached} /"
        " {shared} / {batches}".format(**r["server"]["query_lane"]))
    row("chroma server RSS (MB)", lambda r: r["server"]["chroma_server"]["rss_mb"])
    header = "| | " + " | ".join(r["store"] for r in reports) + " |"
    lines = [header, "|---|" + "---|" * len(reports)]
    lines += [f"| {label} | " + " | ".join(cells) + " |" for label, cells in rows]
    load = result["load_average"]
    lines.append(f"\nload average {load[0]} {load[1]} {load[2]} on {result['cpus']} CPUs;"
                 f" config {result['config']}")
    return "\n".join(lines)


def _round_rows(reports: list[dict[str, Any]], i: int) -> list[tuple[str, list[str]]]:
    """Three table rows for the ``i``-th round of every report."""
    picked = [(r.get("server") or {}).get("rounds", []) for r in reports]
    first = next((rs[i] for rs in picked if len(rs) > i), None)
    if first is None:
        return []
    label = f"{first['name']}, {first['clients']} clients × {first['turns']} turns"

    def cells(show: Callable[[dict[str, Any]], str]) -> list[str]:
        return [show(rs[i]) if len(rs) > i else "–" for rs in picked]

    return [
        (f"{label}: turn p50 / p95 (ms)",
         cells(lambda r: f"{r['turn_ms']['p50']} / {r['turn_ms']['p95']}")),
        (f"{label}: retrieve p95 (ms)", cells(lambda r: str(r["retrieve_ms"]["p95"]))),
        (f"{label}: with the memory asked about / out of time",
         cells(lambda r: f"{r['with_memory']:.1%} / {r['out_of_time']:.1%}")),
    ]


def _ratio(rounds: list[dict[str, Any]], first: str = "after ready",
           then: str = "settled") -> str | None:
    cold = next((r for r in rounds if r["name"] == first), None)
    settled = next((r for r in rounds if r["name"] == then
                    and cold is not None and r["clients"] == cold["clients"]), None)
    if cold is None or settled is None or not settled["turn_ms"]["p95"]:
        return None
    return f"{cold['turn_ms']['p95'] / settled['turn_ms']['p95']:.2f}"
