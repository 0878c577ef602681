"""Components by their registered name, built as a config would build them.

The benches are tools beside omoide, not part of it: like a plugin, they reach other
plugins' components only through the registry (``store: {use: qdrant, path: ...}`` is
``build_component("store", "qdrant", {"path": ...})``), never by importing them. The
look-up is the one a config's memory stages use (:mod:`omoide.memory.stage_loader`);
here an unknown name ends the bench with what to install.
"""

from __future__ import annotations

from typing import Any

from omoide.errors import ConfigError
from omoide.memory.stage_loader import stage_class


def component_class(kind: str, name: str, *, needs: str) -> Any:
    """The class an installed plugin registers as ``name`` for ``kind`` (``store``,
    ``embedder``, ``device``, ...). When none does, exit with ``needs`` (what to install)."""
    try:
        return stage_class(kind, name, kind)
    except ConfigError:
        raise SystemExit(needs) from None


def build_component(kind: str, name: str, options: dict[str, Any], *, needs: str) -> Any:
    """A new (not started) component ``name`` of ``kind`` with the config ``options``
    (the YAML section without ``use``), validated by the component's own ``Config``."""
    cls = component_class(kind, name, needs=needs)
    return cls(cls.Config.model_validate(options))
