"""Memory stages by name, for a memory engine built outside a runtime (tests, ``omoide
bench``, ``omoide eval`` asking for an engine the config does not pick).

A runtime builds the configured stages from validated settings like every other
component; this does the same for one ``{use: NAME, ...}`` through the plugin
registry, so a plugin's engine is found exactly as omoide's own are.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from omoide.components import Component
from omoide.errors import ConfigError, ConfigProblem
from omoide.stage_spec import StageSpec

_CLASSES: dict[tuple[str, str], type[Component[Any]]] = {}


def stage_class(kind: str, name: str, path: str) -> type[Component[Any]]:
    """The class registered as ``name`` for ``kind`` (loading only the plugins that
    declare it). Raises :class:`ConfigError` at ``path`` for an unknown name."""
    cls = _CLASSES.get((kind, name))
    if cls is not None:
        return cls
    from omoide.config import did_you_mean
    from omoide.plugins import build_registry

    registry = build_registry([(kind, name)])
    cls = registry.components[kind].get(name)
    if cls is None:
        available = registry.available(kind)
        raise ConfigError([ConfigProblem(
            f"{path}.use", f"unknown {kind} {name!r}{did_you_mean(name, available)};"
                           f" available: {', '.join(available) or 'none installed'}")])
    _CLASSES[(kind, name)] = cls
    return cls


def build_stage(kind: str, spec: StageSpec, path: str) -> Component[Any]:
    """A new, unstarted component for ``spec`` (its options validated by its Config)."""
    from omoide.config import pydantic_problems

    cls = stage_class(kind, spec.use, path)
    try:
        config = cls.Config.model_validate(spec.options)
    except ValidationError as exc:
        raise ConfigError(pydantic_problems(exc, path, cls.Config)) from None
    return cls(config)
