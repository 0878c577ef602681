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
from omoide.pipeline.turn import ClientConversation
from omoide.types import ChatMessage, Exchange

__all__ = ["PromptContext", "PromptSection", "assemble_system_prompt", "build_messages",
           "client_messages", "with_client_system"]

TEXT_CLIENT_DROPS = frozenset({"emotion"})
"""Sections a chat client's turn leaves out: faces mean nothing to a text client (and a
face tag would only delay its first visible word)."""
CLIENT_REPLACES = frozenset({"persona"})
"""Sections a chat client's own system prompt stands in for: it says who the assistant
is and how it answers."""


def assemble_system_prompt(sections: Iterable[PromptSection]) -> str:
    ordered = sorted((s for s in sections if s.text.strip()), key=lambda s: (s.order, s.name))
    return "\n\n".join(s.text.strip() for s in ordered)


def build_messages(system_prompt: str, history: Sequence[Exchange],
                   transcript: str) -> list[ChatMessage]:
    """System prompt, then the recent exchanges, then the new utterance. An exchange
    with nothing heard (the robot spoke first: a moment) is the robot's line alone."""
    messages = [ChatMessage("system", system_prompt)]
    for ex in history:
        if ex.user_text:
            messages.append(ChatMessage("user", ex.user_text))
        if ex.assistant_text:
            messages.append(ChatMessage("assistant", ex.assistant_text))
    messages.append(ChatMessage("user", transcript))
    return messages


def with_client_system(sections: Sequence[PromptSection],
                       conversation: ClientConversation) -> list[PromptSection]:
    """The sections of a chat client's turn: without the face-tag instructions, and
    with the client's own system prompt, when it sent one, first (order 0) in place of
    omoide's persona; omoide's other sections (dates, profile, memories) follow."""
    kept = [s for s in sections if s.name not in TEXT_CLIENT_DROPS]
    if not conversation.system.strip():
        return kept
    return [PromptSection("client", conversation.system, 0),
            *(s for s in kept if s.name not in CLIENT_REPLACES)]


def client_messages(system_prompt: str, conversation: ClientConversation,
                    text: str) -> list[ChatMessage]:
    """System prompt, the client's conversation so far, the new message, then what
    followed it in this turn (tool calls and their results)."""
    return [ChatMessage("system", system_prompt), *conversation.before,
            ChatMessage("user", text), *conversation.after]
