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
import sys
from pathlib import Path

from omoide.api import ModelNotAvailable, WheelModel

FILE = "pretrained.pt"
MEMBER = f"resemblyzer/{FILE}"
WHEEL_VERSION = "0.1.4"
SHA256 = "39373b86598fa3da9fcddee6142382efe09777e8d37dc9c0561f41f0070f134e"
INSTALL_HINT = (f"./dev.sh setup  (or: pip download --no-deps Resemblyzer=={WHEEL_VERSION} -d DIR"
                f" && python -m omoide_speaker_resemblyzer.bundled DIR/Resemblyzer-*.whl)")
MODEL = WheelModel(FILE, MEMBER, SHA256, f"resemblyzer-ge2e-{SHA256[:12]}",
                   "speaker resemblyzer", INSTALL_HINT)


def cached_weights(cache: Path | None = None) -> Path | None:
    """The weights in omoide's model cache when they were extracted there completely."""
    return MODEL.cached(cache)


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
    return MODEL.extract(wheel, cache)


if __name__ == "__main__":
    raise SystemExit(MODEL.main(sys.argv[1:]))
