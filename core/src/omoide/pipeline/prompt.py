"""The system prompt: sections contributed through the ``prompt_sections`` hook.

The persona, the date block, the profile block and the memory block are themselves
contributions
(:mod:`omoide.pipeline.sections`); any plugin can add more. The core orders them by
``order`` (lower first), never by hook call order. The section types are contract
types (:mod:`omoide.components.prompt`), importable from here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from omoide.components.prompt import PromptContext, PromptSection
from omoide.types import ChatMessage, Exchange

__all__ = ["PromptContext", "PromptSection", "assemble_system_prompt", "build_messages"]


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
