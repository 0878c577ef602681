"""What subcommands share: loading a config with errors rendered for people."""

from __future__ import annotations

import sys
from pathlib import Path

from omoide.config import Settings, load_settings
from omoide.errors import ConfigError

EXIT_CONFIG = 2


def load_or_exit(path: str | Path) -> Settings:
    """Load and validate a config; on problems print them all and exit with 2."""
    try:
        return load_settings(path)
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        raise SystemExit(EXIT_CONFIG) from None
