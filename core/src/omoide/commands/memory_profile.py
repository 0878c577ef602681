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
of the profile. Like the rest of ``omoide memory``, the handlers work through
:class:`omoide.memory_client.MemoryClient` (the running server, or the store itself);
:mod:`omoide.commands.memory` adds them as one more subcommand.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from omoide.commands._common import EXIT_FAILED

if TYPE_CHECKING:
    from omoide.memory_client import MemoryClient

Handler = Callable[["MemoryClient", argparse.Namespace], Awaitable[int]]
Runner = Callable[[argparse.Namespace, Handler, tuple[str, ...]], int]
CATEGORIES = ("health", "family", "pet", "basics", "work", "like", "habit", "person")


def add_profile_command(msub: argparse._SubParsersAction,  # type: ignore[type-arg]
                        run: Runner, user_type: Callable[[str], str]) -> None:
    """Add ``profile`` (show, set, forget) to ``omoide memory``'s subcommands; ``run``
    opens the memory client and calls a handler, ``user_type`` checks ``--user``."""
    p = msub.add_parser("profile", help="see and edit the facts that are in every prompt")
    psub = p.add_subparsers(dest="profile_command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str, handler: Handler) -> argparse.ArgumentParser:
        c = psub.add_parser(name, help=help_text)
        c.add_argument("--config", required=True, help="config file (YAML)")
        c.add_argument("--user", required=True, type=user_type, help="user id")
        c.set_defaults(handler=lambda args: run(args, handler, ("embed", "store")))
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


def _fact_line(f: dict[str, Any]) -> str:
    from omoide.server.log_safety import neutralise_controls
    return f"  [{f['category']}] {f['id']}  {neutralise_controls(str(f['text']))}"


async def _show(client: MemoryClient, args: argparse.Namespace) -> int:
    data = await client.profile(args.user, args.all)
    if args.json:
        print(json.dumps(data, ensure_ascii=False, indent=2))
        return 0
    facts = data["facts"]
    print(f"profile of {args.user}: {len(facts)} facts, {data['chars']}/{data['budget_chars']}"
          " characters")
    for f in facts:
        print(_fact_line(f))
    if args.all:
        for title, key in (("over the budget (still recalled per turn)", "over_budget"),
                           ("superseded by a newer fact", "superseded")):
            if data.get(key):
                print(title + ":")
                for f in data[key]:
                    print(_fact_line(f))
        if data.get("episodic"):
            print("episodic:")
            for m in data["episodic"]:
                print(f"  {m['id']}  {m['text']}  ({m['reason']})")
    return 0


async def _set(client: MemoryClient, args: argparse.Namespace) -> int:
    from omoide.memory_client import MemoryClientError
    if bool(args.text) == bool(args.id):
        print("give either TEXT or --id ID", file=sys.stderr)
        return EXIT_FAILED
    try:
        m = await client.profile_set(args.user, args.text, args.id, args.category)
    except MemoryClientError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_FAILED
    print(f"{m['id']}  [{m['kind']}]  {m['text']}")
    return 0


async def _forget(client: MemoryClient, args: argparse.Namespace) -> int:
    if not await client.profile_forget(args.user, args.id, args.keep_memory):
        print(f"no memory {args.id!r} for user {args.user}", file=sys.stderr)
        return EXIT_FAILED
    print(("taken out of the profile: " if args.keep_memory else "forgot ") + args.id)
    return 0
