"""End of turn: given the utterance so far, is the person finished or only pausing?

Silence alone cannot tell 「来週の土曜日に、」 (a pause for breath) from 「行くんだ。」 (done).
A turn detector reads the audio of the utterance up to the pause and returns the
probability that it is finished. A device asks it when its VAD hears speech stop and
then waits :meth:`TurnDetector.silence_to_wait_ms` of silence before it ends the turn:

- finished (probability at or above ``threshold``): at once, so a short silence after a
  complete sentence ends the turn;
- pausing (a filler, a mid-sentence pause): until ``max_silence_ms`` of silence (the
  ceiling), unless the person speaks again, which continues the same utterance;
- the detector failed or is too slow: ``fallback_silence_ms``, silence-only endpointing.

Without a ``turn`` stage in the config the VAD's own ``min_silence_ms`` ends the turn
(silence-only endpointing), as before. A plugin implements
:meth:`TurnDetector._finished_probability` for 16 kHz mono audio of at most
``max_audio_s`` seconds (the core keeps the last ``max_audio_s`` of longer utterances);
the core's :meth:`TurnDetector.finished_probability` runs it on the component's worker
thread under its time budget.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import ClassVar

import numpy as np
from pydantic import Field

from omoide.components.base import Component, ComponentConfig
from omoide.errors import InvalidInput
from omoide.types import FloatArray, Priority


class TurnConfig(ComponentConfig):
    threshold: float = Field(
        0.5, ge=0, le=1, description="Probability at or above which the utterance counts as "
                                     "finished and the turn ends at once.")
    max_silence_ms: int = Field(
        2000, ge=100, le=10000, description="The ceiling: silence that ends a turn the "
                                            "detector judged unfinished (a filler, a "
                                            "mid-sentence pause).")
    fallback_silence_ms: int = Field(
        700, ge=100, le=10000, description="Silence that ends the turn when the detector "
                                           "fails or exceeds its time budget (silence-only "
                                           "endpointing).")
    timeout_s: float = Field(1.0, gt=0, description="Time budget of one judgement, in "
                                                    "seconds; slower counts as failed.")
    retries: int = Field(0, ge=0, le=10, description="Extra attempts after a retryable "
                                                     "failure (a late answer is no answer).")


class TurnDetector(Component[TurnConfig]):
    """Judges whether an utterance is finished. ``_finished_probability`` is blocking."""

    kind: ClassVar[str] = "turn"
    Config: ClassVar[type[TurnConfig]] = TurnConfig
    sample_rate: ClassVar[int] = 16000
    max_audio_s: ClassVar[float] = 8.0
    """The longest audio the model reads; longer utterances are judged on their end."""

    @abstractmethod
    def _finished_probability(self, audio: FloatArray) -> float:
        """Probability in [0, 1] that ``audio`` (16 kHz mono float32, at most
        ``max_audio_s`` long, ending where the person stopped) is a finished turn."""

    async def finished_probability(self, audio: FloatArray) -> float:
        """Probability that the utterance ``audio`` (16 kHz, up to the pause) is finished.

        Raises :class:`~omoide.errors.ComponentError` (a timeout among them) when the
        detector fails; the caller then falls back to silence-only endpointing."""
        if audio.ndim != 1 or not len(audio):
            raise InvalidInput(f"turn {self.name}: expected non-empty mono audio, "
                               f"got shape {audio.shape}")
        keep = int(self.max_audio_s * self.sample_rate)
        clip = np.ascontiguousarray(audio[-keep:], dtype=np.float32)

        async def attempt() -> float:
            return await self.run_blocking(lambda: self._finished_probability(clip),
                                           Priority.INTERACTIVE)

        probability = await self._call("finished_probability", attempt)
        return min(1.0, max(0.0, float(probability)))

    def silence_to_wait_ms(self, probability: float | None) -> int:
        """Silence after the pause that ends the turn, given the judgement (None: the
        detector failed)."""
        if probability is None:
            return self.config.fallback_silence_ms
        return 0 if probability >= self.config.threshold else self.config.max_silence_ms
