"""``omoide memory ...``: see, search, forget, export and import a user's memories.

    omoide memory list    --config FILE --user U [--json]
    omoide memory search  --config FILE --user U TEXT [--limit N] [--json]
    omoide memory show    --config FILE --user U ID
    omoide memory forget  --config FILE --user U ID [ID ...]
    omoide memory export  --config FILE --user U [--out FILE]      (JSON lines)
    omoide memory import  --config FILE --user U FILE [--skip-invalid]
    omoide memory pending --config FILE [--user U]
    omoide memory extract --config FILE --user U
    omoide memory retry   --config FILE --user U [--exchange ID ...]   (quarantined ones)
    omoide memory skip    --config FILE --user U [--exchange ID ...]
    omoide memory reembed --config FILE [--user U ...]
    omoide memory repair  --config FILE --user U [--json]     (a lost store, from the journal)
    omoide memory profile show|set|forget ...     (see omoide.commands.memory_profile)

While ``omoide serve`` runs on the config's data dir, the commands talk to it over
HTTP (found through ``<data_dir>/server.json``, with the admin token of the data dir);
otherwise they open the store and journal themselves. Each subcommand is written
once, against :class:`omoide.memory_client.MemoryClient`; ``reembed`` needs the
store itself and asks to stop the server first.

To add a subcommand: add a method to ``MemoryClient`` and both backends, then a
handler here (``async def _name(client, args) -> int``) registered with
``command(...)``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omoide.commands._common import EXIT_FAILED

if TYPE_CHECKING:
    from omoide.memory_client import MemoryClient

Handler = Callable[["MemoryClient", argparse.Namespace], Awaitable[int]]


def user_id_argument(value: str) -> str:
    """argparse ``type=`` for ``--user``: the user id rule, with its message."""
    from omoide.user_ids import InvalidUserId, validate_user_id

    try:
        return validate_user_id(value)
    except InvalidUserId as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _limit(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not 1 <= n <= 100:
        raise argparse.ArgumentTypeError("must be between 1 and 100")
    return n


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("memory", help="see, search, forget, export and import memories")
    msub = p.add_subparsers(dest="memory_command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str, handler: Handler,
                user: bool | None = True, needs: tuple[str, ...] = ("embed", "store"),
                ) -> argparse.ArgumentParser:
        c = msub.add_parser(name, help=help_text)
        c.add_argument("--config", required=True, help="config file (YAML)")
        if user is True:
            c.add_argument("--user", required=True, type=user_id_argument, help="user id")
        elif user is None:
            c.add_argument("--user", action="append", type=user_id_argument,
                           help="user id (repeatable; default all)")
        else:
            c.add_argument("--user", type=user_id_argument, help="user id (default: all users)")
        c.set_defaults(handler=lambda args: _run(args, handler, needs))
        parser: argparse.ArgumentParser = c
        return parser

    c = command("list", "list a user's memories", _list)
    c.add_argument("--json", action="store_true", help="print JSON lines")
    c = command("search", "memories ranked for a text (no injection gate)", _search)
    c.add_argument("text", metavar="TEXT")
    c.add_argument("--limit", type=_limit, default=10, help="how many, 1-100 (default 10)")
    c.add_argument("--json", action="store_true", help="print JSON")
    c = command("show", "one memory in full (JSON)", _show)
    c.add_argument("id", metavar="ID")
    c = command("forget", "delete memories from the store and every index", _forget)
    c.add_argument("ids", nargs="+", metavar="ID")
    c = command("export", "a user's memories as JSON lines", _export)
    c.add_argument("--out", metavar="FILE", help="write to FILE (default: stdout)")
    c = command("import", "add memories from an export (JSON lines or a JSON list); "
                          "memories already there are skipped", _import)
    c.add_argument("file", metavar="FILE")
    c.add_argument("--skip-invalid", action="store_true",
                   help="import the valid lines even if some are invalid (default: "
                        "import nothing and list every problem)")
    command("pending", "exchanges waiting for extraction, per user", _pending, user=False,
            needs=())
    command("extract", "extract a user's pending exchanges now", _extract,
            needs=("embed", "store", "chat"))
    command("reembed", "re-embed every memory with the configured embedder (stop the "
                       "server first)", _reembed, user=None)
    _register_dead_letter_commands(command)
    c = msub.add_parser("repair", help="rebuild a person's lost or damaged store from the"
                                       " journal's extraction results (stop the server first)")
    c.add_argument("--config", required=True, help="config file (YAML)")
    c.add_argument("--user", required=True, type=user_id_argument, help="user id")
    c.add_argument("--json", action="store_true", help="print the report as JSON")
    c.set_defaults(handler=_repair)
    c = msub.add_parser("vectors", help="memories stored before their vectors (a large "
                                        "import, a repair): how many wait; --fill embeds "
                                        "them now (stop the server first)")
    c.add_argument("--config", required=True, help="config file (YAML)")
    c.add_argument("--fill", action="store_true", help="embed every waiting memory now")
    c.set_defaults(handler=_vectors)
    from omoide.commands.memory_profile import add_profile_command
    add_profile_command(msub, _run, user_id_argument)
    from omoide.commands.memory_verify import add_verify_command
    add_verify_command(msub)


def _run(args: argparse.Namespace, handler: Handler, needs: tuple[str, ...]) -> int:
    return asyncio.run(_with_client(args, handler, needs))


async def _with_client(args: argparse.Namespace, handler: Handler,
                       needs: tuple[str, ...]) -> int:
    from omoide.commands._common import load_or_exit, report_failures
    from omoide.memory_client import open_memory_client

    settings = load_or_exit(args.config)

    async def work() -> int:
        command = f"omoide memory {args.memory_command}"
        async with open_memory_client(settings, command, needs) as client:
            return await handler(client, args)

    return await report_failures(work())


def _line(m: dict[str, Any]) -> str:
    dates = ",".join(m.get("event_dates") or ())
    flag = " (superseded)" if m.get("superseded_by") else ""
    said = str(m.get("created_at", ""))[:16].replace("T", " ")
    kind = f"{m.get('kind')}{' ' + dates if dates else ''}"
    return f"{m['id']}  {said}  [{kind}]  {_printable(str(m['text']))}{flag}"


def _printable(text: str) -> str:
    """Text for a terminal: control characters (ANSI escapes) made visible."""
    from omoide.server.log_safety import neutralise_controls

    return neutralise_controls(text)


async def _list(client: MemoryClient, args: argparse.Namespace) -> int:
    for m in await client.list_memories(args.user):
        print(json.dumps(m, ensure_ascii=False) if args.json else _line(m))
    return 0


async def _search(client: MemoryClient, args: argparse.Namespace) -> int:
    results = await client.search(args.user, args.text, args.limit)
    if args.json:
        print(json.dumps(results, ensure_ascii=False, indent=2))
    else:
        for r in results:
            print(f"{r['score']:.3f}  {_line(r)}")
    return 0


async def _show(client: MemoryClient, args: argparse.Namespace) -> int:
    m = await client.show(args.user, args.id)
    if m is None:
        print(f"no memory {args.id!r} for user {args.user}", file=sys.stderr)
        return EXIT_FAILED
    print(json.dumps(m, ensure_ascii=False, indent=2))
    return 0


async def _forget(client: MemoryClient, args: argparse.Namespace) -> int:
    missing = 0
    for memory_id in args.ids:
        if await client.forget(args.user, memory_id):
            print(f"forgot {memory_id}")
        else:
            print(f"no memory {memory_id!r} for user {args.user}", file=sys.stderr)
            missing += 1
    return EXIT_FAILED if missing else 0


async def _export(client: MemoryClient, args: argparse.Namespace) -> int:
    items = await client.export(args.user)
    text = "".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items)
    if args.out:
        try:
            Path(args.out).write_text(text, encoding="utf-8")
        except OSError as exc:
            print(f"omoide: cannot write {args.out}: {exc.strerror}", file=sys.stderr)
            return EXIT_FAILED
        print(f"exported {len(items)} memories to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


async def _import(client: MemoryClient, args: argparse.Namespace) -> int:
    try:
        data = Path(args.file).read_bytes()
    except OSError as exc:
        print(f"omoide: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return EXIT_FAILED
    ok, body = await client.import_file(args.user, data, skip_invalid=args.skip_invalid)
    for problem in body.get("problems", []):
        where = f"line {problem['line']}" if "line" in problem else f"item {problem['item']}"
        print(f"{args.file}: {where}: {problem['message']}", file=sys.stderr)
    hidden = body.get("invalid", 0) - len(body.get("problems", []))
    if hidden > 0:
        print(f"{args.file}: ... and {hidden} more invalid lines", file=sys.stderr)
    if not ok:
        print(f"omoide: {body.get('error', 'import failed')}", file=sys.stderr)
        if body.get("imported"):
            print(f"{body['imported']} memories were imported before it stopped",
                  file=sys.stderr)
        return EXIT_FAILED
    print(f"imported {body['imported']} memories into {args.user}; skipped "
          f"{body['skipped']} already there; {body.get('invalid', 0)} invalid")
    _say_vectors_pending(int(body.get("vectors_pending") or 0))
    return 0


def _say_vectors_pending(waiting: int) -> None:
    if waiting:
        print(f"{waiting} memories wait for their vectors: found by their words now, by "
              "meaning once embedded (a running server does it in the background; "
              "without one: omoide memory vectors --fill)")


async def _pending(client: MemoryClient, args: argparse.Namespace) -> int:
    rows = await client.pending(args.user)
    if not rows:
        print("nothing pending")
    for r in rows:
        err = f"  last error: {_printable(r['last_error'])}" if r.get("last_error") else ""
        span = (f" ({r['oldest'][:16].replace('T', ' ')} .. {r['newest'][:16].replace('T', ' ')})"
                if r.get("oldest") and r.get("newest") else "")
        held = f", {r['quarantined']} quarantined" if r.get("quarantined") else ""
        print(f"{r['user']}: {r['exchanges']} exchanges{span}, {r['attempts']} failed"
              f" attempts{held}{err}")
    _print_dead_letters(await client.dead_letters(args.user))
    return 0


async def _extract(client: MemoryClient, args: argparse.Namespace) -> int:
    report = await client.extract(args.user)
    if report["pending"]:
        print(f"extraction failed, {report['exchanges']} exchanges stay pending: "
              f"{report['error']}", file=sys.stderr)
        return EXIT_FAILED
    quarantined = report.get("quarantined") or []
    print(f"{report['exchanges']} exchanges -> {len(report['stored'])} memories stored,"
          f" {report['skipped_duplicates']} duplicates skipped,"
          f" {len(report['superseded'])} superseded"
          + (f", {len(quarantined)} quarantined" if quarantined else ""))
    for m in report["stored"]:
        print(f"  {_line(m)}")
    return 0


async def _reembed(client: MemoryClient, args: argparse.Namespace) -> int:
    counts = await client.reembed(args.user or None)
    for user, n in counts.items():
        print(f"{user}: {n} memories re-embedded")
    return 0


def _repair(args: argparse.Namespace) -> int:
    from omoide.commands._common import load_or_exit, report_failures

    settings = load_or_exit(args.config)
    return asyncio.run(report_failures(_repair_store(settings, args)))


async def _repair_store(settings: Any, args: argparse.Namespace) -> int:
    """Claim the data dir (no server may hold the store), open the embedder, the store
    and the journal, and rebuild ``args.user``'s store (:mod:`omoide.memory.control.repair`)."""
    from omoide.data_dir_owner import DataDirClaim
    from omoide.memory.control.pending_vectors import FILE_NAME as PENDING_FILE
    from omoide.memory.control.pending_vectors import PendingVectors
    from omoide.memory.control.repair import repair_person
    from omoide.memory.journal.opening import exchange_journal
    from omoide.runtime import Runtime

    with DataDirClaim.acquire(settings.data_dir, "omoide memory repair"):
        runtime = Runtime(settings)
        journal = exchange_journal(settings.data_dir / settings.memory.journal,
                                   settings.envelope.database)
        try:
            await runtime.start("embed", "store")
            journal.open()
            await runtime.store.open(await runtime.embedder.fingerprint())
            pending = PendingVectors(settings.data_dir / PENDING_FILE)
            try:
                report = await repair_person(journal, runtime.embedder, runtime.store,
                                             args.user, pending=pending)
                waiting = await pending.count()
            finally:
                pending.close()
        finally:
            journal.close()
            await runtime.stop()
    print(json.dumps(report.to_json(), ensure_ascii=False) if args.json else report.summary())
    if not args.json:
        _say_vectors_pending(waiting)
    return 0


def _vectors(args: argparse.Namespace) -> int:
    from omoide.commands._common import load_or_exit, report_failures

    settings = load_or_exit(args.config)
    return asyncio.run(report_failures(_fill_vectors(settings, args.fill)))


async def _fill_vectors(settings: Any, fill: bool) -> int:
    """Say how many memories wait for their vectors; with ``fill``, embed them now
    through the engine (so the person's saved index gets the vectors too)."""
    from omoide.data_dir_owner import DataDirClaim
    from omoide.memory.control.pending_vectors import FillProgress
    from omoide.memory_client.local import LocalMemoryClient

    def report(progress: FillProgress, waiting: int) -> None:
        print(f"{progress.filled} filled, {waiting} still waiting", file=sys.stderr)

    with DataDirClaim.acquire(settings.data_dir, "omoide memory vectors"):
        async with LocalMemoryClient.open(settings, ("embed", "store") if fill else ()
                                          ) as client:
            waiting = await client.engine.vectors.count()
            if fill and waiting:
                done = await client.engine.fill_vectors(report)
                print(f"{done.filled} vectors filled ({done.dropped} memories were gone)")
                waiting = await client.engine.vectors.count()
    print(f"{waiting} memories wait for their vectors")
    return 0


# -- quarantined exchanges (dead letters) --------------------------------------------------
def _register_dead_letter_commands(command: Callable[..., argparse.ArgumentParser]) -> None:
    c = command("retry", "extract quarantined exchanges again (all of a user's, or some)",
                _retry, needs=())
    c.add_argument("--exchange", action="append", metavar="ID",
                   help="only this exchange (repeatable)")
    c = command("skip", "never extract these exchanges (default: a user's quarantined ones);"
                " they stay in the journal", _skip, needs=())
    c.add_argument("--exchange", action="append", metavar="ID",
                   help="only this exchange, quarantined or waiting (repeatable)")


def _print_dead_letters(letters: list[dict[str, Any]]) -> None:
    if not letters:
        return
    print("quarantined (extraction failed on them alone; `omoide memory retry` or `skip`):")
    for d in letters:
        text = str(d["user_text"])
        text = text if len(text) <= 40 else text[:39] + "…"
        print(f"  {d['user']} {d['exchange_id']} [{d['at']}] {_printable(text)!r}:"
              f" {_printable(str(d['reason']))}")


async def _retry(client: MemoryClient, args: argparse.Namespace) -> int:
    released = await client.retry(args.user, args.exchange)
    if not released:
        print(f"no quarantined exchange of {args.user} to retry", file=sys.stderr)
        return EXIT_FAILED if args.exchange else 0
    print(f"released {len(released)} exchanges of {args.user}: extracted at the next run"
          f" (now: `omoide memory extract --user {args.user}`)")
    return 0


async def _skip(client: MemoryClient, args: argparse.Namespace) -> int:
    skipped = await client.skip(args.user, args.exchange)
    if not skipped:
        print(f"no exchange of {args.user} to skip", file=sys.stderr)
        return EXIT_FAILED if args.exchange else 0
    print(f"skipped {len(skipped)} exchanges of {args.user} (kept in the journal)")
    return 0
