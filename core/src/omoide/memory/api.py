"""The memory service as the turn pipeline and the server see it.

The pipeline only needs these calls; the engine behind them (journal, extraction,
read engines) lives in the rest of :mod:`omoide.memory`. The types themselves are
contract types and live in :mod:`omoide.components.memory_types`; they stay
importable from here.
"""

from __future__ import annotations

from omoide.components.memory_types import ExtractionReport, MemoryService, Recall

__all__ = ["ExtractionReport", "MemoryService", "Recall"]
