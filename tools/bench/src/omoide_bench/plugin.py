"""The omoide plugin that adds ``omoide bench`` and ``omoide eval`` to the command line.

Cheap to import (it runs for ``omoide --help``): the commands import what they measure
inside their handlers.
"""

from __future__ import annotations

import argparse

from omoide.api import hookimpl


@hookimpl
def register_commands(cli: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from omoide_bench.commands import bench, eval

    bench.register(cli)
    eval.register(cli)
