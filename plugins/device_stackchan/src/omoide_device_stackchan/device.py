"""The ``stackchan`` device: a stock M5Stack StackChan (xiaozhi firmware) talks to omoide.

YAML::

    devices:
      - use: stackchan
        pairing_required: true          # unknown robots get an activation code
        token_secret: {$env: OMOIDE_DEVICE_SECRET}   # or omit: generated, kept in data_dir

The robot's OTA URL is ``http://<server>:<port>/xiaozhi/ota/``; everything else
(WebSocket URL, token) it learns from there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field, field_validator

from omoide.components.device import Device, DeviceConfig, DeviceHost
from omoide.config import Secret
from omoide.errors import ModelNotAvailable

if TYPE_CHECKING:
    from fastapi import APIRouter

    from omoide_device_stackchan.service import StackChanService


class StackChanConfig(DeviceConfig):
    pairing_required: bool = Field(
        True, description="Only paired devices may connect; an unknown device gets an "
                          "activation code to pair with `omoide devices pair --code`.")
    open_user: str | None = Field(
        None, description="Open mode (pairing_required false): user id for unpaired devices;"
                          " null gives each device its own user `device-<id>`.")
    token_secret: Secret = Field(
        None, description="HMAC secret for device tokens, as {$env: NAME}; when absent a "
                          "random one is generated and kept in the plugin's data folder.")
    token_ttl_days: float = Field(30.0, gt=0, description="How long a device token is valid.")
    public_url: str | None = Field(
        None, description="Base URL devices reach the server at (http[s]://host:port); the "
                          "OTA answer derives the WebSocket URL from it. Default: from the "
                          "request's Host header.")
    protocol_version: Literal[1, 2, 3] = Field(
        1, description="Binary framing version the OTA answer tells devices to use.")
    timezone: str = Field("Asia/Tokyo",
                          description="Time zone whose UTC offset the OTA answer reports.")
    hello_timeout_s: float = Field(10.0, gt=0,
                                   description="Close a connection that sends no hello by then.")
    close_after_silence_s: float = Field(
        120.0, gt=0, description="Close the connection after this long without speech.")
    downlink_sample_rate: Literal[8000, 12000, 16000, 24000, 48000] = Field(
        24000, description="Sample rate of reply audio sent to the device (Opus).")
    downlink_frame_ms: Literal[20, 40, 60] = Field(
        60, description="Length of one downlink Opus frame.")
    opus_complexity: int = Field(
        3, ge=0, le=10, description="Opus encoder complexity for reply audio (0-10; higher "
                                    "costs more CPU per device for little audible gain).")
    pre_buffer_frames: int = Field(
        5, ge=1, le=50, description="Frames sent ahead of real time before pacing starts.")
    max_frame_bytes: int = Field(
        4000, ge=256, description="Largest binary (audio) message accepted; larger closes "
                                  "the connection (1009).")
    max_text_bytes: int = Field(
        65536, ge=1024, description="Largest JSON message accepted; larger closes (1009).")
    max_utterance_s: float = Field(30.0, gt=0,
                                   description="Speech longer than this is cut into a turn.")
    pre_roll_ms: int = Field(300, ge=0, description="Audio kept before detected speech start.")
    energy_threshold: float = Field(
        0.015, gt=0, description="RMS that counts as speech when the server has no VAD "
                                 "(fallback end-of-speech detection).")
    energy_silence_ms: int = Field(
        700, ge=100, description="Silence ending speech for the energy fallback.")
    mcp_timeout_s: float = Field(10.0, gt=0,
                                 description="Time the robot has to answer an MCP request.")
    send_timeout_s: float = Field(
        5.0, gt=0, description="A device that does not take a message within this long is "
                               "disconnected (it must not stall others).")
    max_errors: int = Field(20, ge=1,
                            description="Protocol errors tolerated before closing (1008).")
    wake_words: list[str] = Field(
        default_factory=lambda: ["你好小智", "ハイ スタックチャン", "スタックチャン"],
        description="`listen detect` texts treated as a wake word (anything else is "
                    "taken as a typed utterance and answered).")

    @field_validator("public_url")
    @classmethod
    def _http_url(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith(("http://", "https://", "ws://", "wss://")):
            raise ValueError("public_url must start with http://, https://, ws:// or wss://")
        return v.rstrip("/") if v else v


class StackChan(Device):
    """xiaozhi-protocol OTA + WebSocket transport for StackChan robots."""

    name = "stackchan"
    Config = StackChanConfig
    config: StackChanConfig
    public_paths = ("/xiaozhi/",)

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
