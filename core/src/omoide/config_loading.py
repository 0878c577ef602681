"""Loading a config: read the file, build the registry of the plugins it uses, validate.

The schema and both validation phases are :mod:`omoide.config_schema`'s; this module
adds only what needs the plugin loader, so that the schema never imports it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from omoide.config_schema import Settings, load_yaml, phase_one, validate_stages
from omoide.errors import ConfigError, ConfigProblem
from omoide.plugins import PluginRegistry, build_registry


def validate_config(data: dict[str, Any], *, source: str | None = None,
                    registry: PluginRegistry | None = None,
                    environ: dict[str, str] | os._Environ[str] = os.environ) -> Settings:
    """Both phases on parsed YAML; every problem of both is reported in one ConfigError.

    Without ``registry``, loads only the plugins the config uses.
    """
    envelope, specs, problems = phase_one(data, environ)
    if registry is None:
        registry = build_registry([(kind, spec.use) for _, kind, spec in specs])
    choices, stage_problems = validate_stages(specs, registry)
    reported = {p.path for p in problems}
    problems.extend(p for p in stage_problems if p.path not in reported)
    if problems or envelope is None:
        raise ConfigError(problems, source)
    return Settings(envelope, choices, source)


def load_settings(path: str | Path, registry: PluginRegistry | None = None,
                  environ: dict[str, str] | os._Environ[str] = os.environ) -> Settings:
    """Read and fully validate a config file, loading only the plugins it uses.

    Relative ``server.data_dir`` stays relative to the working directory.
    """
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([ConfigProblem("", f"cannot read {source}: {exc.strerror}")],
                          source) from None
    return validate_config(load_yaml(text, source), source=source, registry=registry,
                           environ=environ)
