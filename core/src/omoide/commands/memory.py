"""``omoide memory ...``: see, search, forget, export and import a user's memories.

    omoide memory list    --config FILE --user U [--json]
    omoide memory search  --config FILE --user U TEXT [--limit N] [--json]
    omoide memory show    --config FILE --user U ID
    omoide memory forget  --config FILE --user U ID [ID ...]
    omoide memory export  --config FILE --user U [--out FILE]      (JSON lines)
    omoide memory import  --config FILE --user U FILE
    omoide memory pending --config FILE [--user U]
    omoide memory extract --config FILE --user U
    omoide memory reembed --config FILE [--user U ...]
    omoide memory profile show|set|forget ...     (see omoide.commands.memory_profile)

They open the same store and journal the server uses (Qdrant local mode allows one
process per path: stop the server first, or use the HTTP routes while it runs).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from omoide.commands._common import EXIT_FAILED


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("memory", help="see, search, forget, export and import memories")
    msub = p.add_subparsers(dest="memory_command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str, handler: Callable[..., Awaitable[int]],
                user: bool | None = True, needs: tuple[str, ...] = ("embed", "store"),
                ) -> argparse.ArgumentParser:
        c = msub.add_parser(name, help=help_text)
        c.add_argument("--config", required=True, help="config file (YAML)")
        if user is True:
            c.add_argument("--user", required=True, help="user id")
        elif user is None:
            c.add_argument("--user", action="append", help="user id (repeatable; default all)")
        else:
            c.add_argument("--user", help="user id (default: all users)")
        c.set_defaults(handler=lambda args: _run(args, handler, needs))
        parser: argparse.ArgumentParser = c
        return parser

    c = command("list", "list a user's memories", _list)
    c.add_argument("--json", action="store_true", help="print JSON lines")
    c = command("search", "memories ranked for a text (no injection gate)", _search)
    c.add_argument("text", metavar="TEXT")
    c.add_argument("--limit", type=int, default=10, help="how many (default 10)")
    c.add_argument("--json", action="store_true", help="print JSON")
    c = command("show", "one memory in full (JSON)", _show)
    c.add_argument("id", metavar="ID")
    c = command("forget", "delete memories from the store and every index", _forget)
    c.add_argument("ids", nargs="+", metavar="ID")
    c = command("export", "a user's memories as JSON lines", _export)
    c.add_argument("--out", metavar="FILE", help="write to FILE (default: stdout)")
    c = command("import", "add memories from an export (JSON lines or a JSON list)", _import)
    c.add_argument("file", metavar="FILE")
    command("pending", "exchanges waiting for extraction, per user", _pending, user=False,
            needs=())
    command("extract", "extract a user's pending exchanges now", _extract,
            needs=("embed", "store", "chat"))
    command("reembed", "re-embed every memory with the configured embedder", _reembed,
            user=None)
    from omoide.commands.memory_profile import add_profile_command
    add_profile_command(msub)


def _run(args: argparse.Namespace, handler: Callable[..., Awaitable[int]],
         needs: tuple[str, ...]) -> int:
    return asyncio.run(_with_engine(args, handler, needs))


async def _with_engine(args: argparse.Namespace, handler: Callable[..., Awaitable[int]],
                       needs: tuple[str, ...]) -> int:
    from omoide.commands._common import load_or_exit, report_failures
    from omoide.memory.engine import MemoryEngine
    from omoide.runtime import Runtime

    settings = load_or_exit(args.config)
    runtime = Runtime(settings)
    engine = runtime.memory
    assert isinstance(engine, MemoryEngine)

    async def started_work() -> int:
        if needs:
            await runtime.start(*needs)
        if handler is _reembed:
            engine.journal.open()
        elif needs:
            await engine.start()
        else:
            engine.journal.open()
        return await handler(engine, args)

    try:
        return await report_failures(started_work())
    finally:
        await engine.stop()
        await runtime.stop()


def _line(m: Any) -> str:
    dates = ",".join(d.isoformat() for d in m.event_dates)
    flag = " (superseded)" if m.superseded_by else ""
    return f"{m.id}  {m.created_at:%Y-%m-%d %H:%M}  [{m.kind}{' ' + dates if dates else ''}]" \
           f"  {m.text}{flag}"


async def _list(engine: Any, args: argparse.Namespace) -> int:
    from omoide.memory.records import to_json
    for m in await engine.list_memories(args.user):
        print(json.dumps(to_json(m), ensure_ascii=False) if args.json else _line(m))
    return 0


async def _search(engine: Any, args: argparse.Namespace) -> int:
    from omoide.memory.records import to_json
    results = await engine.search(args.user, args.text, limit=args.limit)
    if args.json:
        print(json.dumps([{"score": round(r.score, 4), **to_json(r.memory)} for r in results],
                         ensure_ascii=False, indent=2))
    else:
        for r in results:
            print(f"{r.score:.3f}  {_line(r.memory)}")
    return 0


async def _show(engine: Any, args: argparse.Namespace) -> int:
    from omoide.memory.records import to_json
    m = await engine.get(args.user, args.id)
    if m is None:
        print(f"no memory {args.id} for user {args.user}", file=sys.stderr)
        return EXIT_FAILED
    print(json.dumps(to_json(m), ensure_ascii=False, indent=2))
    return 0


async def _forget(engine: Any, args: argparse.Namespace) -> int:
    missing = 0
    for memory_id in args.ids:
        if await engine.forget(args.user, memory_id):
            print(f"forgot {memory_id}")
        else:
            print(f"no memory {memory_id} for user {args.user}", file=sys.stderr)
            missing += 1
    return EXIT_FAILED if missing else 0


async def _export(engine: Any, args: argparse.Namespace) -> int:
    items = await engine.export(args.user)
    text = "".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"exported {len(items)} memories to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def read_export(text: str) -> list[dict[str, Any]]:
    """An export as JSON lines or one JSON list."""
    text = text.strip()
    if text.startswith("["):
        data = json.loads(text)
        return [d for d in data if isinstance(d, dict)]
    return [json.loads(line) for line in text.splitlines() if line.strip()]


async def _import(engine: Any, args: argparse.Namespace) -> int:
    items = read_export(Path(args.file).read_text(encoding="utf-8"))
    stored = await engine.import_memories(args.user, items)
    print(f"imported {len(stored)} memories into {args.user}")
    return 0


async def _pending(engine: Any, args: argparse.Namespace) -> int:
    rows = await engine.pending(args.user)
    if not rows:
        print("nothing pending")
    for r in rows:
        err = f"  last error: {r.last_error}" if r.last_error else ""
        print(f"{r.user}: {r.exchanges} exchanges ({r.oldest:%Y-%m-%d %H:%M} .."
              f" {r.newest:%Y-%m-%d %H:%M}), {r.attempts} failed attempts{err}")
    return 0


async def _extract(engine: Any, args: argparse.Namespace) -> int:
    report = await engine.extract_now(args.user)
    if report.pending:
        print(f"extraction failed, {report.exchanges} exchanges stay pending: {report.error}",
              file=sys.stderr)
        return EXIT_FAILED
    print(f"{report.exchanges} exchanges -> {len(report.stored)} memories stored,"
          f" {report.skipped_duplicates} duplicates skipped,"
          f" {len(report.superseded)} superseded")
    for m in report.stored:
        print(f"  {_line(m)}")
    return 0


async def _reembed(engine: Any, args: argparse.Namespace) -> int:
    counts = await engine.reembed(args.user or None)
    for user, n in counts.items():
        print(f"{user}: {n} memories re-embedded")
    return 0
