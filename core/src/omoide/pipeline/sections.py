"""The core's own prompt sections, contributed through the ordinary hook."""

from __future__ import annotations

from omoide.hookspecs import hookimpl
from omoide.pipeline.dates import date_block
from omoide.pipeline.prompt import PromptContext, PromptSection
from omoide.types import Emotion

_TAGS = " ".join(f"[{e.value}]" for e in Emotion)


@hookimpl
def prompt_sections(context: PromptContext) -> list[PromptSection]:
    settings = context.assistant
    sections = [
        PromptSection("persona", settings.persona.replace("{name}", settings.name), 0),
        PromptSection(
            "emotion",
            "返答の先頭には必ず感情タグを1つだけ付けてください（タグは読み上げられません）。"
            f"使えるタグ: {_TAGS}\n例: [happy] いいね、楽しみだね！", 10),
        PromptSection("dates", date_block(context.now, settings.timezone), 20),
    ]
    if context.profile:
        # Durable facts before the episodic block, in every prompt: an allergy reaches
        # the chat model whatever retrieval did this turn.
        from omoide.memory.recall.memory_block import render_profile_block
        sections.append(PromptSection("profile", render_profile_block(context.profile), 45))
    if context.memories:
        from omoide.memory.recall.memory_block import render_memory_block
        sections.append(PromptSection(
            "memory", render_memory_block(context.memories, settings.timezone), 50))
    return sections
