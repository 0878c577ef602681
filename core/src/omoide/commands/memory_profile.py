"""``omoide memory profile ...``: see and edit the facts that are in every prompt.

    omoide memory profile show   --config FILE --user U [--all] [--json]
    omoide memory profile set    --config FILE --user U TEXT [--category C]
    omoide memory profile set    --config FILE --user U --id ID [--category C]
    omoide memory profile forget --config FILE --user U ID [--keep-memory]

``show`` prints the profile block's lines (category, id, text) and its size against the
budget; ``--all`` adds what the budget left out, what a newer fact superseded, and why
every other memory is episodic. ``set`` adds a fact in the person's words (a dated
plan or event is refused: it is never profile) or puts an existing memory in the
profile; ``forget`` forgets a profile fact, or with ``--keep-memory`` only takes it out
of the profile. Kept apart from :mod:`omoide.commands.memory`, which adds it as one
more subcommand.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from omoide.commands._common import EXIT_FAILED

CATEGORIES = ("health", "family", "pet", "basics", "work", "like", "habit", "person")


def add_profile_command(msub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``profile`` (with show, set, forget) to ``omoide memory``'s subcommands."""
    p = msub.add_parser("profile", help="see and edit the facts that are in every prompt")
    psub = p.add_subparsers(dest="profile_command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str,
                handler: Callable[[Any, argparse.Namespace], Awaitable[int]],
                ) -> argparse.ArgumentParser:
        c = psub.add_parser(name, help=help_text)
        c.add_argument("--config", required=True, help="config file (YAML)")
        c.add_argument("--user", required=True, help="user id")
        c.set_defaults(handler=lambda args: asyncio.run(_with_engine(args, handler)))
        parser: argparse.ArgumentParser = c
        return parser

    c = command("show", "the profile block, and with --all what is left out and why", _show)
    c.add_argument("--all", action="store_true",
                   help="also what the budget left out, superseded facts, episodic reasons")
    c.add_argument("--json", action="store_true", help="print JSON")
    c = command("set", "add a profile fact, or put a memory (--id) in the profile", _set)
    c.add_argument("text", nargs="?", metavar="TEXT", help="the fact (「あなたは…」)")
    c.add_argument("--id", metavar="ID", help="an existing memory to put in the profile")
    c.add_argument("--category", choices=CATEGORIES, help="default: the classifier's")
    c = command("forget", "forget a profile fact (or only take it out: --keep-memory)",
                _forget)
    c.add_argument("id", metavar="ID")
    c.add_argument("--keep-memory", action="store_true",
                   help="keep it as an episodic memory instead of forgetting it")


async def _with_engine(args: argparse.Namespace,
                       handler: Callable[[Any, argparse.Namespace], Awaitable[int]]) -> int:
    from omoide.commands._common import load_or_exit, report_failures
    from omoide.memory.engine import MemoryEngine
    from omoide.runtime import Runtime

    settings = load_or_exit(args.config)
    runtime = Runtime(settings)
    engine = runtime.memory
    assert isinstance(engine, MemoryEngine)

    async def work() -> int:
        await runtime.start("embed", "store")
        await engine.start()
        return await handler(engine, args)

    try:
        return await report_failures(work())
    finally:
        await engine.stop()
        await runtime.stop()


async def _show(engine: Any, args: argparse.Namespace) -> int:
    from omoide.memory.profile import render_profile_block
    from omoide.memory.profile_edit import view
    v = await view(engine, args.user)
    if args.json:
        data = v.to_json()
        if not args.all:
            data = {k: data[k] for k in ("budget_chars", "chars", "facts")}
        print(json.dumps(data, ensure_ascii=False, indent=2))
        return 0
    p = v.profile
    print(f"profile of {args.user}: {len(p.facts)} facts, {p.chars}/{p.budget_chars} characters")
    for f in p.facts:
        print(f"  [{f.category.value}] {f.memory.id}  {f.memory.text}")
    if args.all:
        for title, facts in (("over the budget (still recalled per turn)", p.overflow),
                             ("superseded by a newer fact", p.superseded)):
            if facts:
                print(title + ":")
                for f in facts:
                    print(f"  [{f.category.value}] {f.memory.id}  {f.memory.text}")
        episodic = [(m, c) for m, c in v.decisions if not c.profile]
        if episodic:
            print("episodic:")
            for m, c in episodic:
                print(f"  {m.id}  {m.text}  ({c.reason})")
        block = render_profile_block(p)
        if block:
            print("\nas the chat model sees it:\n" + block)
    return 0


async def _set(engine: Any, args: argparse.Namespace) -> int:
    from omoide.memory.profile_edit import ProfileEditError, mark, set_fact
    if bool(args.text) == bool(args.id):
        print("give either TEXT or --id ID", file=sys.stderr)
        return EXIT_FAILED
    try:
        if args.id:
            m = await mark(engine, args.user, args.id, True, args.category)
        else:
            m = await set_fact(engine, args.user, args.text, args.category)
    except ProfileEditError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_FAILED
    print(f"{m.id}  [{m.kind}]  {m.text}")
    return 0


async def _forget(engine: Any, args: argparse.Namespace) -> int:
    from omoide.memory.profile_edit import forget
    if not await forget(engine, args.user, args.id, keep_memory=args.keep_memory):
        print(f"no memory {args.id} for user {args.user}", file=sys.stderr)
        return EXIT_FAILED
    print(("taken out of the profile: " if args.keep_memory else "forgot ") + args.id)
    return 0
