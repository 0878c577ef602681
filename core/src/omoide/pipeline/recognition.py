"""Biased recognition: the person's memory vocabulary, and what people say to use the
configured tools, as the ASR request's context.

The vocabulary is asked of the memory service right before recognition, under a small
time budget: a slow or failing memory never delays or breaks the turn, it only means
that this utterance is recognised without the bias. (A user's first turn usually gets
no vocabulary: the memory index is still being built then, in the background.)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from omoide.components import RecognitionContext
from omoide.memory.api import MemoryService

log = logging.getLogger("omoide.pipeline.recognition")

VOCABULARY_BUDGET_S = 0.05
"""Longest the turn waits for the vocabulary (a cached index answers in a few ms)."""


async def recognition_context(memory: MemoryService | None, user: str, limit: int,
                              budget_s: float = VOCABULARY_BUDGET_S,
                              tool_phrases: Sequence[str] = ()) -> RecognitionContext:
    """``user``'s memory vocabulary (at most ``limit`` words), then ``tool_phrases``, as a
    recognition context. ``limit`` 0 turns biasing off; a memory that is slow or fails
    leaves only the tool phrases."""
    if limit <= 0:
        return RecognitionContext()
    words = await _memory_words(memory, user, limit, budget_s)
    return RecognitionContext.of([*words, *tool_phrases], len(words) + len(tool_phrases))


async def _memory_words(memory: MemoryService | None, user: str, limit: int,
                        budget_s: float) -> list[str]:
    if memory is None:
        return []
    try:
        words = await asyncio.wait_for(memory.recognition_vocabulary(user, limit),
                                       timeout=budget_s)
    except TimeoutError:
        log.debug("memory vocabulary of %s took longer than %.0f ms: recognising without",
                  user, budget_s * 1000)
        return []
    except Exception as exc:  # noqa: BLE001 - the turn goes on without the bias
        log.warning("memory vocabulary of %s failed: %s", user, exc)
        return []
    return list(RecognitionContext.of(words, limit).vocabulary)
