"""``omoide bench scale --workers 1,3``: several ``omoide serve`` workers on one
PostgreSQL database and one Chroma server, on this machine (``omoide bench workers`` is
the same bench under its first name).

    omoide bench scale --workers 1,3 [--config configs/offline.yaml] [--people 40]
                       [--memories 30] [--clients 6] [--turns 300] [--writes 30]
                       [--extraction-wait-s 300]
                       [--dir DIR] [--json]

It starts a throwaway PostgreSQL cluster (Debian's binaries, as the tests do) and a
Chroma server (``chroma run``), fills the store with ``--people`` × ``--memories``
synthetic facts (``omoide bench scale``'s, embedded per sentence pattern), then for
each worker count N of ``--workers``, in one run:

1. N ``omoide serve`` processes on the config, each with its own data dir, sharing
   ``database.url`` and the Chroma server;
2. a warm-up round: every person asked once on every worker (their indexes are then
   built on each), then a wait until the processes' CPU has gone quiet;
3. the measured round: ``--turns`` memory questions from ``--clients`` concurrent HTTP
   clients, each turn sent to the next worker in turn (a load balancer's round robin):
   turns/s, turn p50/p95, the share of turns whose prompt carried the memory asked
   about, and the CPU seconds the workers, the Chroma server, PostgreSQL and the
   bench's own clients used during it (what the two cores went to); then the
   **extraction catch-up**: every person with exchanges waiting in the shared journal is
   asked to be extracted now (``POST /v1/memory/extract``, person k on worker k mod N,
   all at once), and the time is from then until no exchange waits (the workers take
   their shares by lease), with how many waited. The workers keep the config's own idle
   trigger, so extraction during the round is what the config does;
4. with N ≥ 2, **cross-worker recall**: ``--writes`` times, one new memory imported on
   worker k mod N for a person whose index every worker holds, and worker k+1 mod N
   asked about it by turns, one after another, until a turn's prompt carries it. The
   time is from the import's answer on the first worker (the store write and its
   announcement are done before it) to the answer of the first turn that had it on the
   other: an upper bound, one turn's duration included (the turn's own time is
   reported beside it, and how many turns before it missed).

5. the same writes between two memory engines in this process (each its own store client
   and database connections, as two workers): the time from the import returning on
   the first (its store write and announcement done) to the memory being in the
   second's cached index of the person, looked at every millisecond — the channel's
   own delay, without a turn around it.

The ratio of turns/s with the most workers to that with the fewest is reported with
the load average: on 2 cores more workers cannot add CPU, only overlap waiting.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from omoide_bench.benches.scale import (
    NOW,
    Question,
    ServerProcess,
    cpu_seconds,
    open_and_fill,
    pct,
    person,
    person_memories,
    questions_about,
    settings_for,
    until_quiet,
)

SUBJECTS = ["灯台", "紅葉", "夜景", "朝顔", "路面電車", "白鳥", "桜並木", "雪山", "花火", "古い橋"]


DEFAULTS: dict[str, Any] = {"people": 40, "memories": 30, "clients": 6, "turns": 300}
"""What ``omoide bench scale --workers`` takes when those options are not given (the
in-process scale bench's own defaults are far larger)."""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("workers", help="= bench scale --workers: 1 and N omoide serve workers"
                                       " on PostgreSQL and a Chroma server")
    p.add_argument("--config", default="configs/offline.yaml",
                   help="config (YAML) the workers run (its store and database replaced)")
    p.add_argument("--workers", default="1,3", help="worker counts, comma-separated")
    p.add_argument("--people", type=int, default=DEFAULTS["people"])
    p.add_argument("--memories", type=int, default=DEFAULTS["memories"],
                   help="memories per person")
    p.add_argument("--clients", type=int, default=DEFAULTS["clients"],
                   help="concurrent HTTP clients")
    p.add_argument("--turns", type=int, default=DEFAULTS["turns"],
                   help="turns in the measured round")
    add_worker_options(p)
    p.add_argument("--dir", help="keep the run's files here (default: a temp dir)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=lambda args: asyncio.run(_bench(args)))
    scale = sub.choices.get("scale")   # registered before this module (sorted by name)
    if scale is not None:
        _extend_scale(scale)


def _extend_scale(scale: argparse.ArgumentParser) -> None:
    """``omoide bench scale --workers 1,3`` runs this bench (the issue's name for it)."""
    scale.add_argument("--workers", metavar="N,N",
                       help="worker counts, e.g. 1,3: instead, N omoide serve workers on a"
                            " throwaway PostgreSQL and a Chroma server (= bench workers;"
                            " --store, --sample and the server phase's options do not apply;"
                            " defaults: 40 people, 30 memories, 6 clients, 300 turns)")
    add_worker_options(scale)
    in_process = scale.get_default("handler")
    scale.set_defaults(handler=lambda args: run_from_scale(args) if args.workers
                       else in_process(args))


def add_worker_options(p: argparse.ArgumentParser) -> None:
    """The options of this bench that ``omoide bench scale`` lacks."""
    p.add_argument("--writes", type=int, default=30,
                   help="with several workers: memories written on one worker and asked on"
                        " another")
    if not any("--extraction-wait-s" in a.option_strings for a in p._actions):
        p.add_argument("--extraction-wait-s", type=float, default=300.0,
                       help="how long to wait for extraction to catch up after the round")


def run_from_scale(args: argparse.Namespace) -> int:
    """``omoide bench scale --workers ...``: this bench, with its defaults for the
    options the command line left out."""
    for name, value in DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    args.clients = int(str(args.clients).split(",")[0])
    return asyncio.run(_bench(args))


def progress(line: str) -> None:
    print(f"[bench workers] {line}", file=sys.stderr, flush=True)


def postmaster_pids(data_dir: Path) -> list[int]:
    """PostgreSQL's processes: the postmaster (first line of postmaster.pid) and its
    children (Linux /proc)."""
    try:
        master = int((data_dir / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return []
    pids = [master]
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == master:
                pids.append(int(entry))
    return pids


def cpu_of(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError):  # a backend that ended meanwhile
            total += cpu_seconds(pid)
    return total


class Worker(ServerProcess):
    """``omoide serve`` as one worker; the admin token is the database's."""

    def __init__(self, raw: dict[str, Any], work: Path, name: str, url: str) -> None:
        super().__init__(raw, work, name)
        self.database_url = url

    async def start(self, client: Any, out: dict[str, Any]) -> int:
        """Start it; return its pid (the client gets the shared admin token)."""
        from omoide.server.postgres_tokens import PostgresTokenStore

        pid = await super().start(client, out)
        tokens = PostgresTokenStore(self.database_url)
        try:
            client.headers["Authorization"] = f"Bearer {tokens.admin_token()}"
        finally:
            tokens.close()
        return pid


async def ask(client: Any, url: str, user: str, text: str) -> tuple[bool, set[str], float]:
    """One text turn: (answered, the memory ids its prompt carried, its ms)."""
    started = time.perf_counter()
    try:
        r = await client.post(f"{url}/v1/turns", json={"user": user, "text": text,
                                                        "now": NOW.isoformat()})
        body = r.json() if r.status_code == 200 else {}
    except Exception:  # noqa: BLE001 - counted as a failed turn
        body = {}
    ms = (time.perf_counter() - started) * 1000
    ids = {m["id"] for m in body.get("memories") or []} | \
        {f["id"] for f in body.get("profile") or []}
    return bool(body), ids, ms


async def run_round(client: Any, urls: list[str], plan: list[tuple[str, Question]],
                    clients: int) -> dict[str, Any]:
    """``plan``'s turns from ``clients`` clients, each to the next worker in turn."""
    turns: list[float] = []
    got = failed = 0
    todo = iter(plan)
    target = itertools.cycle(urls)

    async def one_client() -> None:
        nonlocal got, failed
        for user, question in todo:
            ok, ids, ms = await ask(client, next(target), user, question.text)
            turns.append(ms)
            failed += not ok
            got += ok and question.answered_by(ids)

    started = time.perf_counter()
    await asyncio.gather(*(one_client() for _ in range(clients)))
    seconds = time.perf_counter() - started
    return {"turns": len(plan), "seconds": round(seconds, 2),
            "turns_per_s": round(len(plan) / seconds, 2), "turn_ms": pct(turns),
            "with_memory": round(got / max(1, len(plan)), 3), "failed": failed}


def plan_for(people: int, memories: int, turns: int, offset: int) -> list[tuple[str, Question]]:
    """``turns`` questions going round the people (each person's next question)."""
    asked = {i: questions_about(person_memories(i, memories)) for i in range(people)}
    return [(person(k % people), asked[k % people][(offset + k // people)
                                                   % len(asked[k % people])])
            for k in range(turns)]


def run_number() -> int:
    """A number of this run's own (the memories written are new to a store ``--dir``
    kept from an earlier run: an import of a text already there stores nothing)."""
    return int(time.time()) % 10**5 * 100


async def cross_worker_recall(client: Any, urls: list[str], args: argparse.Namespace,
                              ) -> dict[str, Any]:
    """Write on one worker, ask on the next until a turn has it (module docstring, 4)."""
    from omoide.memory.control.import_format import imported_memory_id

    latencies, found_turn_ms, missed_before, lost = [], [], [], 0
    first = run_number()
    for k in range(args.writes):
        user = person(k % args.people)
        writer, reader = urls[k % len(urls)], urls[(k + 1) % len(urls)]
        subject, n = SUBJECTS[k % len(SUBJECTS)], first + k
        text = f"あなたは写真教室の第{n}回で{subject}の写真を撮った。"
        item = {"id": f"bench-w{n}", "text": text, "kind": "episodic",
                "created_at": "2026-09-26T15:00:00+09:00"}
        r = await client.post(f"{writer}/v1/users/{user}/memories/import", json=[item])
        written_at = time.perf_counter()
        if r.status_code != 200:
            raise RuntimeError(f"import on {writer} failed: {r.status_code} {r.text}")
        want = imported_memory_id(user, f"bench-w{n}")
        misses = 0
        while True:
            _, ids, ms = await ask(client, reader, user,
                                   f"写真教室の第{n}回で何の写真を撮ったっけ？")
            if want in ids:
                latencies.append((time.perf_counter() - written_at) * 1000)
                found_turn_ms.append(ms)
                missed_before.append(misses)
                break
            misses += 1
            if time.perf_counter() - written_at > 30:
                lost += 1
                break
    return {"writes": args.writes, "recalled_ms": pct(latencies),
            "finding_turn_ms": pct(found_turn_ms),
            "turns_missed_before": {"max": max(missed_before, default=0),
                                    "total": sum(missed_before)},
            "not_found_in_30_s": lost,
            "within_1_s": sum(1 for x in latencies if x <= 1000)}


async def in_process_propagation(raw: dict[str, Any], root: Path, args: argparse.Namespace,
                                 ) -> dict[str, Any]:
    """Module docstring, 5: two engines, a write on one, polled for on the other."""
    from omoide.config import validate_config
    from omoide.memory.control.import_format import imported_memory_id
    from omoide.memory.engine import MemoryEngine
    from omoide.runtime import Runtime

    engines, runtimes = [], []
    for i in range(2):
        settings = validate_config(settings_for(raw, raw["store"], root / f"engine-{i}",
                                                None, query_cache=False), source="bench")
        runtime = Runtime(settings)
        await runtime.start("embed", "store")
        runtimes.append(runtime)
        engine = MemoryEngine(settings.memory, embedder=runtime.embedder,
                              store=runtime.store, chat=None, data_dir=settings.data_dir,
                              timezone=settings.assistant.timezone,
                              database=settings.envelope.database)
        await engine.start()
        engines.append(engine)
    a, b = engines
    delays: list[float] = []
    first = run_number()
    try:
        for k in range(args.writes):
            user = person(k % args.people)
            await b.index(user)  # b holds the person's index
            subject, n = SUBJECTS[k % len(SUBJECTS)], first + k
            item = {"id": f"bench-p{n}", "kind": "episodic",
                    "text": f"あなたは陶芸教室の第{n}回で{subject}の絵皿を作った。"}
            await a.import_memories(user, [item])
            written_at = time.perf_counter()
            want = imported_memory_id(user, f"bench-p{n}")
            while (await b.index(user)).get(want) is None:
                if time.perf_counter() - written_at > 30:
                    break
                await asyncio.sleep(0.001)
            else:
                delays.append((time.perf_counter() - written_at) * 1000)
    finally:
        for engine in engines:
            await engine.stop()
        for runtime in runtimes:
            await runtime.stop()
    return {"writes": args.writes, "in_index_ms": pct(delays),
            "not_found_in_30_s": args.writes - len(delays)}


_WAITING = "consumed_at IS NULL AND quarantined_at IS NULL"


async def extraction_catch_up(client: Any, urls: list[str], url: str, wait_s: float,
                              ) -> dict[str, Any]:
    """Every person with exchanges waiting asked to be extracted at once, spread over
    the workers; then the shared journal looked at every half second until nothing waits:
    the seconds (None past ``wait_s``), how many waited at first, how many were left."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        async def waiting() -> int:
            row = await (await conn.execute(f"SELECT count(*) FROM exchanges WHERE {_WAITING}"
                                            )).fetchone()
            return int(row[0]) if row else 0

        first = await waiting()
        people = [str(r[0]) for r in await (await conn.execute(
            f'SELECT DISTINCT "user" FROM exchanges WHERE {_WAITING}')).fetchall()]
        started = time.monotonic()
        answers = await asyncio.gather(*(
            client.post(f"{urls[k % len(urls)]}/v1/memory/extract", json={"user": who})
            for k, who in enumerate(people)))
        failed = sum(r.status_code != 200 for r in answers)
        while (left := await waiting()) and time.monotonic() - started <= wait_s:
            await asyncio.sleep(0.5)
        caught_up = None if left else round(time.monotonic() - started, 1)
        return {"waiting_at_end": first, "people": len(people), "caught_up_s": caught_up,
                "left": left, "failed_requests": failed}


async def run_workers(n: int, raw: dict[str, Any], root: Path, args: argparse.Namespace,
                      db: Any, chroma_pid: int) -> dict[str, Any]:
    import httpx

    workers = [Worker(settings_for(raw, raw["store"], root / f"worker{n}-{i}", None,
                                   query_cache=True), root, f"worker{n}-{i}", db.url)
               for i in range(n)]
    out: dict[str, Any] = {"workers": n}
    async with httpx.AsyncClient(timeout=120) as client:
        try:
            started = time.monotonic()
            pids = [await w.start(client, {}) for w in workers]
            out["ready_s"] = round(time.monotonic() - started, 1)
            urls = [w.url for w in workers]
            warm = [(u, q) for u, q in plan_for(args.people, args.memories, args.people, 0)]
            for url in urls:  # every person asked once on every worker
                await run_round(client, [url], warm, args.clients)
            out["quiet_after_warm_up_s"] = round(await until_quiet(*pids, chroma_pid), 1)
            pg = postmaster_pids(db.data)
            cpu = (cpu_of(pids), cpu_seconds(chroma_pid), cpu_of(pg), time.process_time())
            load = os.getloadavg()[0]
            for w in workers:
                w.profiling(True)
            out["round"] = await run_round(client, urls, plan_for(
                args.people, args.memories, args.turns, 1), args.clients)
            for w in workers:
                w.profiling(False)
            after = (cpu_of(pids), cpu_seconds(chroma_pid), cpu_of(postmaster_pids(db.data)),
                     time.process_time())
            out["cpu_s"] = {name: round(b - a, 2) for name, a, b in zip(
                ("workers", "chroma", "postgresql", "bench_clients"), cpu, after, strict=True)}
            out["load_before"], out["load_after"] = round(load, 2), round(os.getloadavg()[0], 2)
            out["extraction"] = await extraction_catch_up(client, urls, db.url,
                                                          args.extraction_wait_s)
            progress(f"{n} worker(s): {out}")
            if n >= 2 and args.writes:
                out["cross_worker"] = await cross_worker_recall(client, urls, args)
                out["load_after_writes"] = round(os.getloadavg()[0], 2)
                progress(f"{n} workers, cross-worker recall: {out['cross_worker']}")
        finally:
            for w in workers:
                w.stop()
    return out


async def _bench(args: argparse.Namespace) -> int:
    import yaml

    from omoide.config import validate_config
    from omoide.runtime import Runtime
    from omoide.testing.postgresql import ThrowawayPostgres
    from omoide_bench.benches._components import component_class

    counts = sorted({int(x) for x in args.workers.split(",") if x.strip()})
    raw = yaml.safe_load(Path(args.config).read_text(encoding="utf-8"))
    chroma_store = component_class("store", "chroma", needs="bench workers needs the"
                                   " store_chroma plugin (./dev.sh setup all)")
    report: dict[str, Any] = {"people": args.people, "memories": args.memories,
                              "clients": args.clients, "cores": os.cpu_count(),
                              "load_at_start": [round(x, 2) for x in os.getloadavg()]}
    with ExitStack() as stack:
        root = Path(args.dir or stack.enter_context(tempfile.TemporaryDirectory(
            prefix="omoide-bench-workers-"))).resolve()
        root.mkdir(parents=True, exist_ok=True)
        db = ThrowawayPostgres().start()
        stack.callback(db.stop)
        chroma = stack.enter_context(chroma_store.local_server(root / "chroma-server"))
        raw["store"] = {"use": "chroma", "host": "127.0.0.1", "port": chroma.port}
        raw["database"] = {"url": db.url}
        runtime = Runtime(validate_config(settings_for(
            raw, raw["store"], root / "fill", None, query_cache=False), source="bench"))
        await runtime.start("embed")
        try:
            report["fill"] = await open_and_fill(runtime, root, args, root / "filled.json",
                                                 progress)
        finally:
            await runtime.stop()
        report["runs"] = [await run_workers(n, raw, root, args, db, int(chroma.pid or 0))
                          for n in counts]
        if args.writes:
            report["in_process"] = await in_process_propagation(raw, root, args)
            progress(f"in process: {report['in_process']}")
    rates = [r["round"]["turns_per_s"] for r in report["runs"]]
    report["turns_per_s_ratio"] = round(rates[-1] / rates[0], 2) if rates[0] else None
    print(json.dumps(report, ensure_ascii=False, indent=None if args.json else 2))
    return 0
