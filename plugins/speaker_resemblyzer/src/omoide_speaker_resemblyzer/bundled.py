"""The weights file: Resemblyzer's pretrained GE2E voice encoder, taken from its wheel.

``pretrained.pt`` (17 MB, Apache-2.0) ships inside the ``Resemblyzer`` 0.1.4 wheel on
PyPI at :data:`MEMBER`. The wheel is not a dependency (it declares torch, librosa and
webrtcvad, none of which omoide needs for it): at set-up, ``./dev.sh`` downloads it with
``--no-deps`` and runs ``python -m omoide_speaker_resemblyzer.bundled WHEEL``, which
extracts the one file into omoide's model cache, checked against :data:`SHA256` and
renamed into place atomically (as the Smart Turn and Whisper models are). Nothing is
downloaded at run time. An installed ``resemblyzer`` package carries the same file,
which is used when the cache has none (:func:`installed_weights`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
import tempfile
import zipfile
from pathlib import Path

from omoide.api import ModelFile, ModelNotAvailable, assemble_model, model_cache_dir

MANIFEST = "omoide-model.json"
"""What assemble_model writes beside the files it checked."""
FILE = "pretrained.pt"
MEMBER = f"resemblyzer/{FILE}"
WHEEL_VERSION = "0.1.4"
SHA256 = "39373b86598fa3da9fcddee6142382efe09777e8d37dc9c0561f41f0070f134e"
CACHE_NAME = f"resemblyzer-ge2e-{SHA256[:12]}"
INSTALL_HINT = (f"./dev.sh setup  (or: pip download --no-deps Resemblyzer=={WHEEL_VERSION} -d DIR"
                f" && python -m omoide_speaker_resemblyzer.bundled DIR/Resemblyzer-*.whl)")


def cached_weights(cache: Path | None = None) -> Path | None:
    """The weights in omoide's model cache when they were extracted there completely
    (the manifest records this checksum and the file has the recorded size)."""
    root = cache if cache is not None else model_cache_dir()
    path = root / CACHE_NAME / FILE
    try:
        listed = json.loads((root / CACHE_NAME / MANIFEST).read_text("utf-8"))["files"][FILE]
        complete = listed["sha256"] == SHA256 and path.stat().st_size == listed["size"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return path if complete else None


def installed_weights() -> Path | None:
    """``pretrained.pt`` of an installed ``resemblyzer`` package (found without
    importing it, which would import torch), when its checksum is :data:`SHA256`."""
    spec = importlib.util.find_spec("resemblyzer")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / FILE
        if path.is_file() and _sha256(path) == SHA256:
            return path
    return None


def find_weights() -> Path:
    """The weights file: omoide's model cache, else an installed ``resemblyzer``."""
    found = cached_weights() or installed_weights()
    if found is None:
        raise ModelNotAvailable(f"speaker resemblyzer: {FILE} is not in omoide's model cache",
                                hint=INSTALL_HINT)
    return found


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def extract_from_wheel(wheel: Path, cache: Path | None = None) -> Path:
    """Extract the weights from a ``Resemblyzer`` wheel into the model cache (checked by
    SHA-256); returns the file's path. Blocking."""
    root = cache if cache is not None else model_cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix=".resemblyzer-") as tmp:
        try:
            with zipfile.ZipFile(wheel) as archive:
                part = Path(archive.extract(MEMBER, tmp))
        except (KeyError, zipfile.BadZipFile, OSError) as exc:
            raise ModelNotAvailable(f"speaker resemblyzer: {wheel} holds no {MEMBER} ({exc})",
                                    hint=INSTALL_HINT) from exc
        target = assemble_model(root / CACHE_NAME, [ModelFile(FILE, (part,), SHA256)],
                                "speaker resemblyzer", INSTALL_HINT)
    return target / FILE


def main(argv: list[str]) -> int:
    """``python -m omoide_speaker_resemblyzer.bundled [WHEEL]``: extract the weights from
    WHEEL; without one, exit 0 when they are in the cache and 1 when they are not."""
    if not argv:
        found = cached_weights()
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
