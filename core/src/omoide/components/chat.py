"""Chat models: a streamed reply to a list of messages.

The template bounds the wait for the first piece (``first_token_timeout_s``) and
retries retryable failures only before anything was streamed, so a reply is never
spoken twice.
"""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from collections.abc import AsyncIterator, Sequence
from typing import ClassVar

from pydantic import Field

from omoide.components.base import Capabilities, Component, ComponentConfig
from omoide.errors import ComponentError, ComponentTimeout
from omoide.types import ChatDelta, ChatMessage, ToolSpec


class ChatConfig(ComponentConfig):
    timeout_s: float = Field(60.0, gt=0, description="Time budget of a whole reply, in seconds.")
    first_token_timeout_s: float = Field(15.0, gt=0,
                                         description="Longest wait for the first streamed piece.")
    temperature: float | None = Field(None, ge=0, le=2, description="Sampling temperature.")
    max_tokens: int | None = Field(None, gt=0, description="Upper bound on reply tokens.")


class ChatModel(Component[ChatConfig]):
    kind: ClassVar[str] = "chat"
    Config: ClassVar[type[ChatConfig]] = ChatConfig
    capabilities: ClassVar[Capabilities] = Capabilities(streaming=True)

    @abstractmethod
    def _stream(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec],
                json_output: bool) -> AsyncIterator[ChatDelta]:
        """Stream the reply. Raise :class:`ComponentError` (retryable for 429/5xx)."""

    async def stream(self, messages: Sequence[ChatMessage], *,
                     tools: Sequence[ToolSpec] = (),
                     json_output: bool = False) -> AsyncIterator[ChatDelta]:
        """Stream a reply; retries before the first piece, never after it."""
        attempts = 1 + self.config.retries
        delay = 0.5
        for attempt in range(attempts):
            it = self._stream(messages, tools, json_output).__aiter__()
            try:
                first = await asyncio.wait_for(it.__anext__(),
                                               timeout=self.config.first_token_timeout_s)
            except StopAsyncIteration:
                return
            except TimeoutError as exc:
                err: ComponentError = ComponentTimeout(
                    f"chat {self.name}: no reply within"
                    f" {self.config.first_token_timeout_s:g}s")
                err.__cause__ = exc
            except ComponentError as exc:
                err = exc
            else:
                yield first
                async for delta in _bounded(it, self.config.timeout_s, self.name):
                    yield delta
                return
            if not err.retryable or attempt == attempts - 1:
                raise err
            await asyncio.sleep(delay)
            delay *= 2

    async def complete(self, messages: Sequence[ChatMessage], *,
                       json_output: bool = False) -> str:
        """The whole reply as one string (extraction and other non-spoken calls)."""
        parts = [d.text async for d in self.stream(messages, json_output=json_output)]
        return "".join(parts)


async def _bounded(it: AsyncIterator[ChatDelta], timeout_s: float,
                   name: str) -> AsyncIterator[ChatDelta]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise ComponentTimeout(f"chat {name}: reply took longer than {timeout_s:g}s")
        try:
            yield await asyncio.wait_for(it.__anext__(), timeout=remaining)
        except StopAsyncIteration:
            return
        except TimeoutError as exc:
            raise ComponentTimeout(
                f"chat {name}: reply took longer than {timeout_s:g}s") from exc
