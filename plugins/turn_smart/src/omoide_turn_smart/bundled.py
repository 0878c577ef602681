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

import sys
from pathlib import Path

from omoide.api import WheelModel

FILE = "smart-turn-v3.2-cpu.onnx"
MEMBER = f"pipecat/audio/turn/smart_turn/data/{FILE}"
WHEEL_VERSION = "1.14.0"
SHA256 = "2bb026316b14a660486a75b1733cd3fbab8c2fd0314dc9af7be49f8cca967e4f"
INSTALL_HINT = (f"./dev.sh setup  (or: pip download --no-deps pipecat-ai=={WHEEL_VERSION} -d DIR"
                f" && python -m omoide_turn_smart.bundled DIR/pipecat_ai-*.whl)")
MODEL = WheelModel(FILE, MEMBER, SHA256, f"smart-turn-v3.2-{SHA256[:12]}", "turn smart_turn",
                   INSTALL_HINT)


def cached_model(cache: Path | None = None) -> Path | None:
    """The model file in omoide's model cache when it was extracted there completely."""
    return MODEL.cached(cache)


def extract_from_wheel(wheel: Path, cache: Path | None = None) -> Path:
    """Extract the model from a ``pipecat-ai`` wheel into the model cache (checked by
    SHA-256); returns the file's path. Blocking."""
    return MODEL.extract(wheel, cache)


if __name__ == "__main__":
    raise SystemExit(MODEL.main(sys.argv[1:]))
