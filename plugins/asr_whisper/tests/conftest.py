"""Fixtures: one started Whisper base per test module (loading it takes a second or two and
each real transcription about one), and Japanese speech synthesised by OpenJTalk."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from omoide.types import AudioClip
from omoide_asr_whisper.asr import WhisperASR, WhisperASRConfig


def speech(text: str, rate: int = 16000) -> AudioClip:
    """``text`` spoken by OpenJTalk at ``rate`` Hz, with 0.3 s of silence around it."""
    pyopenjtalk = pytest.importorskip("pyopenjtalk")
    from omoide.audio import resample

    wave, sr = pyopenjtalk.tts(text)
    clip = resample(AudioClip((np.asarray(wave) / 32768.0).astype(np.float32), int(sr)), rate)
    pad = np.zeros(int(0.3 * rate), dtype=np.float32)
    return AudioClip(np.concatenate([pad, clip.samples, pad]), rate)


@pytest.fixture(scope="session")
def say() -> Callable[..., AudioClip]:
    """:func:`speech`, as a fixture."""
    return speech


@pytest.fixture(scope="module")
def whisper() -> Iterator[WhisperASR]:
    """Whisper base as configs/offline.yaml runs it, started once for the module (its
    worker thread does not depend on an event loop, so every test can use it)."""
    # A generous budget: on a shared, overloaded CI machine one decoding can take many
    # times its usual second, and these tests are about what is heard, not how fast.
    asr = WhisperASR(WhisperASRConfig(timeout_s=120, retries=0))
    asyncio.run(asr.start())
    yield asr
    asyncio.run(asr.stop())
