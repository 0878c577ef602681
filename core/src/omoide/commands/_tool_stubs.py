"""Stand-ins for the tooling commands a separate distribution adds (``omoide bench``,
``omoide eval`` from omoide-bench): when it is not installed, the command still exists
and says how to get it, instead of argparse's "invalid choice".

:func:`add_missing_tool_commands` runs after the plugins have added their commands, so a
stub never shadows the real command.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from omoide.commands._common import EXIT_FAILED

TOOL_COMMANDS: dict[str, tuple[str, str]] = {
    "bench": ("omoide-bench", "tools/bench"),
    "eval": ("omoide-bench", "tools/bench"),
}
"""Command name -> (distribution that provides it, its folder in an omoide checkout)."""


def add_missing_tool_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add a stub for every tooling command no installed plugin added."""
    for name, (distribution, folder) in TOOL_COMMANDS.items():
        if name in sub.choices:
            continue
        # No option prefix: every word, `--help` included, is an ignored argument, so any
        # command line gets the explanation rather than a usage error.
        parser = sub.add_parser(name, help=f"(needs {distribution}, not installed)",
                                add_help=False, prefix_chars="\0")
        parser.add_argument("ignored", nargs="*", help=argparse.SUPPRESS)
        parser.set_defaults(handler=_explain(name, distribution, folder))


def _explain(name: str, distribution: str,
             folder: str) -> Callable[[argparse.Namespace], int]:
    def handler(args: argparse.Namespace) -> int:
        print(f"omoide {name} needs the {distribution} distribution, which is not installed"
              f" (or failed to load: `omoide plugins` says why). In an omoide checkout:\n"
              f"    pip install -e {folder}\n"
              f"or `./dev.sh test`, which installs the test and benchmark tooling.",
              file=sys.stderr)
        return EXIT_FAILED
    return handler
