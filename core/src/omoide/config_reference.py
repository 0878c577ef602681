"""A Markdown reference of the config, generated from the pydantic models themselves."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from omoide.config import AssistantSettings, ServerSettings, ToolCallSettings
from omoide.config_schema import DatabaseSettings
from omoide.memory.config import MemoryConfig
from omoide.moments.config import MomentsSettings
from omoide.plugins import PluginRegistry

SECTION_OF_KIND = {"vad": "vad", "asr": "asr", "embedder": "embed", "store": "store",
                   "chat": "chat", "tts": "tts", "device": "devices[]", "tool": "tools[]",
                   "memory_engine": "memory.retrieve", "extractor": "memory.extract",
                   "turn": "turn", "speaker": "speaker"}


def _default(field: Any) -> str:
    if field.default_factory is not None:
        try:
            value = field.default_factory()
        except TypeError:
            return "…"
        if isinstance(value, BaseModel):
            return "(section)"
        return f"`{value!r}`"
    if field.default is PydanticUndefined:
        return "**required**"
    return f"`{field.default!r}`"


def _type(field: Any) -> str:
    ann = field.annotation
    name = getattr(ann, "__name__", None) or str(ann).replace("typing.", "")
    name = re.sub(r"\b(?:\w+\.)+(\w+)", r"\1", name)  # omoide.stage_spec.StageSpec -> StageSpec
    return name.replace("|", "\\|")


def model_table(model: type[BaseModel], prefix: str = "",
                defaults: BaseModel | None = None) -> list[str]:
    """Rows for ``model``'s fields; ``defaults``: the section's own default (a nested
    section whose default differs from its model's, such as ``extract: {use: chat}``)."""
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    nested: list[tuple[str, type[BaseModel], BaseModel | None]] = []
    for name, field in model.model_fields.items():
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            factory = field.default_factory
            given = factory() if factory is not None else field.default  # type: ignore[call-arg]
            given = given if isinstance(given, BaseModel) else None
            nested.append((f"{prefix}{name}.", ann, given))
            continue
        desc = (field.description or "").replace("\n", " ").replace("|", "\\|")
        default = f"`{getattr(defaults, name)!r}`" if defaults is not None \
            else _default(field)
        rows.append(f"| `{prefix}{name}` | {_type(field)} | {default} | {desc} |")
    for sub_prefix, sub, given in nested:
        rows += [r for r in model_table(sub, sub_prefix, given)[2:]]
    return rows


def markdown_reference(registry: PluginRegistry) -> str:
    out: list[str] = []
    for title, model in (("assistant", AssistantSettings), ("server", ServerSettings),
                         ("memory", MemoryConfig), ("database", DatabaseSettings),
                         ("tool_calls", ToolCallSettings),
                         ("moments", MomentsSettings)):
        out += [f"#### `{title}:`", "", *model_table(model), ""]
    for kind, by_name in registry.components.items():
        for name, cls in sorted(by_name.items()):
            owner = registry.owner_of(kind, name)
            if owner == "testing":
                continue
            label = f" — stand-in: {cls.stand_in}" if cls.stand_in else ""
            out += [f"#### `{SECTION_OF_KIND[kind]}: {{use: {name}}}` (plugin `{owner}`){label}",
                    "", *model_table(cls.Config), ""]
    return "\n".join(out)
