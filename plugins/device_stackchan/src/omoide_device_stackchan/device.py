"""The ``stackchan`` device: a stock M5Stack StackChan (xiaozhi firmware) talks to omoide.

YAML::

    devices:
      - use: stackchan
        pairing_required: true          # unknown robots get an activation code
        token_secret: {$env: OMOIDE_DEVICE_SECRET}   # or omit: generated, kept in data_dir

The robot's OTA URL is ``http://<server>:<port>/xiaozhi/ota/``; everything else
(WebSocket URL, token, activation, firmware updates) it learns from there.

Routes: ``/xiaozhi/...`` is for robots and browser clients (they prove themselves with
their ids and device tokens; CORS answered); ``/v1/devices...`` is the management API
for the owner's console (the server's management token applies).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from omoide.api import Device, DeviceHost, ModelNotAvailable
from omoide_device_stackchan.config import StackChanConfig

if TYPE_CHECKING:
    from fastapi import APIRouter

    from omoide.api import Announcement
    from omoide_device_stackchan.service import StackChanService
    from omoide_device_stackchan.simulated_client import SimulatedStackChanClient


class StackChan(Device):
    """xiaozhi-protocol OTA + WebSocket transport for StackChan robots."""

    name = "stackchan"
    Config = StackChanConfig
    public_paths: ClassVar[tuple[str, ...]] = ("/xiaozhi/",)
    config: StackChanConfig

    def __init__(self, config: StackChanConfig) -> None:
        super().__init__(config)
        self.service: StackChanService | None = None

    async def _start(self) -> None:
        from omoide_device_stackchan.codec import INSTALL_HINT, check_opus_available
        try:
            check_opus_available()
        except Exception as exc:
            raise ModelNotAvailable(f"device stackchan: {exc}", hint=INSTALL_HINT) from exc

    async def _stop(self) -> None:
        if self.service is not None:
            await self.service.close_all()

    def router(self, host: DeviceHost) -> APIRouter:
        from omoide_device_stackchan.service import StackChanService
        self.service = StackChanService(self.config, host)
        return self.service.router()

    def reaches(self, user: str) -> bool:
        return self.service is not None and self.service.announcer.reaches(user)

    async def announce(self, user: str, announcement: Announcement) -> bool:
        return self.service is not None and await self.service.announcer.announce(
            user, announcement)

    @classmethod
    def simulated_client(cls, base_url: str, *, management_headers: dict[str, str],
                         speed: float = 1.0, device_id: str | None = None
                         ) -> SimulatedStackChanClient:
        """A simulated StackChan with the stock firmware's habits (see
        :mod:`omoide_device_stackchan.simulator`; the client's ``robot``)."""
        from omoide_device_stackchan.simulated_client import SimulatedStackChanClient
        return SimulatedStackChanClient(base_url, management_headers=management_headers,
                                        speed=speed, device_id=device_id)
