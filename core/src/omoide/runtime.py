"""Builds the configured components from validated settings and runs their lifecycle.

Construction is cheap (each component's ``__init__``); :meth:`Runtime.start` loads
weights and opens clients, concurrently, and reports every failure at once.
"""

from __future__ import annotations

import asyncio
import logging
from functools import cached_property
from typing import TYPE_CHECKING, Any

from omoide.components import (
    ASR,
    TTS,
    VAD,
    ChatModel,
    Component,
    Device,
    Embedder,
    Extractor,
    RecallEngine,
    SpeakerEncoder,
    Tool,
    TurnDetector,
    VectorStore,
)
from omoide.config import Settings

if TYPE_CHECKING:
    from omoide.memory.api import MemoryService

log = logging.getLogger("omoide.runtime")

STAGE_NAMES = ("vad", "turn", "speaker", "asr", "embed", "store", "chat", "tts")


class StartupFailed(Exception):
    """One or more components failed to start; ``failures`` maps YAML path -> error."""

    def __init__(self, failures: dict[str, BaseException]) -> None:
        self.failures = failures
        lines = [f"  - {path}: {exc}" for path, exc in failures.items()]
        super().__init__("components failed to start:\n" + "\n".join(lines))


class Runtime:
    """The component instances of one config."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._by_path: dict[str, Component[Any]] = {
            path: choice.cls(choice.config) for path, choice in settings.components.items()}
        self.vad: VAD | None = self._get("vad", VAD)  # type: ignore[assignment]
        self.turn: TurnDetector | None = self._get("turn", TurnDetector)  # type: ignore[assignment]
        self.speaker: SpeakerEncoder | None = self._get(  # type: ignore[assignment]
            "speaker", SpeakerEncoder)
        self.asr: ASR = self._get("asr", ASR)  # type: ignore[assignment]
        self.store: VectorStore = self._get("store", VectorStore)  # type: ignore[assignment]
        self.chat: ChatModel = self._get("chat", ChatModel)  # type: ignore[assignment]
        self.tts: TTS = self._get("tts", TTS)  # type: ignore[assignment]
        self.devices: list[Device] = [c for p, c in self._by_path.items()  # type: ignore[misc]
                                      if p.startswith("devices[")]
        self.tools: list[Tool] = [c for p, c in self._by_path.items()  # type: ignore[misc]
                                  if p.startswith("tools[")]
        self.read_engine: RecallEngine | None = self._get(  # type: ignore[assignment]
            "memory.retrieve", RecallEngine)
        self.extractor: Extractor | None = self._get(  # type: ignore[assignment]
            "memory.extract", Extractor)
        if self.extractor is not None:  # before start(), which may already ask the host
            from omoide.memory.stage_views import ExtractorHostView
            self.extractor.attach(ExtractorHostView(lambda: self.chat,
                                                    settings.assistant.timezone))
        primary: Embedder = self._get("embed", Embedder)  # type: ignore[assignment]
        fallback = settings.envelope.embed.fallback
        if fallback is not None:
            from omoide.components.embedder_fallback import FallbackEmbedder
            secondary = self._by_path["embed.fallback"]
            self.embedder: Embedder = FallbackEmbedder(
                primary, secondary,  # type: ignore[arg-type]
                min_agreement=fallback.min_agreement, recheck_seconds=fallback.recheck_seconds)
        else:
            self.embedder = primary
        self._started: set[str] = set()

    def _get(self, path: str, kind: type) -> Component[Any] | None:
        comp = self._by_path.get(path)
        if comp is not None and not isinstance(comp, kind):
            raise TypeError(f"{path}: {type(comp).__name__} is not a {kind.__name__}")
        return comp

    def components(self) -> dict[str, Component[Any]]:
        """Every component by YAML path ("asr", "embed", "embed.fallback", "devices[0]",
        "memory.retrieve"...)."""
        out = dict(self._by_path)
        if self.embedder is not self._by_path.get("embed"):
            out["embed"] = self.embedder
            out.pop("embed.fallback", None)
        return out

    async def start(self, *names: str) -> None:
        """Start the named stages (all when none given), concurrently.

        Raises :class:`StartupFailed` listing every component that failed.
        """
        comps = self.components()
        wanted = [p for p in comps if not names or p in names
                  or any(p.startswith(n + "[") for n in names)]
        todo = [p for p in wanted if p not in self._started]
        results = await asyncio.gather(*(comps[p].start() for p in todo),
                                       return_exceptions=True)
        failures: dict[str, BaseException] = {}
        for path, result in zip(todo, results, strict=True):
            if isinstance(result, BaseException):
                failures[path] = result
            else:
                self._started.add(path)
        if failures:
            raise StartupFailed(failures)

    async def stop(self) -> None:
        comps = self.components()
        for path in list(self._started):
            try:
                await comps[path].stop()
            except Exception:
                log.exception("stopping %s failed", path)
        self._started.clear()

    @cached_property
    def memory(self) -> MemoryService:
        """The memory engine over this runtime's embedder, store and chat model, with the
        configured read engine and extractor."""
        from omoide.memory.engine import MemoryEngine

        return MemoryEngine(self.settings.memory, embedder=self.embedder, store=self.store,
                            chat=self.chat, data_dir=self.settings.data_dir,
                            timezone=self.settings.assistant.timezone,
                            read_engine=self.read_engine, extractor=self.extractor,
                            database=self.settings.envelope.database)
