"""Component kinds: one ABC per pipeline stage, and the types of their contracts.

``KINDS`` maps the YAML section of each stage to its base class. The memory contract
types (:mod:`omoide.components.memory_types`) and prompt sections
(:mod:`omoide.components.prompt`) live here too. Modules in this package import
nothing from :mod:`omoide.memory`, :mod:`omoide.pipeline` or :mod:`omoide.server`
except for type checkers: contracts do not depend on their implementations.
Plugins import all of this through :mod:`omoide.api`.
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
from omoide.components.memory_types import (
    ExtractionReport,
    MemoryService,
    Profile,
    ProfileFact,
    Recall,
)
from omoide.components.prompt import PromptContext, PromptSection
from omoide.components.speaker import (
    Identification,
    SpeakerCapabilities,
    SpeakerConfig,
    SpeakerEmbedding,
    SpeakerEncoder,
    SpeakerReason,
    VoiceQuality,
    identify,
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
from omoide.components.turn import TurnConfig, TurnDetector
from omoide.components.vad import VAD, EndOfSpeechDetector, VADConfig

KINDS: dict[str, type[Component]] = {  # type: ignore[type-arg]
    "vad": VAD, "asr": ASR, "embedder": Embedder, "store": VectorStore,
    "chat": ChatModel, "tts": TTS, "device": Device, "tool": Tool,
    "memory_engine": RecallEngine, "extractor": Extractor, "turn": TurnDetector,
    "speaker": SpeakerEncoder,
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
    "ExtractionReport",
    "ExtractionRequest",
    "Extractor",
    "ExtractorCapabilities",
    "ExtractorConfig",
    "ExtractorHost",
    "Fact",
    "Identification",
    "MemoryEngineCapabilities",
    "MemoryEngineConfig",
    "MemoryHit",
    "MemoryService",
    "PersonMemory",
    "Profile",
    "ProfileFact",
    "PromptContext",
    "PromptSection",
    "Recall",
    "RecallEngine",
    "RecallNotes",
    "RecallRequest",
    "RecallResult",
    "RecognitionContext",
    "ScrollPage",
    "SpeakerCapabilities",
    "SpeakerConfig",
    "SpeakerEmbedding",
    "SpeakerEncoder",
    "SpeakerReason",
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
    "TurnConfig",
    "TurnDetector",
    "VADConfig",
    "VectorStore",
    "VectorStoreConfig",
    "VoiceQuality",
    "identify",
]
