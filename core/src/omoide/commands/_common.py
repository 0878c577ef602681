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


def device_data_dir(config: str | Path, device_name: str, index: int | None = None) -> Path:
    """The data folder the server gives the plugin serving a device of the config at
    ``config`` (``<server.data_dir>/devices/<plugin id>``, as the server's ``host_for``
    does): the ``index``-th entry of its ``devices:`` list, or by default the first one
    that uses ``device_name``. Config problems exit as :func:`load_or_exit` does; no such
    device exits with status 1 and a message saying so."""
    from omoide.config import wanted_components
    from omoide.plugins import build_registry

    settings = load_or_exit(config)
    registry = build_registry(wanted_components(settings.envelope))
    devices = [(path, choice) for path, choice in settings.components.items()
               if path.startswith("devices[")]
    if index is not None:
        devices = [d for d in devices if d[0] == f"devices[{index}]"]
    else:
        devices = [d for d in devices if d[1].cls.name == device_name]
    if not devices:
        raise SystemExit(f"{config}: no {'such' if index is not None else device_name} "
                         "device in `devices:`")
    name = devices[0][1].cls.name
    return settings.device_data_dir(registry.owner_of("device", name) or name)


def config_database_url(config: str | Path) -> str | None:
    """The shared database the config at ``config`` names (``database.url``), or None
    (state stays in its data dir): a plugin's CLI command keeps its state where the
    server does. Config problems exit as :func:`load_or_exit` does."""
    return load_or_exit(config).envelope.database.url or None
