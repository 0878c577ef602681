"""The stackchan device's simulated client (``omoide demo``): a :class:`SimulatedStackChan`
behind the core's :class:`omoide.api.SimulatedDeviceClient` protocol.

It provisions as the firmware does (OTA); an unpaired robot is paired with the activation
code it shows through the management API (``POST /v1/devices/pair``), as the owner would
from the console, then finishes its activation as its client habits say (polls activation
until 200; the firmware asks OTA again, py-xiaozhi connects with the ``websocket`` it got
with the code).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from omoide_device_stackchan.emotions import face_emoji
from omoide_device_stackchan.simulator import (
    FIRMWARE,
    ClientHabits,
    ProvisioningRefused,
    Reply,
    SimulatedStackChan,
)

if TYPE_CHECKING:
    from omoide.api import AudioClip


class SimulatedStackChanClient:
    """One simulated StackChan (firmware habits). ``robot`` is the
    :class:`SimulatedStackChan` itself, for callers that measure the protocol (frames,
    listening modes): ``omoide bench devices``."""

    def __init__(self, base_url: str, *, management_headers: dict[str, str],
                 speed: float = 1.0, device_id: str | None = None,
                 habits: ClientHabits = FIRMWARE) -> None:
        self.robot = SimulatedStackChan(base_url, speed=speed, device_id=device_id,
                                        habits=habits)
        self._management_headers = management_headers

    @property
    def device_id(self) -> str:
        return self.robot.device_id

    @property
    def session_id(self) -> str | None:
        return self.robot.session_id

    async def provision(self, user: str) -> list[str]:
        try:
            await self.robot.provision()
            return []
        except ProvisioningRefused as refused:
            code = str(refused.activation["code"])
        lines = [f"robot {self.device_id} called the OTA endpoint: not paired yet, "
                 f"it shows activation code {code}",
                 f"  pairing it: omoide devices pair --code {code} --user {user}"]
        await self._pair(code, user)
        await self.robot.finish_activation()
        return lines

    async def _pair(self, code: str, user: str) -> None:
        import httpx

        async with httpx.AsyncClient(timeout=30, headers=self._management_headers) as http:
            response = await http.post(f"{self.robot.base_url}/v1/devices/pair",
                                       json={"code": code, "user": user})
        if response.status_code >= 400:
            raise RuntimeError(f"pairing robot {self.device_id} failed: "
                               f"{response.status_code} {response.text}")

    async def connect(self) -> None:
        await self.robot.connect()

    async def say(self, clip: AudioClip, *, timeout: float) -> Reply:
        return await self.robot.say(clip, mode="auto", timeout=timeout)

    async def hear_unprompted(self, timeout: float) -> list[str]:
        sentences: list[str] = []
        while True:
            kind, payload = await self.robot.next_message(timeout)
            state = payload.get("state") if kind == "tts" else None
            if state == "sentence_start":
                sentences.append(str(payload.get("text") or ""))
            if state == "stop":
                return sentences

    def face_emoji(self, face: str) -> str:
        return face_emoji(face)

    async def close(self) -> None:
        await self.robot.close()

