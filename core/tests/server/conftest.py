"""Fixtures for the server's security tests: apps over the test doubles and the real
memory engine, a probe device, and a real uvicorn for what needs real sockets."""

from __future__ import annotations

import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml
from fastapi import APIRouter, FastAPI, Request, WebSocket
from fastapi.testclient import TestClient

from omoide.components.device import Device, DeviceHost
from omoide.config import Settings, validate_config
from omoide.hookspecs import hookimpl
from omoide.plugins import PluginRegistry
from omoide.server.app import create_app
from omoide.testing.auth import BASE_URL

BASE_CONFIG = """
vad: {use: fake}
asr: {use: fake, text: 今日は何の日？}
embed: {use: fake}
store: {use: fake}
chat: {use: fake, reply: "[happy] 今日はいい日だよ。"}
tts: {use: fake}
"""


class ProbeDevice(Device):
    """A device double: ``/probe/...`` is its own (public) space; ``/v1/devices/probe``
    (and its WebSocket ``/live``) are console routes it adds outside it (management)."""

    name = "probe"
    public_paths: ClassVar[tuple[str, ...]] = ("/probe/",)

    def router(self, host: DeviceHost) -> APIRouter:
        router = APIRouter()

        @router.get("/probe/hello")
        async def hello() -> dict[str, str]:
            return {"hello": "robot"}

        @router.post("/probe/echo")
        async def echo(request: Request) -> dict[str, int]:
            return {"bytes": len(await request.body())}

        @router.get("/v1/devices/probe")
        async def console() -> dict[str, list[str]]:
            return {"devices": ["probe-1"]}

        @router.websocket("/v1/devices/probe/live")
        async def live(ws: WebSocket) -> None:
            await ws.accept()
            await ws.send_text("hi")
            await ws.close()

        return router


class OverreachingDevice(ProbeDevice):
    """A device double that tries to make omoide's own API public."""

    name = "overreach"
    public_paths: ClassVar[tuple[str, ...]] = ("/v1/",)


@hookimpl
def register_devices(register: Callable[[Any], None]) -> None:
    register(ProbeDevice)
    register(OverreachingDevice)


@pytest.fixture
def device_registry(registry: PluginRegistry) -> PluginRegistry:
    """The doubles plus the probe devices, registered through a plugin module."""
    module = types.ModuleType("probe_devices")
    module.register_devices = register_devices  # type: ignore[attr-defined]
    registry.load_module("probe_devices", module)
    return registry


def settings_for(data_dir: Path, registry: PluginRegistry, **sections: Any) -> Settings:
    """Settings over the doubles with ``data_dir``; ``sections`` merge into the YAML."""
    data = yaml.safe_load(BASE_CONFIG)
    data["server"] = {"data_dir": str(data_dir), **sections.pop("server", {})}
    data.update(sections)
    return validate_config(data, registry=registry, environ={})


def wait_ready(client: TestClient, timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while client.get("/healthz").json()["status"] == "starting":
        assert time.monotonic() < deadline, "server did not become ready"
        time.sleep(0.02)


@pytest.fixture
def make_client(tmp_path: Path, device_registry: PluginRegistry,
                ) -> Iterator[Callable[..., TestClient]]:
    """``make_client(**sections)`` -> a started TestClient (no credentials) on
    ``http://localhost`` for an app over the doubles and the real memory engine."""
    clients: list[TestClient] = []

    def make(client: tuple[str, int] = ("testclient", 50000), **sections: Any) -> TestClient:
        settings = settings_for(tmp_path / f"data{len(clients)}", device_registry, **sections)
        app: FastAPI = create_app(settings, device_registry)
        c = TestClient(app, base_url=BASE_URL, client=client)
        c.__enter__()
        clients.append(c)
        wait_ready(c)
        return c

    yield make
    for c in clients:
        c.__exit__(None, None, None)
