"""What subcommands share: loading a config with errors rendered for people."""

from __future__ import annotations

import sys
from collections.abc import Awaitable
from pathlib import Path

from omoide.config import Settings, load_settings
from omoide.errors import ConfigError

EXIT_CONFIG = 2
EXIT_FAILED = 1


def load_or_exit(path: str | Path) -> Settings:
    """Load and validate a config; on problems print them all and exit with 2."""
    try:
        return load_settings(path)
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        raise SystemExit(EXIT_CONFIG) from None


async def report_failures(work: Awaitable[int]) -> int:
    """Await a command's work; a component that failed to start or any
    :class:`omoide.errors.OmoideError` is printed for people (no traceback) as exit 1."""
    from omoide.errors import OmoideError
    from omoide.runtime import StartupFailed

    try:
        return int(await work)
    except StartupFailed as exc:
        print(str(exc), file=sys.stderr)
    except OmoideError as exc:
        print(f"omoide: {exc}", file=sys.stderr)
    return EXIT_FAILED
