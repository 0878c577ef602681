"""``omoide eval``: score the read engines on data sets (probe format and LoCoMo).

    omoide eval --config configs/offline.yaml --data eval/ja_memory_dev.jsonl \
        [--data eval/locomo10.json] [--engine baseline,robust] [--json]

Runs in-process with the configured embedder. The store is the in-memory double
by default (``--store memory``: fast, and latency then measures the engine, not a
database) or a throwaway copy of the configured store (``--store configured``:
Qdrant local mode in a temporary directory). The output says which.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from omoide.commands._common import EXIT_FAILED


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("eval", help="score memory retrieval (baseline vs robust) on data sets")
    p.add_argument("--config", required=True, help="config file (YAML): embedder, memory")
    p.add_argument("--data", required=True, action="append", metavar="FILE",
                   help="probe-format JSONL or LoCoMo JSON (repeatable)")
    p.add_argument("--engine", default="baseline,robust",
                   help="comma-separated read engines (default: baseline,robust)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--store", choices=("memory", "configured"), default="memory",
                   help="in-memory store double (default) or a temporary copy of the "
                        "configured store (Qdrant local in a temp dir)")
    p.add_argument("--locomo-conversations", type=int, metavar="N",
                   help="LoCoMo: only the first N conversations (default: all 10)")
    p.add_argument("--locomo-questions", type=int, metavar="N",
                   help="LoCoMo: only the first N questions of each conversation")
    p.add_argument("--embed-cache", metavar="FILE",
                   help="cache vectors in FILE across runs (latency with embedding is then"
                        " not meaningful)")
    p.add_argument("--misses", action="store_true", help="also list the probe misses")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(handler=_eval_command)


def _eval_command(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_run(args))
    except KeyboardInterrupt:
        return 130


def _check_data_file(path: Path) -> list[str]:
    """Every problem of one data file, with line numbers (empty when it is fine)."""
    from omoide.memory.eval_data import check_locomo_file, check_probe_file

    if not path.is_file():
        return [f"no such data file: {path}"]
    try:
        with path.open("rb") as f:
            head = f.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError as exc:
        return [f"{path}: cannot read: {exc.strerror}"]
    return check_locomo_file(path) if head.startswith(b"[") else check_probe_file(path)


def _temporary_store(settings: Any, tmp: Path) -> Any:
    choice = settings.components["store"]
    fields = type(choice.config).model_fields
    update: dict[str, Any] = {}
    if "path" in fields:
        update = {"path": str(tmp / "store"), "url": None, "location": None}
    elif "url" in fields or "host" in fields:
        raise SystemExit("--store configured needs a store with a local `path` (refusing to"
                         " write evaluation data into a server); use --store memory")
    update = {k: v for k, v in update.items() if k in fields}
    config = choice.config.model_copy(update={**update, "collection": "omoide_eval"})
    return choice.cls(config)


async def _run(args: argparse.Namespace) -> int:
    from omoide.commands._common import load_or_exit
    from omoide.memory.engine import MemoryEngine
    from omoide.memory.eval import CachedEmbedder, Evaluator, is_locomo, render_table
    from omoide.runtime import Runtime, StartupFailed
    from omoide.testing.doubles import InMemoryStore, MemoryStoreConfig

    settings = load_or_exit(args.config)
    engines = [e.strip() for e in args.engine.split(",") if e.strip()]
    unknown = [e for e in engines if e not in ("baseline", "robust")]
    if unknown:
        print(f"unknown engine(s) {unknown}; choose from baseline, robust", file=sys.stderr)
        return EXIT_FAILED
    paths = [Path(d) for d in args.data]
    problems = [problem for p in paths for problem in _check_data_file(p)]
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return EXIT_FAILED
    runtime = Runtime(settings)
    try:
        await runtime.start("embed")
    except StartupFailed as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_FAILED
    embedder: Any = runtime.embedder
    cache: Any = CachedEmbedder(embedder, Path(args.embed_cache)) if args.embed_cache else None
    with tempfile.TemporaryDirectory(prefix="omoide-eval-") as tmp_name:
        tmp = Path(tmp_name)
        if args.store == "memory":
            store: Any = InMemoryStore(MemoryStoreConfig())
            store_label = "in-memory store double (fake)"
        else:
            store = _temporary_store(settings, tmp)
            store_label = f"{store.name} (temporary copy in {tmp})"
        await store.start()
        # The whole read budget is for quality here; timeouts would hide misses.
        memory_config = settings.memory.model_copy(update={"time_budget_ms": 60_000.0})
        engine = MemoryEngine(memory_config, embedder=cache or embedder, store=store,
                              chat=None, data_dir=tmp, timezone=settings.assistant.timezone)
        await engine.start()
        progress = None
        if not args.no_progress:
            from omoide.memory.eval import _progress_bar
            progress = _progress_bar(sys.stderr)
        evaluator = Evaluator(engine, engines, progress=progress)
        try:
            for p in paths:
                if is_locomo(p):
                    await evaluator.run_locomo(p, limit_conversations=args.locomo_conversations,
                                               limit_questions=args.locomo_questions)
                else:
                    await evaluator.run_probe(p)
        finally:
            await engine.stop()
            await store.stop()
            await runtime.stop()
            if cache is not None:
                cache.save()
    report = evaluator.report()
    report["store"] = store_label
    report["embedder"] = embedder.model_id
    report["data"] = [str(p) for p in paths]
    if cache is not None:
        report["embed_cache"] = {"file": str(cache.path), "hits": cache.hits,
                                 "note": "latency with embedding is not meaningful on hits"}
    if args.misses:
        report["misses"] = {e: evaluator.tallies[e].misses for e in engines}
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        print(f"embedder: {report['embedder']}    store: {store_label}")
        render_table(report)
        if args.misses:
            for e in engines:
                for m in evaluator.tallies[e].misses:
                    print(f"  miss [{e}] {m['query']} expect={m['expect']} got={m['got']}"
                          f" ({m['gate']})")
    return 0
