"""The ``standin`` chat model: a rule-based Japanese responder that runs offline.

It exists so ``configs/offline.yaml`` can run the whole pipeline with no chat API. It
is deterministic, streams its replies in small pieces like a real model, answers recall
questions from what the person said earlier in the conversation, the
``<retrieved_memory>`` block and the ``<profile>`` block, with the line that answers the
question (:mod:`omoide_standins.replies`, :mod:`omoide_standins.recollection`), and
answers the extraction call (``json_output=True``) with rule-based facts
(:mod:`omoide_standins.extraction`). When the turn offers tools it calls them for a few phrases
(:mod:`omoide_standins.tool_rules`: 「3分タイマー」, 「〜は忘れて」, 「明日の天気は？」...)
and says the tool's answer. It knows nothing about the world.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

from pydantic import Field

from omoide.api import ChatConfig, ChatDelta, ChatMessage, ChatModel, Priority, ToolSpec

log = logging.getLogger("omoide.chat.standin")


class StandinChatConfig(ChatConfig):
    chunk_chars: int = Field(4, ge=1, le=200,
                             description="Characters per streamed piece of a reply.")
    piece_delay_ms: float = Field(0.0, ge=0, le=2000,
                                  description="Pause between streamed pieces, to imitate a"
                                  " model's pace in demos (0 streams as fast as possible).")
    entities: bool = Field(True, description="Find named entities of extracted facts with"
                           " Sudachi (proper nouns); off leaves them empty.")


class StandinChat(ChatModel):
    """Rule-based Japanese chat and fact extraction (a labelled stand-in, not a model)."""

    name = "standin"
    Config = StandinChatConfig
    config: StandinChatConfig
    stand_in = ("stands in for the ModelScope chat model with a few Japanese rules: it"
                " answers recall questions from the memories in the prompt, extracts facts"
                " with rules and cannot look anything up; set chat.use: modelscope and"
                " MODELSCOPE_API_KEY for the real one")

    def __init__(self, config: StandinChatConfig) -> None:
        super().__init__(config)
        self._reader: Any = None
        self._tokenizer: Any = None

    async def _start(self) -> None:
        # Replies read recall questions with Sudachi; extraction uses it for entities
        # and speech acts only when ``entities`` is on.
        self._reader = await self.run_blocking(_sudachi_tokenizer, Priority.BATCH)
        self._tokenizer = self._reader if self.config.entities else None
        # the reply rules, imported now rather than on the event loop during a first turn
        # (about 50 ms)
        await self.run_blocking(_import_reply_rules, Priority.BATCH)

    async def _stop(self) -> None:
        self._reader = None
        self._tokenizer = None

    async def _stream(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec],
                      json_output: bool) -> AsyncIterator[ChatDelta]:
        cfg = self.config
        if json_output:
            text = await self.run_blocking(lambda: self._extract(messages), Priority.BATCH)
        else:
            from omoide_standins import tool_rules
            call = tool_rules.tool_call_for(messages, tools, self._facts_about)
            if call is not None:
                await asyncio.sleep(0)
                yield ChatDelta(tool_call=call)
                return
            from omoide_standins.moments import moment_line
            line = moment_line(messages)
            if line is not None:
                text = line
            elif messages and messages[-1].role == "tool":
                text = tool_rules.reply_after_tool(messages)
            else:
                from omoide_standins.replies import reply_to
                text = reply_to(messages, self._reader or _sudachi_tokenizer())
        for i in range(0, len(text), cfg.chunk_chars):
            if i and cfg.piece_delay_ms:
                await asyncio.sleep(cfg.piece_delay_ms / 1000)
            else:
                await asyncio.sleep(0)  # let the consumer run between pieces, as a stream does
            yield ChatDelta(text=text[i:i + cfg.chunk_chars])

    def _facts_about(self, utterance: str) -> list[str]:
        """The 「あなたは…」 facts the extraction rules read out of one utterance."""
        from datetime import datetime

        from omoide_standins.extraction import Utterance, extract_facts
        return [f.text for f in extract_facts([Utterance(datetime.now(), utterance)],
                                              self._tokenizer)]

    def _extract(self, messages: Sequence[ChatMessage]) -> str:
        from omoide_standins.extraction import facts_json
        users = [m.content for m in messages if m.role == "user"]
        if not users:
            return json.dumps({"facts": []})
        result = facts_json(users[-1], self._tokenizer)
        log.debug("standin extraction: %s", result)
        return result


def _sudachi_tokenizer() -> Any:
    """A Sudachi tokenizer in mode C (whole proper nouns such as 箱根 or 東京タワー)."""
    from sudachipy import Dictionary, SplitMode
    return Dictionary().tokenizer(mode=SplitMode.C)


def _import_reply_rules() -> None:
    import omoide_standins.replies
    import omoide_standins.tool_rules  # noqa: F401
