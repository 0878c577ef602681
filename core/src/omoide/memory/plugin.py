"""The ``memory`` plugin: omoide's own memory stages, registered like anyone's.

It goes through the same entry point group and hooks as a third-party plugin
(``[project.entry-points."omoide.plugins"] memory = "omoide.memory.plugin"``), so the
built-in engines get no privilege a mem0 or Graphiti adapter would lack:

- memory engines ``baseline`` (the reference's algorithm) and ``robust`` (the default);
- the extractor ``chat`` (the configured chat model with omoide's prompt).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from omoide.hookspecs import hookimpl


@hookimpl
def register_memory_engines(register: Callable[[Any], None]) -> None:
    from omoide.memory.recall.baseline import BaselineEngine
    from omoide.memory.recall.robust import RobustEngine
    register(BaselineEngine)
    register(RobustEngine)


@hookimpl
def register_extractors(register: Callable[[Any], None]) -> None:
    from omoide.memory.extract.chat_extractor import ChatExtractor
    register(ChatExtractor)
