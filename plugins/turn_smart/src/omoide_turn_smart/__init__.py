"""omoide plugin `turn_smart`: the `smart_turn` end-of-turn detector (Smart Turn v3.2).

Finished or only pausing? Read from the audio of the utterance so far by Smart Turn
v3.2 (BSD-2-Clause), run with onnxruntime on numpy log-mel features: no torch, no
transformers. The model file is taken from the ``pipecat-ai`` wheel at set-up
(:mod:`omoide_turn_smart.bundled`). Importing this module is cheap: onnxruntime is
imported when the detector starts.
"""

from __future__ import annotations

from collections.abc import Callable

from omoide.api import TurnDetector, hookimpl


@hookimpl
def register_turn_detectors(register: Callable[[type[TurnDetector]], None]) -> None:
    from omoide_turn_smart.detector import SmartTurn

    register(SmartTurn)
