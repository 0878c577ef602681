"""``omoide eval``: score the read engines on data sets (probe format and LoCoMo).

    omoide eval --config configs/offline.yaml --data eval/ja_memory_dev.jsonl \
        [--data eval/locomo10.json] [--engine baseline,robust] [--json] [--misses]
        [--speak [--speak-cache FILE]]

``--engine`` names registered memory engines (``omoide plugins``: kind
``memory_engine``; omoide's own are ``baseline`` and ``robust``). The one the config
picks (``memory.retrieve``) runs with the config's options, the others with their
defaults.

One table per data file. ``--misses`` lists every miss with its reason (the gate, what
the utterance was taken for, what was heard, the dates, where the expected memory
stood). ``--speak`` first runs every query through the configured TTS and ASR (so
anyone can measure robustness against their own recogniser); transcripts are cached
on disk by (TTS, ASR, text), so a second run costs nothing.

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
    p = sub.add_parser("eval", help="score memory engines (baseline vs robust...) on data sets")
    p.add_argument("--config", required=True, help="config file (YAML): embedder, memory")
    p.add_argument("--data", required=True, action="append", metavar="FILE",
                   help="probe-format JSONL or LoCoMo JSON (repeatable)")
    p.add_argument("--engine", default="baseline,robust",
                   help="comma-separated registered memory engines (default:"
                        " baseline,robust; the configured one with the config's options)")
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
    p.add_argument("--misses", action="store_true",
                   help="also list every probe miss with its reason")
    p.add_argument("--speak", action="store_true",
                   help="speak every query with the configured TTS and transcribe it with the"
                        " configured ASR before asking it (cached, see --speak-cache)")
    p.add_argument("--speak-cache", metavar="FILE",
                   help="transcript cache for --speak (default: eval-speak-cache.json in"
                        " server.data_dir)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(handler=_eval_command)


def _eval_command(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_run(args))
    except KeyboardInterrupt:
        return 130


def _check_data_file(path: Path) -> list[str]:
    """Every problem of one data file, with line numbers (empty when it is fine)."""
    from omoide_bench.eval_data import check_locomo_file, check_probe_file

    if not path.is_file():
        return [f"no such data file: {path}"]
    try:
        with path.open("rb") as f:
            head = f.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError as exc:
        return [f"{path}: cannot read: {exc.strerror}"]
    return check_locomo_file(path) if head.startswith(b"[") else check_probe_file(path)


def _unknown_engines(engines: list[str]) -> str | None:
    """Why ``engines`` cannot be evaluated (a name no plugin registers), or None."""
    from omoide.config import did_you_mean
    from omoide.plugins import build_registry

    if not engines:
        return "--engine names no engine"
    registry = build_registry([("memory_engine", e) for e in engines])
    known = registry.available("memory_engine")
    unknown = [e for e in engines if e not in known]
    if not unknown:
        return None
    hints = "".join(did_you_mean(e, known) for e in unknown)
    return (f"unknown memory engine(s) {', '.join(unknown)}{hints}; registered:"
            f" {', '.join(known) or 'none'}")


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
    from omoide_bench.eval import (
        CachedEmbedder,
        Evaluator,
        is_locomo,
        render_misses,
        render_table,
    )
    from omoide.runtime import Runtime, StartupFailed
    from omoide.testing.doubles import InMemoryStore, MemoryStoreConfig

    settings = load_or_exit(args.config)
    engines = [e.strip() for e in args.engine.split(",") if e.strip()]
    problem = _unknown_engines(engines)
    if problem:
        print(problem, file=sys.stderr)
        return EXIT_FAILED
    paths = [Path(d) for d in args.data]
    problems = [problem for p in paths for problem in _check_data_file(p)]
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return EXIT_FAILED
    runtime = Runtime(settings)
    try:
        await runtime.start("embed", *(("tts", "asr") if args.speak else ()))
    except StartupFailed as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_FAILED
    speaker = None
    if args.speak:
        from omoide_bench.eval import SpokenQueries
        cache_path = Path(args.speak_cache) if args.speak_cache else \
            Path(settings.data_dir) / "eval-speak-cache.json"
        speaker = SpokenQueries(runtime.tts, runtime.asr, cache_path)
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
                              chat=None, data_dir=tmp, timezone=settings.assistant.timezone,
                              read_engine=runtime.read_engine, extractor=runtime.extractor)
        await engine.start()
        progress = None
        if not args.no_progress:
            from omoide_bench.eval import _progress_bar
            progress = _progress_bar(sys.stderr)
        evaluator = Evaluator(engine, engines, progress=progress,
                              transform=speaker.transcribe if speaker else None)
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
            if speaker is not None:
                speaker.save()
    report = evaluator.report()
    report["store"] = store_label
    report["embedder"] = embedder.model_id
    report["data"] = [str(p) for p in paths]
    if cache is not None:
        report["embed_cache"] = {"file": str(cache.path), "hits": cache.hits,
                                 "note": "latency with embedding is not meaningful on hits"}
    if speaker is not None:
        report["speak"] = {"tts": speaker.tts_id, "asr": speaker.asr_id,
                           "cache": str(speaker.path), "transcribed": speaker.transcribed}
    if args.misses:
        report["misses"] = evaluator.misses()
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        print(f"embedder: {report['embedder']}    store: {store_label}")
        if speaker is not None:
            print(f"queries spoken by {speaker.tts_id} and heard by {speaker.asr_id}"
                  f" ({speaker.transcribed} transcribed now, cache {speaker.path})")
        render_table(report)
        if args.misses:
            render_misses(evaluator.misses())
    return 0
