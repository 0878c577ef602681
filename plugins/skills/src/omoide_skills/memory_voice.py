"""The ``memory`` tool: memory by voice.

- ``remember``: 「それは覚えておいて」 — the model states the fact (「あなたは…」) and it is
  stored now, without waiting for extraction;
- ``forget_memory``: 「箱根のことは忘れて」 — finds the best-matching memories, asks the
  person to confirm (「『…』を忘れていい？」), and forgets them only after a yes;
- ``what_you_know_about_me``: 「私について何を覚えてる？」 — a spoken summary of what
  omoide knows about the person.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import Field

from omoide.api import ConfirmationRequest, Tool, ToolConfig, ToolContext, ToolError, ToolFunction
from omoide_skills.memory_book import EngineMemoryBook, MemoryBook


class MemoryToolConfig(ToolConfig):
    forget_matches: int = Field(1, ge=1, le=10,
                                description="Memories one 「忘れて」 may forget at most.")
    forget_min_score: float = Field(
        0.9, ge=-1, le=2, description="Search score that makes a memory a candidate for "
                                      "forgetting even when it shares no words with what the "
                                      "person said (half of their words in it always does).")
    summary_items: int = Field(5, ge=1, le=50,
                               description="Facts named in 「私について何を覚えてる？」.")
    max_fact_chars: int = Field(200, ge=10, le=2000,
                                description="Longest fact `remember` accepts.")


REMEMBER = ToolFunction(
    "remember",
    "相手に「覚えておいて」と頼まれたことを今すぐ長期記憶に保存する。"
    "factは相手についての一文で「あなたは…」の形で書く（例: あなたは毎朝6時に起きる。）。",
    {"type": "object", "properties": {"fact": {"type": "string"}}, "required": ["fact"]})
FORGET = ToolFunction(
    "forget_memory",
    "相手に「〜のことは忘れて」と頼まれたとき、その記憶を探して忘れる（実行前に本人に確認する）。",
    {"type": "object", "properties": {"about": {"type": "string",
                                                "description": "忘れる内容を表す言葉"}},
     "required": ["about"]},
    needs_confirmation=True)
ABOUT_ME = ToolFunction(
    "what_you_know_about_me",
    "「私について何を覚えてる？」と聞かれたとき、相手について覚えていることを調べる。")


def _text(arguments: dict[str, Any], key: str) -> str:
    value = arguments.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ToolError(f"{key} must be a non-empty string")
    return value.strip()


class MemoryTool(Tool):
    """Remember, forget (after a yes) and summarise, for the person speaking."""

    name = "memory"
    recognition_phrases = ("覚えておいて", "忘れて", "私について")
    Config: ClassVar[type[MemoryToolConfig]] = MemoryToolConfig
    config: MemoryToolConfig

    def __init__(self, config: MemoryToolConfig) -> None:
        super().__init__(config)
        self.book: MemoryBook | None = None

    async def _start(self) -> None:
        memory = self.host.memory
        if memory is None:
            raise ToolError("the memory skill needs omoide's memory, which is off")
        self.book = EngineMemoryBook(memory)

    def functions(self) -> Sequence[ToolFunction]:
        return [REMEMBER, FORGET, ABOUT_ME]

    def _book(self) -> MemoryBook:
        if self.book is None:
            raise ToolError("memory is not available")
        return self.book

    async def _prepare(self, function: ToolFunction, arguments: dict[str, Any],
                       context: ToolContext) -> ConfirmationRequest:
        about = _text(arguments, "about")
        candidates = await self._book().find(context.user, about,
                                             max(10, self.config.forget_matches))
        found = [f for f in candidates if f.score >= self.config.forget_min_score
                 or shared_wording(about, f.memory.text) >= 0.5][:self.config.forget_matches]
        if not found:
            raise ToolError(f"「{about}」について覚えていることは見つからなかったよ。")
        listed = "」と「".join(f.memory.text.rstrip("。") for f in found)
        return ConfirmationRequest(f"「{listed}」という記憶を忘れていい？",
                                   {"about": about, "memory_ids": [f.memory.id for f in found]})

    async def _invoke(self, function: str, arguments: dict[str, Any],
                      context: ToolContext) -> Any:
        book = self._book()
        if function == "remember":
            fact = _text(arguments, "fact")
            if len(fact) > self.config.max_fact_chars:
                raise ToolError(f"覚えるには長すぎるよ（{self.config.max_fact_chars}文字まで）。")
            memory = await book.remember(context.user, fact, context.now)
            return {"id": memory.id, "stored": memory.text, "message": "わかった、覚えておくね。"}
        if function == "forget_memory":
            ids = arguments.get("memory_ids")
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids) or not ids:
                raise ToolError("memory_ids are missing; ask the person again")
            count = await book.forget(context.user, ids)
            if not count:
                return {"forgotten": 0, "message": "もう忘れていたみたい。"}
            return {"forgotten": count, "message": "わかった、忘れたよ。"}
        facts = await book.about(context.user, self.config.summary_items)
        if not facts:
            return {"facts": [],
                    "message": "まだあなたのことはあまり知らないんだ。よかったら教えてね。"}
        said = "、".join(_as_spoken(f) for f in facts)
        return {"facts": facts, "message": f"覚えているのは、{said}ってことだよ。"}


def _bigrams(text: str) -> set[str]:
    bare = re.sub(r"[\s、。！？!?「」（）()]|のこと|について", "",
                  unicodedata.normalize("NFKC", text))
    return {bare[i:i + 2] for i in range(len(bare) - 1)} or ({bare} if bare else set())


def shared_wording(phrase: str, memory: str) -> float:
    """Share of the phrase's character bigrams found in the memory (0..1): the check
    that a memory is about what the person named, whatever the embedder's scale."""
    wanted = _bigrams(phrase)
    return len(wanted & _bigrams(memory)) / len(wanted) if wanted else 0.0


def _as_spoken(fact: str) -> str:
    """「あなたは箱根に行く予定だ。」 → 「箱根に行く予定だ」 (said back to the person)."""
    text = fact.strip().rstrip("。")
    for prefix in ("あなたは、", "あなたは"):
        if text.startswith(prefix):
            return text[len(prefix):]
    return text
