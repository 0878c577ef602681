"""The ``omoide`` command.

The core's subcommands live in :mod:`omoide.commands`, one module each, discovered at
start: a module exposes ``register(sub)`` that adds its parsers and sets
``handler=fn(args) -> int``. Plugins add theirs through the ``register_commands`` hook
(:func:`omoide.hookspecs.register_commands`); only plugins that declare a
``command.NAME`` component in their entry points are imported for it. Module top levels
stay cheap: ``omoide --help`` must not import torch.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys
from collections.abc import Sequence

from omoide import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="omoide", description="omoide: a voice assistant server for StackChan, "
                                   "with long-term memory.")
    parser.add_argument("--version", action="version", version=f"omoide {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more logging (-v info, -vv debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    import omoide.commands as commands

    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"omoide.commands.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
    _add_plugin_commands(sub)
    return parser


def _add_plugin_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Let the installed plugins that declare commands add them (a broken one is skipped:
    ``omoide plugins`` names it and why)."""
    from omoide.plugins import PluginRegistry

    registry = PluginRegistry()
    registry.discover()
    registry.load_for(registry.declared_of_kind("command"))
    registry.pm.hook.register_commands(cli=sub)
    from omoide.commands._tool_stubs import add_missing_tool_commands

    add_missing_tool_commands(sub)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = (logging.WARNING, logging.INFO, logging.DEBUG)[min(args.verbose, 2)]
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return int(handler(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
