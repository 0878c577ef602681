"""Config: YAML -> validated settings, in two phases, with every problem reported at once.

Phase 1 parses the YAML, resolves ``{$env: NAME}`` secrets and validates the
envelope (sections, ``use:`` names, assistant/server/memory settings). Phase 2
validates each component's own ``Config`` once the registry knows the classes.
Every problem carries its YAML path (``asr.model``, ``devices[0].port``), unknown
names get a "did you mean", and nothing is loaded or started.

The name callers know, over two modules: :mod:`omoide.config_schema` (the settings
models and both phases, against a registry it is given; it imports no plugin loader)
and :mod:`omoide.config_loading` (reading a file and building the registry of the
plugins a config uses). A module that needs only the settings types may import
:mod:`omoide.config_schema` directly.
"""

from __future__ import annotations

from omoide.config_loading import load_settings, validate_config
from omoide.config_schema import (
    ENGINE_SHORTHAND,
    LIST_STAGES,
    REQUIRED_STAGES,
    STAGES,
    AssistantSettings,
    AuthSettings,
    ComponentChoice,
    EmbedFallbackSpec,
    EmbedSpec,
    Envelope,
    EnvValue,
    LimitSettings,
    Secret,
    ServerSettings,
    Settings,
    StageSpec,
    ToolCallSettings,
    did_you_mean,
    json_schema,
    load_yaml,
    parse_envelope,
    phase_one,
    pydantic_problems,
    resolve_env,
    validate_components,
    validate_stages,
    wanted_components,
)

__all__ = [
    "ENGINE_SHORTHAND",
    "LIST_STAGES",
    "REQUIRED_STAGES",
    "STAGES",
    "AssistantSettings",
    "AuthSettings",
    "ComponentChoice",
    "EmbedFallbackSpec",
    "EmbedSpec",
    "EnvValue",
    "Envelope",
    "LimitSettings",
    "Secret",
    "ServerSettings",
    "Settings",
    "StageSpec",
    "ToolCallSettings",
    "did_you_mean",
    "json_schema",
    "load_settings",
    "load_yaml",
    "parse_envelope",
    "phase_one",
    "pydantic_problems",
    "resolve_env",
    "validate_components",
    "validate_config",
    "validate_stages",
    "wanted_components",
]
