"""``omoide bench <name>``: benchmarks discovered in :mod:`omoide_bench.benches`."""

from __future__ import annotations

import argparse
import importlib
import pkgutil


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("bench", help="run a benchmark (medians and ratios, one run)")
    benches = parser.add_subparsers(dest="bench", metavar="NAME", required=True)
    import omoide_bench.benches as bench

    for info in sorted(pkgutil.iter_modules(bench.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"omoide_bench.benches.{info.name}")
        if hasattr(module, "register"):
            module.register(benches)
