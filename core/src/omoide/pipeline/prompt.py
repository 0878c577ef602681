"""The system prompt: sections contributed through the ``prompt_sections`` hook.

The persona, the date block, the profile block and the memory block are themselves
contributions
(:mod:`omoide.pipeline.sections`); any plugin can add more. The core orders them by
``order`` (lower first), never by hook call order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from omoide.config import AssistantSettings
from omoide.memory.recall.profile import Profile
from omoide.types import ChatMessage, Exchange, RetrievedMemory


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


def assemble_system_prompt(sections: Iterable[PromptSection]) -> str:
    ordered = sorted((s for s in sections if s.text.strip()), key=lambda s: (s.order, s.name))
    return "\n\n".join(s.text.strip() for s in ordered)


def build_messages(system_prompt: str, history: Sequence[Exchange],
                   transcript: str) -> list[ChatMessage]:
    """System prompt, then the recent exchanges, then the new utterance."""
    messages = [ChatMessage("system", system_prompt)]
    for ex in history:
        messages.append(ChatMessage("user", ex.user_text))
        if ex.assistant_text:
            messages.append(ChatMessage("assistant", ex.assistant_text))
    messages.append(ChatMessage("user", transcript))
    return messages
