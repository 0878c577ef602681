"""``omoide plugins [--json]``: what is installed, what it registers, what failed."""

from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("plugins", help="list installed plugins and their components")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(handler=_plugins)


def _plugins(args: argparse.Namespace) -> int:
    from omoide.plugins import build_registry

    registry = build_registry()
    infos = sorted(registry.plugins.values(), key=lambda i: i.name)
    if args.json:
        print(json.dumps([i.to_json() for i in infos], indent=2, ensure_ascii=False))
        return 0
    rows = [("NAME", "DISTRIBUTION", "VERSION", "COMPONENTS")]
    for i in infos:
        comps = ", ".join(f"{k}:{n}" for k, n in i.components) or "-"
        rows.append((i.name, i.distribution, i.version,
                     f"FAILED: {i.error}" if i.error else comps))
    widths = [max(len(r[c]) for r in rows) for c in range(3)]
    for r in rows:
        print("  ".join(r[c].ljust(widths[c]) for c in range(3)) + "  " + r[3])
    for problem in registry.problems:
        print(f"problem: {problem}")
    return 0
