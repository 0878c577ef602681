"""Prompt sections: the pieces of the system prompt a plugin contributes.

A plugin implements the ``prompt_sections(context)`` hook (:mod:`omoide.hookspecs`)
and returns :class:`PromptSection` objects built from the :class:`PromptContext` of
the turn. The persona, the date block, the profile block and the memory block are
contributions of the same kind (:mod:`omoide.pipeline.sections`). The core orders
the sections by ``order`` (lower first, then by name), never by hook call order, and
drops empty ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from omoide.components.memory_types import Profile
from omoide.types import Exchange, RetrievedMemory

if TYPE_CHECKING:
    from omoide.config import AssistantSettings


@dataclass(frozen=True)
class PromptContext:
    """Everything a prompt section may use; sections must not do I/O."""

    user: str
    now: datetime
    transcript: str
    memories: Sequence[RetrievedMemory]
    history: Sequence[Exchange]
    assistant: AssistantSettings
    device: str | None = None
    profile: Profile = field(default_factory=Profile)
    """The person's profile (durable facts, in every prompt; empty for none)."""


@dataclass(frozen=True)
class PromptSection:
    """A piece of the system prompt. ``order``: persona 0, rules 10, dates 20, profile 45,
    memory 50."""

    name: str
    text: str
    order: int = 100
