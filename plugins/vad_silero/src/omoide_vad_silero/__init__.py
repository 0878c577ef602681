"""omoide plugin `vad_silero`: the `silero` voice activity detector on onnxruntime (no torch).

The model file comes from the ``silero-vad`` wheel, which must be installed without its
dependencies (they pull in torch)::

    pip install --no-deps silero-vad

Importing this module is cheap: onnxruntime is imported when the detector starts.
"""

from __future__ import annotations

from collections.abc import Callable

from omoide.api import VAD, hookimpl


@hookimpl
def register_vad(register: Callable[[type[VAD]], None]) -> None:
    from omoide_vad_silero.vad import SileroVAD

    register(SileroVAD)
