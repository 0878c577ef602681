"""``omoide token ...``: the tokens that open the management API and the web page.

    omoide token show   --config FILE                 the admin token (created if none)
    omoide token rotate --config FILE                 a new admin token; the old one stops
                                                      working at once, in a running server too
    omoide token create --config FILE --user U [--label TEXT]
                                                      a token that sees only user U (shown once)
    omoide token list   --config FILE [--user U]      person tokens (ids, never the tokens)
    omoide token revoke --config FILE (ID | --user U) revoke one token, or all of U's

Tokens live in ``<data_dir>/auth/`` (see :mod:`omoide.server.tokens`); person tokens
are kept as SHA-256 hashes only.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from omoide.commands._common import EXIT_FAILED, load_or_exit
from omoide.commands.memory import user_id_argument

if TYPE_CHECKING:
    from omoide.server.tokens import TokenStorage


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("token", help="admin and per-person tokens for the HTTP API")
    tsub = p.add_subparsers(dest="token_command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        c: argparse.ArgumentParser = tsub.add_parser(name, help=help_text)
        c.add_argument("--config", required=True, help="config file (YAML)")
        return c

    command("show", "print the admin token (creating it if there is none)").set_defaults(
        handler=_show)
    command("rotate", "replace the admin token (the old one stops working at once)"
            ).set_defaults(handler=_rotate)
    c = command("create", "a new token that sees only one user (printed once)")
    c.add_argument("--user", required=True, type=user_id_argument, help="user id")
    c.add_argument("--label", default="", help="a note to recognise it by (e.g. a device)")
    c.set_defaults(handler=_create)
    c = command("list", "list person tokens (ids, users, labels; never the tokens)")
    c.add_argument("--user", type=user_id_argument, help="only this user's")
    c.set_defaults(handler=_list)
    c = command("revoke", "revoke a person token by id, or all tokens of a user")
    c.add_argument("id", nargs="?", metavar="ID", help="token id (from `omoide token list`)")
    c.add_argument("--user", type=user_id_argument, help="revoke every token of this user")
    c.set_defaults(handler=_revoke)


def _tokens(args: argparse.Namespace) -> TokenStorage:
    from omoide.server.postgres_tokens import token_store

    settings = load_or_exit(args.config)
    return token_store(settings.data_dir, settings.envelope.database.url)


def _guarded(action: Callable[[], int]) -> int:
    """Run ``action``; an unreadable token file is a message, not a traceback."""
    from omoide.errors import OmoideError

    try:
        return action()
    except (OmoideError, OSError) as exc:
        print(f"omoide: {exc}", file=sys.stderr)
        return EXIT_FAILED


def _show(args: argparse.Namespace) -> int:
    def act() -> int:
        tokens = _tokens(args)
        print(tokens.admin_token())
        return 0
    return _guarded(act)


def _rotate(args: argparse.Namespace) -> int:
    def act() -> int:
        tokens = _tokens(args)
        print(tokens.rotate_admin_token())
        print("the old admin token and its browser sessions no longer work", file=sys.stderr)
        return 0
    return _guarded(act)


def _create(args: argparse.Namespace) -> int:
    def act() -> int:
        token, entry = _tokens(args).create_person_token(args.user, args.label)
        print(token)
        print(f"token {entry.id} for user {entry.user}: shown once, keep it safe "
              f"(revoke: omoide token revoke --config {args.config} {entry.id})",
              file=sys.stderr)
        return 0
    return _guarded(act)


def _list(args: argparse.Namespace) -> int:
    def act() -> int:
        entries = _tokens(args).person_tokens(args.user)
        if not entries:
            print("no person tokens")
        for e in entries:
            label = f"  {e.label}" if e.label else ""
            print(f"{e.id}  {e.user}  {e.created_at}{label}")
        return 0
    return _guarded(act)


def _revoke(args: argparse.Namespace) -> int:
    if (args.id is None) == (args.user is None):
        print("omoide: name a token id or --user (one of the two)", file=sys.stderr)
        return 2

    def act() -> int:
        gone = _tokens(args).revoke(token_id=args.id, user=args.user)
        if not gone:
            print("omoide: no such token", file=sys.stderr)
            return EXIT_FAILED
        for e in gone:
            print(f"revoked {e.id} ({e.user})")
        return 0
    return _guarded(act)
