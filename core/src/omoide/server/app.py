"""The FastAPI application.

Components start in the background once the server is up, so ``GET /healthz``
can show each one as starting, ready or failed (with the reason). Turns are
refused with 503 until the components they need are ready. A component that fails
to start calls ``on_fatal`` (``omoide serve`` stops the server with the message).
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from omoide.audio import read_wav, resample, write_wav
from omoide.components import ComponentState, EndOfSpeechDetector
from omoide.config import Settings
from omoide.errors import InvalidInput, OmoideError
from omoide.memory.api import MemoryService
from omoide.pipeline.assistant import Assistant, ExtractionScheduler
from omoide.pipeline.trace import TraceLog
from omoide.pipeline.turn import NullSink, TurnRequest, TurnResult, TurnSink
from omoide.plugins import PluginRegistry
from omoide.runtime import Runtime
from omoide.types import AudioClip, RetrievedMemory

log = logging.getLogger("omoide.server")

MAX_AUDIO_BYTES = 32 * 1024 * 1024


class TextTurnIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user: str = Field(min_length=1, max_length=200, description="User id.")
    text: str = Field(min_length=1, max_length=4000, description="What the user said.")
    now: datetime | None = Field(None, description="Override the clock (tests, replay).")
    speak: bool = Field(False, description="Also synthesise the reply (audio in the response).")


def memory_json(m: RetrievedMemory) -> dict[str, Any]:
    mem = m.memory
    return {"id": mem.id, "text": mem.text, "score": round(m.score, 4),
            "created_at": mem.created_at.isoformat(),
            "event_dates": [d.isoformat() for d in mem.event_dates], "kind": mem.kind,
            "channels": {k: round(v, 4) for k, v in m.channels.items()}}


def result_json(result: TurnResult, *, with_audio: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "turn_id": result.turn_id, "user": result.user, "transcript": result.transcript,
        "reply": result.reply, "emotion": result.emotion.value,
        "sentences": result.sentences,
        "memories": [memory_json(m) for m in result.memories],
        "trace": result.trace, "degraded": result.degraded}
    if with_audio:
        clips = [c for c in result.audio if c is not None]
        if clips:
            rate = clips[0].sample_rate
            joined = np.concatenate([resample(c, rate).samples for c in clips])
            body["audio_wav_base64"] = base64.b64encode(
                write_wav(AudioClip(joined, rate))).decode()
        else:
            body["audio_wav_base64"] = None
    return body


class OmoideServer:
    """The running assistant behind the app: runtime, memory, pipeline, traces."""

    def __init__(self, settings: Settings, registry: PluginRegistry,
                 runtime: Runtime | None = None,
                 on_fatal: Callable[[str], None] | None = None,
                 memory: MemoryService | None = None) -> None:
        self.settings = settings
        self._memory_override = memory
        self.registry = registry
        self.runtime = runtime or Runtime(settings)
        self.on_fatal = on_fatal
        self.data_dir = settings.data_dir
        trace_file = settings.server.trace_file
        self.traces = TraceLog(self.data_dir / trace_file if trace_file else None,
                               settings.server.traces_kept)
        self.memory_state = ComponentState.CREATED
        self.memory_reason: str | None = None
        self.assistant: Assistant | None = None
        self._scheduler: ExtractionScheduler | None = None
        self._start_task: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()

    # -- lifecycle -------------------------------------------------------------------
    async def start(self) -> None:
        """Start every component, then memory; calls ``on_fatal`` on failure."""
        from omoide.pipeline import sections
        from omoide.runtime import StartupFailed

        self.data_dir.mkdir(parents=True, exist_ok=True)
        rt = self.runtime
        try:
            await rt.start()
        except StartupFailed as exc:
            self._fatal(str(exc))
            return
        memory = None
        self.memory_state = ComponentState.STARTING
        try:
            memory = self.memory
            await memory.start()
            self.memory_state = ComponentState.READY
        except Exception as exc:  # noqa: BLE001 - rendered for the user
            self.memory_state = ComponentState.FAILED
            self.memory_reason = f"{type(exc).__name__}: {exc}"
            self._fatal(f"memory failed to start: {self.memory_reason}")
            return
        pm = self.registry.pm
        if not pm.is_registered(sections):
            pm.register(sections, name="core.sections")
        self._scheduler = ExtractionScheduler(memory)
        pm.register(self._scheduler, name=f"core.extraction.{id(self)}")
        self.assistant = Assistant(settings=self.settings.assistant, asr=rt.asr, chat=rt.chat,
                                   tts=rt.tts, memory=memory, hooks=pm, traces=self.traces)
        self.ready.set()
        log.info("omoide is ready")

    @property
    def memory(self) -> MemoryService:
        """The memory service (the runtime's engine unless one was given)."""
        return (self._memory_override if self._memory_override is not None
                else self.runtime.memory)

    def _fatal(self, message: str) -> None:
        if self.on_fatal is None:
            log.error("%s", message)
        else:
            self.on_fatal(message)

    async def stop(self) -> None:
        if self._start_task is not None and not self._start_task.done():
            self._start_task.cancel()
        if self._scheduler is not None:
            # a registry may outlive this server (tests, embedding): no observer may call
            # into a stopped memory engine
            self.registry.pm.unregister(self._scheduler)
            self._scheduler = None
        if self.memory_state is ComponentState.READY:
            try:
                await self.memory.stop()
            except Exception:
                log.exception("stopping memory failed")
        await self.runtime.stop()

    def health(self) -> dict[str, Any]:
        comps = {path: comp.describe() for path, comp in self.runtime.components().items()}
        comps["memory"] = {"kind": "memory", "name": self.settings.memory.engine,
                           "state": self.memory_state.value, "reason": self.memory_reason,
                           "stand_in": None}
        states = {c["state"] for c in comps.values()}
        status = ("ready" if self.ready.is_set() else
                  "failed" if "failed" in states else "starting")
        return {"status": status, "components": comps}

    # -- DeviceHost ------------------------------------------------------------------
    def host_for(self, plugin_id: str) -> ServerDeviceHost:
        return ServerDeviceHost(self, self.settings.device_data_dir(plugin_id))

    async def run_turn(self, request: TurnRequest, sink: TurnSink) -> TurnResult:
        if not self.ready.is_set():
            raise _NotReady()
        assert self.assistant is not None
        return await self.assistant.run_turn(request, sink)


class _NotReady(OmoideError):
    def __init__(self) -> None:
        super().__init__("omoide is still starting; try again in a moment")


class ServerDeviceHost:
    """What a device plugin sees of the server (:class:`omoide.components.DeviceHost`)."""

    def __init__(self, server: OmoideServer, data_dir: Path) -> None:
        self._server = server
        self.data_dir = data_dir
        data_dir.mkdir(parents=True, exist_ok=True)

    @property
    def timezone(self) -> str:
        return self._server.settings.assistant.timezone

    async def run_turn(self, request: TurnRequest, sink: TurnSink) -> TurnResult:
        return await self._server.run_turn(request, sink)

    def new_end_of_speech_detector(self) -> EndOfSpeechDetector | None:
        vad = self._server.runtime.vad
        return vad.new_detector() if vad is not None else None

    async def session_ended(self, user: str) -> None:
        if self._server.ready.is_set():
            await self._server.memory.session_ended(user)


def create_app(settings: Settings, registry: PluginRegistry, *,
               runtime: Runtime | None = None,
               on_fatal: Callable[[str], None] | None = None,
               memory: MemoryService | None = None) -> FastAPI:
    """Build the app for ``settings``. Components start when the app starts.

    ``memory`` replaces the configured memory engine (tests, embedding omoide).
    """
    server = OmoideServer(settings, registry, runtime, on_fatal, memory)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        server._start_task = asyncio.create_task(server.start())
        try:
            yield
        finally:
            await server.stop()

    app = FastAPI(title="omoide", version=_version(), lifespan=lifespan)
    app.state.omoide = server
    _install_error_handlers(app)
    app.include_router(_core_routes(server))
    memory_router = _memory_router(server)
    if memory_router is not None:
        app.include_router(memory_router)
    for path, device in zip(
            [p for p in settings.components if p.startswith("devices[")],
            server.runtime.devices, strict=True):
        owner = registry.owner_of("device", device.name) or device.name
        app.include_router(device.router(server.host_for(owner)))
        log.debug("mounted device %s from %s", device.name, path)
    return app


def _version() -> str:
    from omoide import __version__
    return __version__


def _memory_router(server: OmoideServer) -> APIRouter | None:
    from omoide.memory.engine import MemoryEngine
    from omoide.server.memory_routes import memory_router

    engine = server.memory
    if not isinstance(engine, MemoryEngine):
        log.info("memory routes are off: the memory service is not omoide's engine")
        return None
    from omoide.server.profile_routes import profile_router
    router = memory_router(engine)
    router.include_router(profile_router(engine))
    return router


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [{"path": ".".join(str(p) for p in e["loc"]), "message": e["msg"]}
                    for e in exc.errors()]
        return JSONResponse({"error": "invalid request", "problems": problems}, 422)

    @app.exception_handler(InvalidInput)
    async def _bad_input(request: Request, exc: InvalidInput) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, 400)

    @app.exception_handler(_NotReady)
    async def _not_ready(request: Request, exc: _NotReady) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, 503)

    @app.exception_handler(OmoideError)
    async def _omoide(request: Request, exc: OmoideError) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, 500)


def _core_routes(server: OmoideServer) -> APIRouter:
    router = APIRouter()

    @router.get("/", include_in_schema=False)
    async def page() -> HTMLResponse:
        """The web page: components, a user's memories (search, forget), recent traces."""
        html = resources.files("omoide.server").joinpath("static/index.html")
        return HTMLResponse(html.read_text(encoding="utf-8"))

    @router.get("/healthz")
    async def healthz() -> JSONResponse:
        body = server.health()
        return JSONResponse(body, 200 if body["status"] != "failed" else 503)

    @router.post("/v1/turns")
    async def text_turn(body: TextTurnIn) -> dict[str, Any]:
        result = await server.run_turn(
            TurnRequest(user=body.user, text=body.text, now=body.now, speak=body.speak,
                        device="http"), NullSink())
        return result_json(result, with_audio=body.speak)

    @router.post("/v1/turns/audio")
    async def audio_turn(request: Request, user: str, speak: bool = True) -> dict[str, Any]:
        """WAV in (request body, ``audio/wav``), reply text and audio (base64 WAV) out."""
        data = await request.body()
        if len(data) > MAX_AUDIO_BYTES:
            raise InvalidInput(f"audio body larger than {MAX_AUDIO_BYTES} bytes")
        clip = read_wav(data)
        result = await server.run_turn(
            TurnRequest(user=user, audio=clip, speak=speak, device="http"), NullSink())
        return result_json(result, with_audio=speak)

    @router.get("/v1/traces")
    async def traces(user: str | None = None, limit: int = 50) -> dict[str, Any]:
        return {"traces": server.traces.recent(user, max(1, min(limit, 1000)))}

    return router
