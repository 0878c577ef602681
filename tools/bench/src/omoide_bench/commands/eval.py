"""``omoide eval``: score the read engines on data sets (probe format and LoCoMo).

    omoide eval --config configs/offline.yaml --data eval/ja_memory_dev.jsonl \
        [--data eval/locomo10.json] [--engine baseline,robust] [--json] [--misses]
        [--speak [--speak-cache FILE]]

``--engine`` names registered memory engines (``omoide plugins``: kind
``memory_engine``; omoide's own are ``baseline`` and ``robust``). The one the config
picks (``memory.retrieve``) runs with the config's options, the others with their
defaults.

One table per data file (latency p50/p95 with and without the embedding included),
and one per kind when the queries carry a ``"kind"``. ``--misses`` lists every miss with
its reason (the gate, what the utterance was taken for, what was heard, the dates, where
the expected memory stood). ``--speak`` first runs every query through the configured
TTS and ASR (so anyone can measure robustness against their own recogniser); transcripts
are cached on disk by (TTS, ASR, text), so a second run costs nothing.

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
    """Check the arguments, start the configured components, evaluate, print."""
    from omoide.commands._common import load_or_exit
    from omoide.runtime import Runtime, StartupFailed

    settings = load_or_exit(args.config)
    engines = [e.strip() for e in args.engine.split(",") if e.strip()]
    paths = [Path(d) for d in args.data]
    problem = _unknown_engines(engines) or _data_problems(paths)
    if problem:
        print(problem, file=sys.stderr)
        return EXIT_FAILED
    runtime = Runtime(settings)
    try:
        await runtime.start("embed", *(("tts", "asr") if args.speak else ()))
    except StartupFailed as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_FAILED
    run = _EvalRun(args, settings, runtime, engines, paths)
    try:
        await run.evaluate()
    finally:
        await runtime.stop()
        run.save_caches()
    report = run.report()
    _print_report(args, report, run)
    return 0


def _data_problems(paths: list[Path]) -> str | None:
    """Every problem of the data files, one a line, or None when they are all fine."""
    problems = [problem for p in paths for problem in _check_data_file(p)]
    return "\n".join(problems) if problems else None


class _EvalRun:
    """One ``omoide eval`` run: the embedder (cached or not), the spoken queries, a store
    for the run's memories, and the evaluator's figures once :meth:`evaluate` is done."""

    def __init__(self, args: argparse.Namespace, settings: Any, runtime: Any,
                 engines: list[str], paths: list[Path]) -> None:
        from omoide_bench.eval import CachedEmbedder, SpokenQueries

        self.args, self.settings, self.runtime = args, settings, runtime
        self.engines, self.paths = engines, paths
        self.speaker: SpokenQueries | None = None
        if args.speak:
            cache_path = Path(args.speak_cache) if args.speak_cache else \
                Path(settings.data_dir) / "eval-speak-cache.json"
            self.speaker = SpokenQueries(runtime.tts, runtime.asr, cache_path)
        self.embedder: Any = runtime.embedder
        self.cache: Any = (
            CachedEmbedder(self.embedder, Path(args.embed_cache)) if args.embed_cache else None)
        self.store_label = ""
        self.evaluator: Any = None

    def _store(self, tmp: Path) -> Any:
        from omoide.testing.doubles import InMemoryStore, MemoryStoreConfig

        if self.args.store == "memory":
            self.store_label = "in-memory store double (fake)"
            return InMemoryStore(MemoryStoreConfig())
        store = _temporary_store(self.settings, tmp)
        self.store_label = f"{store.name} (temporary copy in {tmp})"
        return store

    async def evaluate(self) -> None:
        """Fill a throwaway store and engine from every data file and score the engines."""
        from omoide.memory.engine import MemoryEngine
        from omoide_bench.eval import Evaluator, _progress_bar

        with tempfile.TemporaryDirectory(prefix="omoide-eval-") as tmp_name:
            tmp = Path(tmp_name)
            store = self._store(tmp)
            await store.start()
            # The whole read budget is for quality here; timeouts would hide misses.
            memory_config = self.settings.memory.model_copy(update={"time_budget_ms": 60_000.0})
            engine = MemoryEngine(memory_config, embedder=self.cache or self.embedder,
                                  store=store, chat=None, data_dir=tmp,
                                  timezone=self.settings.assistant.timezone,
                                  read_engine=self.runtime.read_engine,
                                  extractor=self.runtime.extractor)
            await engine.start()
            progress = None if self.args.no_progress else _progress_bar(sys.stderr)
            self.evaluator = Evaluator(
                engine, self.engines, progress=progress,
                transform=self.speaker.transcribe if self.speaker else None)
            try:
                await self._run_files()
            finally:
                await engine.stop()
                await store.stop()

    async def _run_files(self) -> None:
        from omoide_bench.eval import is_locomo

        for p in self.paths:
            if is_locomo(p):
                await self.evaluator.run_locomo(
                    p, limit_conversations=self.args.locomo_conversations,
                    limit_questions=self.args.locomo_questions)
            else:
                await self.evaluator.run_probe(p)

    def save_caches(self) -> None:
        if self.cache is not None:
            self.cache.save()
        if self.speaker is not None:
            self.speaker.save()

    def report(self) -> dict[str, Any]:
        """The evaluator's figures and what they were measured with."""
        report: dict[str, Any] = self.evaluator.report()
        report["store"] = self.store_label
        report["embedder"] = self.embedder.model_id
        report["data"] = [str(p) for p in self.paths]
        if self.cache is not None:
            report["embed_cache"] = {"file": str(self.cache.path), "hits": self.cache.hits,
                                     "note": "latency with embedding is not meaningful on hits"}
        if self.speaker is not None:
            report["speak"] = {"tts": self.speaker.tts_id, "asr": self.speaker.asr_id,
                               "cache": str(self.speaker.path),
                               "transcribed": self.speaker.transcribed}
        if self.args.misses:
            report["misses"] = self.evaluator.misses()
        return report


def _print_report(args: argparse.Namespace, report: dict[str, Any], run: _EvalRun) -> None:
    from omoide_bench.eval import render_misses, render_table

    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
        return
    print(f"embedder: {report['embedder']}    store: {report['store']}")
    speaker = run.speaker
    if speaker is not None:
        print(f"queries spoken by {speaker.tts_id} and heard by {speaker.asr_id}"
              f" ({speaker.transcribed} transcribed now, cache {speaker.path})")
    render_table(report)
    if args.misses:
        render_misses(run.evaluator.misses())
