"""``omoide config check FILE`` and ``omoide config schema``."""

from __future__ import annotations

import argparse
import json
import sys

from omoide.config import json_schema, load_settings
from omoide.errors import ConfigError


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("config", help="check a config file or print its schema")
    cmds = parser.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    check = cmds.add_parser("check", help="validate FILE without loading models")
    check.add_argument("file")
    check.set_defaults(handler=_check)
    schema = cmds.add_parser("schema", help="print the JSON schema of the config")
    schema.add_argument("--markdown", action="store_true",
                        help="print a Markdown reference of every section and component")
    schema.set_defaults(handler=_schema)


def _check(args: argparse.Namespace) -> int:
    try:
        settings = load_settings(args.file)
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    stages = ", ".join(f"{path}={choice.cls.name}"
                       for path, choice in settings.components.items())
    print(f"{args.file}: valid ({stages})")
    return 0


def _schema(args: argparse.Namespace) -> int:
    from omoide.plugins import build_registry

    registry = build_registry()
    if args.markdown:
        from omoide.config_reference import markdown_reference
        print(markdown_reference(registry))
        return 0
    print(json.dumps(json_schema(registry), indent=2, ensure_ascii=False))
    return 0
