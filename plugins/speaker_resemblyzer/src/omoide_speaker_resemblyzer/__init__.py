"""omoide plugin `speaker_resemblyzer`: the `resemblyzer` speaker encoder (voiceprints).

Resemblyzer's GE2E encoder (Apache-2.0): 40-channel mel frames, a 3-layer LSTM of 256
units and a 256-d projection, over windows of 1.6 s averaged into one unit vector. The
forward pass and its mel front end are omoide's own numpy code (:mod:`.model`,
:mod:`.features`), and the weights are read from ``pretrained.pt`` without torch
(:mod:`.checkpoint`): no torch, no librosa, no webrtcvad. The weights file is taken from
the ``Resemblyzer`` wheel at set-up (:mod:`.bundled`). Importing this module is cheap.
"""

from __future__ import annotations

from collections.abc import Callable

from omoide.api import SpeakerEncoder, hookimpl


@hookimpl
def register_speaker_encoders(register: Callable[[type[SpeakerEncoder]], None]) -> None:
    from omoide_speaker_resemblyzer.encoder import Resemblyzer

    register(Resemblyzer)
