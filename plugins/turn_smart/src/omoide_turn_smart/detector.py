"""The `smart_turn` end-of-turn detector: Smart Turn v3.2 run with onnxruntime.

The model (a Whisper-tiny-sized encoder with a classification head) reads the log-mel
features of the last 8 s of the utterance (:mod:`.features`) as ``input_features``
(1, 80, 800) and returns the probability that the speaker is finished. About 0.1 s per
judgement on one busy core.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from pydantic import Field

from omoide.api import (
    ComponentError,
    FloatArray,
    TurnConfig,
    TurnDetector,
    configured_or_packaged,
    onnx_session,
)
from omoide_turn_smart import bundled
from omoide_turn_smart.features import FRAMES, N_MELS, SAMPLE_RATE, last_window, log_mel

if TYPE_CHECKING:
    import onnxruntime

log = logging.getLogger("omoide.turn.smart_turn")

INPUT = "input_features"


class SmartTurnConfig(TurnConfig):
    model_path: str | None = Field(
        None, description="Path of a Smart Turn v3 ONNX file; default: smart-turn-v3.2-cpu "
                          "extracted from the pipecat-ai wheel into omoide's model cache at "
                          "set-up.")
    threads: int = Field(1, ge=1, le=8, description="onnxruntime threads for one judgement.")
    trailing_silence_ms: int = Field(
        0, ge=0, le=2000,
        description="Silence appended after the voice stops before judging (the reference "
                    "runs the model on the turn up to where its VAD fired, 0.2 s after the "
                    "voice in its documented set-up; omoide passes the audio up to the "
                    "voice's end). 200 ms raised OpenJTalk's finished sentences judged "
                    "finished from 7/30 to 19/30 but also its pauses from 4/23 to 7/23, and "
                    "Kokoro's pauses from 5/22 to 9/22 (omoide bench turn).")


    confident: float | None = Field(
        None, ge=0, le=1,
        description="Probability at or above which a finished judgement ends the turn at "
                    "once. A finished judgement below it (at or above threshold, but "
                    "unsure) waits unsure_silence_ms of silence first, so a pause the model "
                    "is unsure of is bridged when the person speaks on. None: every "
                    "finished judgement ends the turn at once.")
    unsure_silence_ms: int = Field(
        800, ge=0, le=10000,
        description="Silence after the voice stops that ends a turn judged finished "
                    "without confidence (below confident); at most max_silence_ms.")
    graded: bool = Field(
        False,
        description="Waits graded by the doubt instead of steps: a finished judgement "
                    "waits from 0 (at confident) up to unsure_silence_ms (at threshold), "
                    "an unfinished one from there up to max_silence_ms (at 0). Needs "
                    "confident.")


def graded_wait(probability: float, threshold: float, confident: float, unsure_ms: int,
                ceiling_ms: int) -> int:
    """Silence to wait for ``probability``, linear between the steps' corners: 0 at
    ``confident`` and above, ``unsure_ms`` at ``threshold``, ``ceiling_ms`` at 0."""
    if probability >= confident:
        return 0
    if probability >= threshold:
        share = (confident - probability) / max(confident - threshold, 1e-9)
        return round(unsure_ms * share)
    share = (threshold - probability) / max(threshold, 1e-9)
    return round(unsure_ms + (ceiling_ms - unsure_ms) * share)


class SmartTurn(TurnDetector):
    """Smart Turn v3.2: is the utterance finished? (23 languages, Japanese among them)."""

    name = "smart_turn"
    Config = SmartTurnConfig

    config: SmartTurnConfig

    def __init__(self, config: SmartTurnConfig) -> None:
        super().__init__(config)
        self._session: onnxruntime.InferenceSession | None = None

    def _audio_wait_ms(self, probability: float | None) -> int:
        """As any turn detector, except that a finished judgement below ``confident``
        waits ``unsure_silence_ms`` (capped by the ceiling) instead of none."""
        wait = super()._audio_wait_ms(probability)
        cfg = self.config
        confident = cfg.confident
        if probability is None or confident is None:
            return wait
        unsure = min(cfg.unsure_silence_ms, cfg.max_silence_ms)
        if cfg.graded:
            return graded_wait(probability, cfg.threshold, confident, unsure,
                               cfg.max_silence_ms)
        if wait == 0 and probability < confident:
            return unsure
        return wait

    async def _start(self) -> None:
        path = self._model_path()
        self._session = await self.run_blocking(lambda: self._load(path))

    async def _stop(self) -> None:
        self._session = None

    def _model_path(self) -> Path:
        return configured_or_packaged(
            self.config.model_path, bundled.cached_model, what="turn smart_turn",
            setting="turn.model_path", hint=bundled.INSTALL_HINT,
            missing=f"{bundled.FILE} is not in omoide's model cache")

    def _load(self, path: Path) -> onnxruntime.InferenceSession:
        session: onnxruntime.InferenceSession = onnx_session(
            path, threads=self.config.threads, what="turn smart_turn")
        inputs = session.get_inputs()
        if len(inputs) != 1 or inputs[0].name != INPUT or list(inputs[0].shape[1:]) != [
                N_MELS, FRAMES]:
            shapes = [(i.name, i.shape) for i in inputs]
            raise ComponentError(f"turn smart_turn: {path} is not a Smart Turn v3 model "
                                 f"(inputs {shapes}; expected {INPUT} [batch, 80, 800])")
        log.info("turn smart_turn: loaded %s", path)
        return session

    def _finished_probability(self, audio: FloatArray) -> float:
        session = self._session
        if session is None:
            raise ComponentError("turn smart_turn: not started")
        tail = np.zeros(SAMPLE_RATE * self.config.trailing_silence_ms // 1000, np.float32)
        features = log_mel(last_window(np.concatenate([audio, tail])))[None, :, :]
        (out,) = session.run(None, {INPUT: features})
        return float(np.asarray(out).reshape(-1)[0])
