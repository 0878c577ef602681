"""The ``phrasebook`` ASR stand-in recognises its phrases in real (synthesised) speech."""

from __future__ import annotations

import asyncio
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from omoide.audio import resample
from omoide.errors import ConfigError
from omoide.testing import ASRContract
from omoide.types import AudioClip
from omoide_standins.phrasebook import PhrasebookASR, PhrasebookConfig
from omoide_standins.speech import synthesize

# The lines the offline demo speaks (configs/offline.yaml).
PHRASES = [
    "駅前に新しいラーメン屋ができたから行ってきたよ",
    "みそラーメンを食べたんだけど、すごくおいしかった",
    "また行きたいな",
    "来週の土曜日に友達と箱根に行くんだ",
    "最近、仕事終わりにギターの練習をしてるんだ",
    "私の好きなラーメンって何だっけ？",
    "週末の予定覚えてる?",
    "最近私が練習してることって何？",
    "おすすめの映画ある？",
    "日本で一番高い山は？",
]
UNKNOWN = ["今日はとても寒いですね", "明日は雨が降るらしいよ", "猫がソファーで寝ている",
           "新しい靴を買いに行きたい"]


def _nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _speech(text: str, rate: int = 16000, **kwargs: Any) -> AudioClip:
    return AudioClip(synthesize(text, rate, **kwargs), rate)


def _with_noise(clip: AudioClip, snr_db: float, seed: int) -> AudioClip:
    rms = float(np.sqrt(np.mean(clip.samples ** 2)))
    noise = np.random.default_rng(seed).standard_normal(clip.samples.size)
    scaled = noise * rms / (10 ** (snr_db / 20))
    return AudioClip((clip.samples + scaled).astype(np.float32), clip.sample_rate)


class TestPhrasebookASR(ASRContract):
    component_cls = PhrasebookASR

    @pytest.fixture
    def config(self) -> dict[str, Any]:
        return {"phrases": PHRASES[3:5]}

    @pytest.fixture
    def speech(self) -> AudioClip:
        return _speech(PHRASES[3])

    async def test_the_speech_fixture_is_recognised(self, component: PhrasebookASR,
                                                    speech: AudioClip) -> None:
        assert (await component.transcribe(speech)).text == _nfkc(PHRASES[3])


@pytest.fixture(scope="module")
def recogniser() -> Iterator[PhrasebookASR]:
    asr = PhrasebookASR(PhrasebookConfig(phrases=PHRASES))
    asyncio.run(asr.start())  # the worker thread is loop-independent; tests share it
    yield asr
    asyncio.run(asr.stop())


async def _heard(asr: PhrasebookASR, clips: list[AudioClip]) -> list[str]:
    return [(await asr.transcribe(c)).text for c in clips]


def test_it_says_it_knows_only_its_phrase_book() -> None:
    assert PhrasebookASR.stand_in and "only" in PhrasebookASR.stand_in
    assert "asr.use: qwen" in PhrasebookASR.stand_in


# Renditions the templates never saw: faster, slower, higher, lower, and noisy at 48 kHz.
VARIANTS: list[tuple[str, Any]] = [
    ("faster", lambda p, i: _speech(p, speed=1.15)),
    ("slower", lambda p, i: _speech(p, speed=0.85)),
    ("higher", lambda p, i: _speech(p, half_tone=2.0)),
    ("lower", lambda p, i: _speech(p, half_tone=-2.0)),
    ("noisy-48k", lambda p, i: _with_noise(_speech(p, 48000, speed=1.05, half_tone=-1.0),
                                           snr_db=25, seed=i)),
]


@pytest.mark.parametrize("rotation", [0, 1])
async def test_every_phrase_is_recognised_in_renditions_it_never_heard(
        recogniser: PhrasebookASR, rotation: int) -> None:
    # Each phrase gets one variant; the two rotations give every phrase two variants and
    # every variant four phrases, keeping the test to twenty recognitions.
    clips = [VARIANTS[(i + rotation * 2) % len(VARIANTS)][1](p, i)
             for i, p in enumerate(PHRASES)]
    assert await _heard(recogniser, clips) == [_nfkc(p) for p in PHRASES]


async def test_a_sentence_outside_the_phrase_book_gives_an_empty_transcript(
        recogniser: PhrasebookASR) -> None:
    assert await _heard(recogniser, [_speech(u) for u in UNKNOWN]) == [""] * len(UNKNOWN)


async def test_silence_gives_an_empty_transcript(recogniser: PhrasebookASR) -> None:
    silence = AudioClip(np.zeros(16000, dtype=np.float32), 16000)
    assert (await recogniser.transcribe(silence)).text == ""


async def test_the_no_match_text_is_configurable() -> None:
    asr = PhrasebookASR(PhrasebookConfig(phrases=PHRASES[:2],
                                         no_match_text="（聞き取れませんでした）"))
    await asr.start()
    try:
        assert (await asr.transcribe(_speech(UNKNOWN[0]))).text == _nfkc("（聞き取れませんでした）")
    finally:
        await asr.stop()


async def test_phrases_can_come_from_a_file(tmp_path: Path) -> None:
    book = tmp_path / "phrases.txt"
    book.write_text("# the demo lines\n\nまた行きたいな\n週末の予定覚えてる?\n", encoding="utf-8")
    asr = PhrasebookASR(PhrasebookConfig(phrases_file=str(book)))
    await asr.start()
    try:
        assert asr.phrases == ["また行きたいな", "週末の予定覚えてる?"]
        heard = await asr.transcribe(resample(_speech("週末の予定覚えてる?", speed=0.9), 22050))
        assert heard.text == "週末の予定覚えてる?"
    finally:
        await asr.stop()


async def test_an_empty_phrase_book_is_a_config_error() -> None:
    asr = PhrasebookASR(PhrasebookConfig())
    with pytest.raises(ConfigError, match=r"asr\.phrases"):
        await asr.start()
    assert asr.status.state.value == "failed"
