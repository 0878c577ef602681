"""The ``chat`` extractor: the configured chat model, omoide's prompt and tolerant parsing.

The prompt and the ``<conversation>`` format are :mod:`omoide.memory.extract.prompt`'s
(other components, such as the offline stand-in chat, rely on the format exactly);
the answer is read by :func:`omoide.memory.extract.prompt.parse_facts`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from omoide.components import (
    ExtractionRequest,
    Extractor,
    ExtractorCapabilities,
    ExtractorConfig,
    Fact,
)
from omoide.errors import ComponentError
from omoide.memory.extract.prompt import build_messages, parse_facts


class ChatExtractorConfig(ExtractorConfig):
    """No options: the model is the configured ``chat:``, the prompt is omoide's."""


class ChatExtractor(Extractor):
    """Asks the configured chat model for the facts as JSON."""

    name = "chat"
    Config = ChatExtractorConfig
    capabilities: ClassVar[ExtractorCapabilities] = ExtractorCapabilities(
        uses_chat_model=True)

    async def _extract(self, request: ExtractionRequest) -> Sequence[Fact]:
        chat = self.host.chat
        if chat is None:
            # retryable: configuring a chat model makes these exchanges extractable
            raise ComponentError("no chat model is configured for extraction", retryable=True)
        messages = build_messages(request.exchanges, request.timezone,
                                  request.max_statement_chars)
        return parse_facts(await chat.complete(messages, json_output=True))
