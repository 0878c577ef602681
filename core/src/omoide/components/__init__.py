"""Component kinds: one ABC per pipeline stage.

``KINDS`` maps the YAML section of each stage to its base class.
"""

from __future__ import annotations

from omoide.components.asr import ASR, ASRConfig, RecognitionContext
from omoide.components.base import (
                                    Capabilities,
                                    Component,
                                    ComponentConfig,
                                    ComponentState,
                                    ComponentStatus,
                                    StrictConfig,
)
from omoide.components.chat import ChatConfig, ChatModel
from omoide.components.device import Device, DeviceConfig, DeviceHost
from omoide.components.embedder import Embedder, EmbedderConfig
from omoide.components.extractor import (
    ExtractionFormatError,
    ExtractionRequest,
    Extractor,
    ExtractorCapabilities,
    ExtractorConfig,
    ExtractorHost,
    Fact,
    TooManyFacts,
)
from omoide.components.memory_engine import (
    MemoryEngineCapabilities,
    MemoryEngineConfig,
    MemoryHit,
    PersonMemory,
    RecallEngine,
    RecallNotes,
    RecallRequest,
    RecallResult,
)
from omoide.components.store import (
    ScrollPage,
    StoreCapabilities,
    VectorStore,
    VectorStoreConfig,
)
from omoide.components.tool import (
    AnnounceOutcome,
    ConfirmationRequest,
    Tool,
    ToolConfig,
    ToolContext,
    ToolError,
    ToolFunction,
    ToolHost,
)
from omoide.components.tts import TTS, TTSConfig
from omoide.components.vad import VAD, EndOfSpeechDetector, VADConfig

KINDS: dict[str, type[Component]] = {  # type: ignore[type-arg]
    "vad": VAD, "asr": ASR, "embedder": Embedder, "store": VectorStore,
    "chat": ChatModel, "tts": TTS, "device": Device, "tool": Tool,
    "memory_engine": RecallEngine, "extractor": Extractor,
}

__all__ = [
                                    "ASR",
                                    "KINDS",
                                    "TTS",
                                    "VAD",
                                    "ASRConfig",
                                    "AnnounceOutcome",
                                    "Capabilities",
                                    "ChatConfig",
                                    "ChatModel",
                                    "Component",
                                    "ComponentConfig",
                                    "ComponentState",
                                    "ComponentStatus",
                                    "ConfirmationRequest",
                                    "Device",
                                    "DeviceConfig",
                                    "DeviceHost",
                                    "Embedder",
                                    "EmbedderConfig",
                                    "EndOfSpeechDetector",
                                    "ExtractionFormatError",
                                    "ExtractionRequest",
                                    "Extractor",
                                    "ExtractorCapabilities",
                                    "ExtractorConfig",
                                    "ExtractorHost",
                                    "Fact",
                                    "MemoryEngineCapabilities",
                                    "MemoryEngineConfig",
                                    "MemoryHit",
                                    "PersonMemory",
                                    "RecallEngine",
                                    "RecallNotes",
                                    "RecallRequest",
                                    "RecallResult",
                                    "RecognitionContext",
                                    "ScrollPage",
                                    "StoreCapabilities",
                                    "StrictConfig",
                                    "TTSConfig",
                                    "TooManyFacts",
                                    "Tool",
                                    "ToolConfig",
                                    "ToolContext",
                                    "ToolError",
                                    "ToolFunction",
                                    "ToolHost",
                                    "VADConfig",
                                    "VectorStore",
                                    "VectorStoreConfig",
]
