"""Memory-biased recognition: the person's memory vocabulary as the ASR request's context.

The vocabulary is asked of the memory service right before recognition, under a small
time budget: a slow or failing memory never delays or breaks the turn, it only means
that this utterance is recognised without the bias. (A user's first turn usually gets
no vocabulary: the memory index is still being built then, in the background.)
"""

from __future__ import annotations

import asyncio
import logging

from omoide.components import RecognitionContext
from omoide.memory.api import MemoryService

log = logging.getLogger("omoide.pipeline.recognition")

VOCABULARY_BUDGET_S = 0.05
"""Longest the turn waits for the vocabulary (a cached index answers in a few ms)."""


async def recognition_context(memory: MemoryService | None, user: str, limit: int,
                              budget_s: float = VOCABULARY_BUDGET_S) -> RecognitionContext:
    """``user``'s memory vocabulary (at most ``limit`` words) as a recognition context;
    empty when there is no memory, ``limit`` is 0, or the memory is slow or fails."""
    if memory is None or limit <= 0:
        return RecognitionContext()
    try:
        words = await asyncio.wait_for(memory.recognition_vocabulary(user, limit),
                                       timeout=budget_s)
    except TimeoutError:
        log.debug("memory vocabulary of %s took longer than %.0f ms: recognising without",
                  user, budget_s * 1000)
        return RecognitionContext()
    except Exception as exc:  # noqa: BLE001 - the turn goes on without the bias
        log.warning("memory vocabulary of %s failed: %s", user, exc)
        return RecognitionContext()
    return RecognitionContext.of(words, limit)
