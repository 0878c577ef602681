"""A simulated device: a stand-in robot that reaches a running omoide over the network.

``omoide demo`` (and anything else that wants a robot without hardware) asks the device
class registered under a name for one with
:meth:`omoide.components.device.Device.simulated_client`; a device plugin that ships a
simulator returns an object following :class:`SimulatedDeviceClient`. The core knows
nothing else about the device: how it provisions, pairs, frames audio or shows a face
is the plugin's.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from omoide.types import AudioClip


class SimulatedReply(Protocol):
    """What the simulated device received for one utterance."""

    transcript: str | None
    """What the server heard (None when it did not say)."""
    face: str | None
    """The face the device was told to show with the reply (None: none was sent)."""
    errors: list[str]
    """Problems the device noticed while receiving the reply."""

    @property
    def text(self) -> str:
        """The reply's sentences, joined."""
        ...

    def save_wav(self, path: str | Path) -> None:
        """Write the reply's audio as a WAV file."""
        ...


class SimulatedDeviceClient(Protocol):
    """One simulated device, one session at a time. Not thread-safe."""

    @property
    def device_id(self) -> str:
        """The device's own id, as the server sees it."""
        ...

    @property
    def session_id(self) -> str | None:
        """The server's id for the open session (None before :meth:`connect`)."""
        ...

    async def provision(self, user: str) -> list[str]:
        """Start as the real device does (ask the server how to connect). When the server
        wants the device paired first, pair it with ``user`` the way its owner would
        (management API) and start again. Returns what happened, as lines for people
        (empty when no pairing was needed)."""
        ...

    async def connect(self) -> None:
        """Open the session (after :meth:`provision`)."""
        ...

    async def say(self, clip: AudioClip, *, timeout: float) -> SimulatedReply:
        """Speak ``clip`` as the device's microphone would and collect the whole reply."""
        ...

    async def hear_unprompted(self, timeout: float) -> list[str]:
        """The sentences the device is told to speak without being asked (a timer going
        off), up to the end of that speech. Raises :class:`TimeoutError` when nothing
        comes within ``timeout`` seconds and :class:`ConnectionError` when the session
        closes."""
        ...

    def face_emoji(self, face: str) -> str:
        """An emoji for people reading along, for a face named in a reply."""
        ...

    async def close(self) -> None:
        """End the session; safe to call twice."""
        ...
