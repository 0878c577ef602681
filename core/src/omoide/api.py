"""The public plugin API: the one module a plugin imports from omoide.

Everything a plugin may use is exported here, and this surface is kept stable;
every other module of the core is internal and may change between releases.
In-tree plugins get no more than a third-party plugin: they import ``omoide.api``
and, in their test-support code, ``omoide.testing`` (the contract kit and test
doubles), nothing else (``tests/test_house_rules.py`` checks it). A plugin::

    from omoide.api import TTS, AudioClip, TTSConfig, hookimpl

    class MyTTS(TTS): ...

    @hookimpl
    def register_tts(register):
        register(MyTTS)

What is here:

- :data:`hookimpl`, to mark hook implementations (the hooks: :mod:`omoide.hookspecs`);
- the component kinds — each an ABC with its ``Config`` base and ``Capabilities`` —
  and the types of their contracts (recalls, profiles, prompt sections, tools,
  devices);
- the shared types (:class:`AudioClip`, :class:`Memory`, :class:`ChatMessage`, ...),
  :data:`Secret` for config fields given as ``{$env: NAME}``, and the errors a plugin
  raises or catches;
- helpers the plugins share: audio (:func:`resample`, :func:`read_wav`,
  :func:`write_wav`), threads and priorities (:func:`load_on_own_thread`,
  :class:`PriorityRunner`, :func:`work_priority`), model weights
  (:func:`resolve_weights`, :func:`assemble_model`, ...), OpenAI-compatible error
  handling, user ids, the profile classifier (:func:`profile_or_episodic`), and the
  data folder of a configured device for a plugin's CLI command
  (:func:`device_data_dir`; the shared database, :func:`config_database_url`), and
  the protocol a device's simulated robot follows (:class:`SimulatedDeviceClient`,
  for ``Device.simulated_client``);
- the shared database, for a plugin whose state several workers must share (a tool
  reads ``ToolHost.database_url``, a device plugin its host's ``database_url``):
  :func:`open_pool` (psycopg 3, imported only when
  called), numbered per-component schema migrations (:class:`Migration`,
  :func:`apply_migrations`) and rate limits every worker counts alike
  (:class:`SharedCounters`: ``SharedCounters.open(url).window(scope, limit, seconds)``).

Importing this module is cheap: no torch, transformers, onnxruntime or FastAPI.
The few names whose modules pull in more of the core (turn types, announcements,
the profile classifier, the CLI helper) are imported on first use. The core itself
never imports this module: it is the plugins' door, not a hub.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from omoide.audio import read_wav, resample, write_wav
from omoide.blocking import PriorityRunner, load_on_own_thread, work_priority
from omoide.components import (
    ASR,
    KINDS,
    TTS,
    VAD,
    AnnounceOutcome,
    ASRConfig,
    Capabilities,
    ChatConfig,
    ChatModel,
    Component,
    ComponentConfig,
    ComponentState,
    ComponentStatus,
    ConfirmationRequest,
    Device,
    DeviceConfig,
    DeviceHost,
    Embedder,
    EmbedderConfig,
    EndOfSpeechDetector,
    ExtractionFormatError,
    ExtractionReport,
    ExtractionRequest,
    Extractor,
    ExtractorCapabilities,
    ExtractorConfig,
    ExtractorHost,
    Fact,
    Identification,
    MemoryEngineCapabilities,
    MemoryEngineConfig,
    MemoryHit,
    MemoryService,
    PersonMemory,
    Profile,
    ProfileFact,
    PromptContext,
    PromptSection,
    Recall,
    RecallEngine,
    RecallNotes,
    RecallRequest,
    RecallResult,
    RecognitionContext,
    ScrollPage,
    SpeakerCapabilities,
    SpeakerConfig,
    SpeakerEmbedding,
    SpeakerEncoder,
    SpeakerReason,
    StoreCapabilities,
    StrictConfig,
    Tool,
    ToolConfig,
    ToolContext,
    ToolError,
    ToolFunction,
    ToolHost,
    TooManyFacts,
    TTSConfig,
    TurnConfig,
    TurnDetector,
    VADConfig,
    VectorStore,
    VectorStoreConfig,
    VoiceQuality,
    identify,
)
from omoide.components.asr import RecognitionStream, StreamingRecognition
from omoide.components.memory_types import Category as ProfileCategory
from omoide.components.memory_types import ReadInputs
from omoide.components.simulated_device import SimulatedDeviceClient, SimulatedReply
from omoide.components.store import (
    USER_FIELD,
    PersonDamage,
    PersonMemoryUnavailable,
    RebuildReport,
)
from omoide.components.store_paging import IdSnapshots
from omoide.components.vad import VadEvent
from omoide.config import Secret
from omoide.errors import (
    ComponentError,
    ComponentTimeout,
    ConfigError,
    ConfigProblem,
    EmbedderMismatch,
    InvalidInput,
    MissingSecret,
    ModelNotAvailable,
    OmoideError,
    PluginLoadError,
)
from omoide.hookspecs import hookimpl
from omoide.openai_compat import error_message, to_component_error
from omoide.private_files import connect_private, open_private, private_folder
from omoide.types import (
    AudioClip,
    ChatDelta,
    ChatMessage,
    EmbedderFingerprint,
    EmbedPurpose,
    Emotion,
    Exchange,
    FloatArray,
    Memory,
    Priority,
    RetrievedMemory,
    Role,
    ToolCall,
    ToolSpec,
    Transcript,
    VectorHit,
    VectorRecord,
)
from omoide.user_ids import InvalidUserId, is_valid_user_id, validate_user_id
from omoide.weights import (
    ModelFile,
    WeightSource,
    WheelModel,
    assemble_model,
    configured_or_packaged,
    model_cache_dir,
    onnx_session,
    resolve_weights,
    space_name,
)

if TYPE_CHECKING:
    from omoide.announcements import Announcement
    from omoide.commands._common import config_database_url, device_data_dir
    from omoide.memory.facts.profile import Classification as ProfileClassification
    from omoide.memory.facts.profile import classify as profile_or_episodic
    from omoide.pipeline.turn import CompletedTurn, TurnRequest, TurnResult, TurnSink
    from omoide.server.shared_limits import SharedCounters

_ON_FIRST_USE: dict[str, tuple[str, str]] = {
    "Announcement": ("omoide.announcements", "Announcement"),
    "CompletedTurn": ("omoide.pipeline.turn", "CompletedTurn"),
    "TurnRequest": ("omoide.pipeline.turn", "TurnRequest"),
    "TurnResult": ("omoide.pipeline.turn", "TurnResult"),
    "TurnSink": ("omoide.pipeline.turn", "TurnSink"),
    "ProfileClassification": ("omoide.memory.facts.profile", "Classification"),
    "profile_or_episodic": ("omoide.memory.facts.profile", "classify"),
    "device_data_dir": ("omoide.commands._common", "device_data_dir"),
    "config_database_url": ("omoide.commands._common", "config_database_url"),
    "SharedCounters": ("omoide.server.shared_limits", "SharedCounters"),
}
"""Public names imported when first asked for: name -> (module, name there)."""


def __getattr__(name: str) -> Any:
    """Import a name of :data:`_ON_FIRST_USE` the first time it is asked for."""
    try:
        module, attribute = _ON_FIRST_USE[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "ASR",
    "KINDS",
    "TTS",
    "USER_FIELD",
    "VAD",
    "ASRConfig",
    "AnnounceOutcome",
    "Announcement",
    "AudioClip",
    "Capabilities",
    "ChatConfig",
    "ChatDelta",
    "ChatMessage",
    "ChatModel",
    "CompletedTurn",
    "Component",
    "ComponentConfig",
    "ComponentError",
    "ComponentState",
    "ComponentStatus",
    "ComponentTimeout",
    "ConfigError",
    "ConfigProblem",
    "ConfirmationRequest",
    "Device",
    "DeviceConfig",
    "DeviceHost",
    "EmbedPurpose",
    "Embedder",
    "EmbedderConfig",
    "EmbedderFingerprint",
    "EmbedderMismatch",
    "Emotion",
    "EndOfSpeechDetector",
    "Exchange",
    "ExtractionFormatError",
    "ExtractionReport",
    "ExtractionRequest",
    "Extractor",
    "ExtractorCapabilities",
    "ExtractorConfig",
    "ExtractorHost",
    "Fact",
    "FloatArray",
    "IdSnapshots",
    "Identification",
    "InvalidInput",
    "InvalidUserId",
    "Memory",
    "MemoryEngineCapabilities",
    "MemoryEngineConfig",
    "MemoryHit",
    "MemoryService",
    "MissingSecret",
    "ModelFile",
    "ModelNotAvailable",
    "OmoideError",
    "PersonDamage",
    "PersonMemory",
    "PersonMemoryUnavailable",
    "PluginLoadError",
    "Priority",
    "PriorityRunner",
    "Profile",
    "ProfileCategory",
    "ProfileClassification",
    "ProfileFact",
    "PromptContext",
    "PromptSection",
    "ReadInputs",
    "RebuildReport",
    "Recall",
    "RecallEngine",
    "RecallNotes",
    "RecallRequest",
    "RecallResult",
    "RecognitionContext",
    "RecognitionStream",
    "RetrievedMemory",
    "Role",
    "ScrollPage",
    "Secret",
    "SimulatedDeviceClient",
    "SimulatedReply",
    "SpeakerCapabilities",
    "SpeakerConfig",
    "SpeakerEmbedding",
    "SpeakerEncoder",
    "SpeakerReason",
    "StoreCapabilities",
    "StreamingRecognition",
    "StrictConfig",
    "TTSConfig",
    "TooManyFacts",
    "Tool",
    "ToolCall",
    "ToolConfig",
    "ToolContext",
    "ToolError",
    "ToolFunction",
    "ToolHost",
    "ToolSpec",
    "Transcript",
    "TurnConfig",
    "TurnDetector",
    "TurnRequest",
    "TurnResult",
    "TurnSink",
    "VADConfig",
    "VadEvent",
    "VectorHit",
    "VectorRecord",
    "VectorStore",
    "VectorStoreConfig",
    "VoiceQuality",
    "WeightSource",
    "WheelModel",
    "assemble_model",
    "config_database_url",
    "configured_or_packaged",
    "connect_private",
    "device_data_dir",
    "error_message",
    "hookimpl",
    "identify",
    "is_valid_user_id",
    "load_on_own_thread",
    "model_cache_dir",
    "onnx_session",
    "open_private",
    "private_folder",
    "profile_or_episodic",
    "read_wav",
    "resample",
    "resolve_weights",
    "space_name",
    "to_component_error",
    "validate_user_id",
    "work_priority",
    "write_wav",
]

# -- one turn's events (omoide.components.turn_events): what a device's sink reads ----
from omoide.components.turn_events import (  # noqa: E402 - appended with the event stream
    Degraded,
    Done,
    EmotionChosen,
    FirstToken,
    Heard,
    PromptBuilt,
    Recalled,
    ReplyEnded,
    ReplyText,
    Sentence,
    StageEnded,
    StageStarted,
    ToolCalled,
    TurnEvent,
    TurnEventSink,
    TurnEventSubscriber,
    TurnStarted,
)

__all__ += [
    "Degraded",
    "Done",
    "EmotionChosen",
    "FirstToken",
    "Heard",
    "PromptBuilt",
    "Recalled",
    "ReplyEnded",
    "ReplyText",
    "Sentence",
    "StageEnded",
    "StageStarted",
    "ToolCalled",
    "TurnEvent",
    "TurnEventSink",
    "TurnEventSubscriber",
    "TurnStarted",
]

# -- Japanese word classes, for plugins that read Japanese (the one list each reader uses;
# see omoide.memory.language.word_classes for why some are narrower than others).
from omoide.memory.language.word_classes import (  # noqa: E402
    CHILDREN,
    CLOSE_FAMILY,
    COMMON_PETS,
    FAMILY,
    FIRST_PERSON,
    FIRST_PERSON_LEMMAS,
    FIRST_PERSON_PRONOUNS,
    FIRST_PERSON_SEARCHED_ANYWHERE,
    FRIENDS,
    OUR_HOUSEHOLD,
    PARTNERS,
    PEOPLE_AROUND,
    PETS,
    REFLEXIVE_SELF,
    WORKMATES,
    regex_alternation,
)

__all__ += [
    "CHILDREN",
    "CLOSE_FAMILY",
    "COMMON_PETS",
    "FAMILY",
    "FIRST_PERSON",
    "FIRST_PERSON_LEMMAS",
    "FIRST_PERSON_PRONOUNS",
    "FIRST_PERSON_SEARCHED_ANYWHERE",
    "FRIENDS",
    "OUR_HOUSEHOLD",
    "PARTNERS",
    "PEOPLE_AROUND",
    "PETS",
    "REFLEXIVE_SELF",
    "WORKMATES",
    "regex_alternation",
]

# -- households (omoide.components.device): the people one robot serves ----------------
from omoide.components.device import (  # noqa: E402 - appended with households
    GUEST,
    MAX_HOUSEHOLD_MEMBERS,
    Household,
)

__all__ += [
    "GUEST",
    "MAX_HOUSEHOLD_MEMBERS",
    "Household",
]

# -- the shared database (omoide.database): for a plugin's state shared by workers -------
# A tool learns the URL from ``ToolHost.database_url`` (None: keep state in its data
# folder); psycopg is imported only when :func:`open_pool` is called.
from omoide.database.connection import migrated_pool, open_pool  # noqa: E402 - appended with the database
from omoide.database.migrations import Migration, apply_migrations  # noqa: E402

__all__ += [
    "Migration",
    "SharedCounters",
    "apply_migrations",
    "migrated_pool",
    "open_pool",
]
