"""A device that stops reading is cut off after ``send_timeout_s`` and stalls nobody."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from omoide_device_stackchan.connection import DeviceConnection, DeviceGone, DeviceIdentity
from omoide_device_stackchan.device import StackChanConfig
from omoide_device_stackchan.simulator import SimulatedStackChan
from omoide_device_stackchan.testing import LiveServer, ScriptedHost, tone


class StuckWebSocket:
    """A test double of a WebSocket whose peer stopped reading: sends never complete."""

    def __init__(self) -> None:
        self.close_code: int | None = None
        self._never = asyncio.Event()

    async def send(self, message: Any) -> None:
        await self._never.wait()

    async def receive(self) -> Any:
        await self._never.wait()

    async def close(self, code: int = 1000, reason: str = "") -> None:
        self.close_code = code


def stuck_connection(tmp_path: Any, timeout_s: float) -> tuple[DeviceConnection, StuckWebSocket]:
    ws = StuckWebSocket()
    config = StackChanConfig.model_validate({"send_timeout_s": timeout_s})
    conn = DeviceConnection(ws, ScriptedHost(tmp_path), config,  # type: ignore[arg-type]
                            DeviceIdentity("aa:bb:cc:dd:ee:99", "c", "slow-user", 1))
    return conn, ws


async def test_a_device_that_stops_reading_is_disconnected_after_the_send_timeout(
        tmp_path: Any) -> None:
    conn, ws = stuck_connection(tmp_path, 0.2)
    started = time.monotonic()
    with pytest.raises(DeviceGone):
        await conn.stream_audio(tone(1.0))
    assert time.monotonic() - started < 1.0
    assert ws.close_code == 1008


async def test_a_stuck_device_does_not_delay_another(server: LiveServer, tmp_path: Any) -> None:
    conn, _ = stuck_connection(tmp_path, 3.0)
    stuck = asyncio.create_task(conn.stream_audio(tone(2.0)))
    robot = SimulatedStackChan(server.url)
    await robot.provision()
    await robot.connect()
    try:
        started = time.monotonic()
        reply = await robot.type_text("こんにちは")
        elapsed = time.monotonic() - started
    finally:
        await robot.close()
        stuck.cancel()
    assert reply.complete
    assert elapsed < 2.0          # well inside the stuck device's 3 s send timeout
