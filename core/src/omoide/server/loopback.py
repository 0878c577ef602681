"""A whole omoide server on 127.0.0.1 inside the running event loop, for simulated devices.

``omoide demo``, ``omoide bench devices`` and the whole-system tests use it: the real
app (:func:`omoide.server.app.create_app`) under a real uvicorn, so a simulated robot
(see :meth:`omoide.components.device.Device.simulated_client`) goes through the same
HTTP and WebSocket stack a real one does. Nothing here knows a particular device.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from omoide.config import Settings

log = logging.getLogger("omoide.server.loopback")


def settings_from_data(data: dict[str, Any], source: str = "<loopback>") -> Settings:
    """Validate a config given as a dict (loads only the plugins it uses)."""
    from omoide.config import parse_envelope, validate_components, wanted_components
    from omoide.plugins import build_registry

    envelope = parse_envelope(data, source)
    registry = build_registry(wanted_components(envelope))
    return validate_components(envelope, registry, source)


class StartFailed(RuntimeError):
    """The server did not become ready; the message lists each failed component."""


class LoopbackOmoide:
    """Serve ``settings`` on a free loopback port until :meth:`stop`."""

    def __init__(self, settings: Settings, *, memory: Any = None,
                 log_level: str = "warning") -> None:
        self.settings = settings
        self._memory = memory
        self._log_level = log_level
        self.app: Any = None
        self._server: Any = None
        self._task: asyncio.Task[None] | None = None
        self.port = 0
        self._fatal: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def omoide(self) -> Any:
        """The app's :class:`omoide.server.app.OmoideServer`."""
        return self.app.state.omoide

    def device(self, name: str, index: int = 0) -> Any:
        """The running device component registered as ``name`` (``stackchan``), the
        ``index``-th of them in the config's ``devices:`` list."""
        devices = [d for d in self.omoide.runtime.devices if d.name == name]
        return devices[index]

    async def start(self, ready_timeout_s: float = 300.0) -> dict[str, Any]:
        """Start serving and wait until ``/healthz`` says ready; returns its body."""
        import uvicorn

        from omoide.config import wanted_components
        from omoide.plugins import build_registry
        from omoide.server.app import create_app

        registry = build_registry(wanted_components(self.settings.envelope))
        self.app = create_app(self.settings, registry, on_fatal=self._fatal.append,
                              memory=self._memory)
        config = uvicorn.Config(self.app, host="127.0.0.1", port=0, lifespan="on",
                                log_level=self._log_level, ws_max_size=1 << 20)
        self._server = uvicorn.Server(config)
        self._task = asyncio.create_task(self._server.serve())
        while not self._server.started:
            if self._task.done():
                await self._task
                raise StartFailed("uvicorn stopped before it started")
            await asyncio.sleep(0.01)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        return await self.wait_ready(ready_timeout_s)

    async def wait_ready(self, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            health: dict[str, Any] = self.omoide.health()
            if health["status"] == "ready":
                return health
            if health["status"] == "failed" or self._fatal:
                problems = [f"{path}: {c['reason']}" for path, c in
                            health["components"].items() if c["state"] == "failed"]
                raise StartFailed("; ".join(problems or self._fatal))
            await asyncio.sleep(0.05)
        raise StartFailed(f"not ready after {timeout_s:.0f}s")

    async def stop(self) -> None:
        if self._server is None:
            return
        self._server.should_exit = True
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, 30)
            except TimeoutError:
                log.warning("loopback server did not stop in time")
        self._server = None
