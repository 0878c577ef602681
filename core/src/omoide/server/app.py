"""The FastAPI application.

Components start in the background once the server is up, so ``GET /healthz``
can show each one as starting, ready or failed (with the reason). Turns are
refused with 503 until the components they need are ready. A component that fails
to start calls ``on_fatal`` (``omoide serve`` stops the server with the message).

Every request first passes :class:`omoide.server.guard.RequestGuard` (Host, Origin,
body size, token, content type); :mod:`omoide.server.auth` says who may call what.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from fastapi import APIRouter, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from omoide import long_lived
from omoide.announcements import Announcement, Announcer
from omoide.audio import read_wav, resample, write_wav
from omoide.components import ComponentState, EndOfSpeechDetector, TurnDetector
from omoide.components.speaker import SpeakerEncoder
from omoide.components.store import PersonMemoryUnavailable
from omoide.components.turn_events import TurnEventSubscriber
from omoide.config import ServerSettings, Settings
from omoide.errors import InvalidInput, OmoideError
from omoide.memory.api import MemoryService
from omoide.memory.control.json_shapes import profile_fact_json
from omoide.pipeline.assistant import Assistant, ExtractionScheduler
from omoide.pipeline.tools import ToolRunner
from omoide.pipeline.trace import TraceLog
from omoide.pipeline.turn import AnySink, NullSink, TurnRequest, TurnResult
from omoide.plugins import PluginRegistry
from omoide.runtime import Runtime
from omoide.server.auth import (
    PRINCIPAL_KEY,
    Principal,
    device_path_problem,
    require_user,
    visible_user,
)
from omoide.server.guard import GuardConfig, RequestGuard
from omoide.server.inputs import TurnText, UserId
from omoide.server.limits import NewUserLimiter
from omoide.server.origins import HostPolicy
from omoide.server.postgres_tokens import session_store, token_store
from omoide.server.tokens import TokenStorage
from omoide.time_bounds import SaneDatetime
from omoide.types import AudioClip, RetrievedMemory
from omoide.voices import SpeakerIdentifier, VoiceprintStore, open_voiceprints

if TYPE_CHECKING:
    from omoide.components.asr import RecognitionStream
    from omoide.components.device import Household
    from omoide.server.console_routes import ConsoleServices
    from omoide.voices.early import VoiceWhileSpoken

log = logging.getLogger("omoide.server")


class TextTurnIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user: UserId = Field(description="User id (see omoide.user_ids).")
    text: TurnText = Field(description="What the user said.")
    now: SaneDatetime | None = Field(None, description="Override the clock (tests, replay); "
                                                       "1970-2199.")
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
        "profile": [profile_fact_json(f) for f in result.profile],
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
        self.turn_observers: list[TurnEventSubscriber] = []
        """Who reads every turn's events besides its device (the console's feed)."""
        self.memory_state = ComponentState.CREATED
        self.memory_reason: str | None = None
        self.assistant: Assistant | None = None
        self._scheduler: ExtractionScheduler | None = None
        self.announcer, self.tools = _tools_for(self)
        from omoide.moments.serving import MomentsService
        self.moments = MomentsService(settings.envelope.moments, self.data_dir,
                                      settings.assistant.timezone, self.announcer,
                                      settings.envelope.database.url)
        """Moments: omoide speaks first (plans, birthdays, reminders from memory)."""
        self._start_task: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()
        limits = settings.server.limits
        self.new_users = NewUserLimiter.for_database(limits.new_users_per_source,
                                                     limits.new_users_window_minutes * 60,
                                                     settings.envelope.database.url)

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
            memory.warm_indexes()
            self.memory_state = ComponentState.READY
        except Exception as exc:  # noqa: BLE001 - rendered for the user
            self.memory_state = ComponentState.FAILED
            self.memory_reason = f"{type(exc).__name__}: {exc}"
            self._fatal(f"memory failed to start: {self.memory_reason}")
            return
        await self._know_existing_users(memory)
        pm = self.registry.pm
        if not pm.is_registered(sections):
            pm.register(sections, name="core.sections")
        self._scheduler = ExtractionScheduler(memory)
        pm.register(self._scheduler, name=f"core.extraction.{id(self)}")
        self.assistant = Assistant(settings=self.settings.assistant, asr=rt.asr, chat=rt.chat,
                                   tts=rt.tts, memory=memory, hooks=pm, traces=self.traces,
                                   tools=self.tools, observers=self.turn_observers,
                                   speaker=self.speaker_identifier(rt.speaker))
        from omoide.pipeline.postgres_history import history_for
        self.assistant.history = history_for(self.assistant.history,
                                             self.settings.envelope.database.url)
        self.moments.start(memory, rt.chat, self.assistant, self.turn_observers)
        long_lived.settle("the server's components")  # models: never garbage, never walked
        self.ready.set()
        log.info("omoide is ready")

    def speaker_identifier(self, encoder: SpeakerEncoder | None) -> SpeakerIdentifier | None:
        """The speaker stage with the voiceprints of the data dir (None without one)."""
        if encoder is None:
            return None
        return SpeakerIdentifier(encoder, self.voiceprints)

    @functools.cached_property
    def voiceprints(self) -> VoiceprintStore:
        """Everyone's voiceprints: ``<data_dir>/voices/``, or the shared database's
        with ``database.url`` (a voice enrolled on one worker is known to all)."""
        return open_voiceprints(self.data_dir, self.settings.envelope.database.url)

    async def _know_existing_users(self, memory: MemoryService) -> None:
        """People the journal knows are never "new" for the new-user limit."""
        journal = getattr(memory, "journal", None)
        users = getattr(journal, "users", None)
        if users is None:
            return
        try:
            self.new_users.know(await users())
        except Exception as exc:  # noqa: BLE001 - the limit then counts them once more
            log.warning("could not read the known users from the journal: %s", exc)

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
        await self.moments.stop()
        if self.assistant is not None:
            self.assistant.history.close()
        self.announcer.queue.close()
        if self.new_users.shared is not None:
            self.new_users.shared.close()
        if self.memory_state is ComponentState.READY:
            try:
                await self.memory.stop()
            except Exception:
                log.exception("stopping memory failed")
        await self.runtime.stop()

    def health(self, *, name_people: bool = False) -> dict[str, Any]:
        """Each component's state. People whose memories are unavailable (their store
        lost) make memory *degraded*; ``name_people`` (the admin asks) lists them."""
        comps = {path: comp.describe() for path, comp in self.runtime.components().items()}
        state, reason = self.memory_state.value, self.memory_reason
        problem = (getattr(self.memory, "problem", None)
                   if self.memory_state is ComponentState.READY else None)
        lost = self._people_without_memory()
        if problem:  # e.g. the journal fails: exchanges go to the spill file meanwhile
            state, reason = ComponentState.FAILED.value, str(problem)
        elif lost:
            state = "degraded"
            who = "1 person are" if len(lost) == 1 else f"{len(lost)} people are"
            reason = (f"the memories of {who} unavailable (their store is missing or"
                      " damaged); repair with `omoide memory repair --user U`")
        comps["memory"] = {"kind": "memory", "name": self.settings.memory.retrieve_stage.use,
                           "state": state, "reason": reason, "stand_in": None}
        if lost:
            comps["memory"]["people_unavailable"] = len(lost)
            if name_people:
                comps["memory"]["people"] = sorted(lost)
        states = {c["state"] for c in comps.values()}
        if self.ready.is_set():
            status = "degraded" if states & {"failed", "degraded"} else "ready"
        else:
            status = "failed" if "failed" in states else "starting"
        return {"status": status, "components": comps}

    def _people_without_memory(self) -> dict[str, Any]:
        """Whose memories the store refuses (a lost store; see ``check_people``)."""
        if self.memory_state is not ComponentState.READY:
            return {}
        store = getattr(self.memory, "store", None)
        return dict(getattr(store, "damaged_people", None) or {})

    # -- DeviceHost ------------------------------------------------------------------
    def host_for(self, plugin_id: str) -> ServerDeviceHost:
        return ServerDeviceHost(self, self.settings.device_data_dir(plugin_id))

    async def run_turn(self, request: TurnRequest, sink: AnySink) -> TurnResult:
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
    def database_url(self) -> str | None:
        """The shared database (``database.url``, PostgreSQL) for state every worker
        must see (a robot's pairing), or None: keep it in :attr:`data_dir`. A plugin
        opens it with ``omoide.api.open_pool`` and ``omoide.api.apply_migrations``."""
        return self._server.settings.envelope.database.url or None

    @property
    def timezone(self) -> str:
        return self._server.settings.assistant.timezone

    async def run_turn(self, request: TurnRequest, sink: AnySink) -> TurnResult:
        return await self._server.run_turn(request, sink)

    async def open_recognition(self, user: str, sample_rate: int, *,
                               guest: bool = False) -> RecognitionStream | None:
        assistant = self._server.assistant
        if not self._server.ready.is_set() or assistant is None:
            return None
        return await assistant.open_recognition(user, sample_rate, guest=guest)

    def listen_for_voice(self, household: Household,
                         sample_rate: int) -> VoiceWhileSpoken | None:
        """The voice of a household's utterance that is starting, identified while it
        is spoken (``Assistant.listen_for_voice``), or None (no speaker stage, no one
        enrolled, not ready). The device feeds it and passes it as ``TurnRequest.voice``."""
        assistant = self._server.assistant
        if not self._server.ready.is_set() or assistant is None:
            return None
        return assistant.listen_for_voice(household, sample_rate)

    def new_end_of_speech_detector(self) -> EndOfSpeechDetector | None:
        vad = self._server.runtime.vad
        return vad.new_detector() if vad is not None else None

    def turn_detector(self) -> TurnDetector | None:
        turn = self._server.runtime.turn
        ready = turn is not None and turn.status.state is ComponentState.READY
        return turn if ready else None

    async def session_ended(self, user: str) -> None:
        if self._server.ready.is_set():
            await self._server.memory.session_ended(user)

    async def synthesize(self, text: str) -> AudioClip | None:
        tts = self._server.runtime.tts
        if not self._server.ready.is_set() or tts is None:
            return None
        try:
            return await tts.synthesize(text)
        except Exception as exc:  # noqa: BLE001 - the caller shows the line without sound
            log.warning("tts failed for a device line %r: %s", text, exc)
            return None

    async def take_announcements(self, user: str) -> list[Announcement]:
        return await self._server.announcer.take_pending(user)


def _tools_for(server: OmoideServer) -> tuple[Announcer, ToolRunner]:
    """The announcer (unsolicited messages) and the tool runner, tools attached."""
    from omoide.postgres_announcements import queue_for
    from omoide.server.tool_host import ServerToolHost

    settings, rt = server.settings, server.runtime
    announcer = Announcer(rt.devices, rt.tts, queue_for(
        settings.data_dir / "announcements.json", settings.envelope.database.url),
        first_sentence_comma_split=settings.assistant.first_sentence_comma_split)
    for tool in rt.tools:
        owner = server.registry.owner_of("tool", tool.name) or tool.name
        tool.attach(ServerToolHost(server, announcer, settings.tool_data_dir(owner)))
    return announcer, ToolRunner(rt.tools, settings.envelope.tool_calls,
                                 settings.assistant.timezone)


def create_app(settings: Settings, registry: PluginRegistry, *,
               runtime: Runtime | None = None,
               on_fatal: Callable[[str], None] | None = None,
               memory: MemoryService | None = None) -> FastAPI:
    """Build the app for ``settings``. Components start when the app starts.

    ``memory`` replaces the configured memory engine (tests, embedding omoide). The
    admin token is created in ``<data_dir>/auth/`` if there is none yet.
    """
    from omoide.server.console_routes import ConsoleServices, console_router
    from omoide.server.openai_routes import openai_router

    server = OmoideServer(settings, registry, runtime, on_fatal, memory)
    console = ConsoleServices.build(server)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        server._start_task = asyncio.create_task(server.start())
        console.start(server)
        try:
            yield
        finally:
            await console.stop(server)
            await server.stop()

    app = FastAPI(title="omoide", version=_version(), lifespan=lifespan)
    app.state.omoide = server
    _install_error_handlers(app)
    app.include_router(_core_routes(server))
    app.include_router(console_router(server, console))
    app.include_router(openai_router(server))
    app.include_router(_voice_router(server))
    memory_router = _memory_router(server, console)
    if memory_router is not None:
        app.include_router(memory_router)
    device_prefixes: list[str] = []
    for path, device in zip(
            [p for p in settings.components if p.startswith("devices[")],
            server.runtime.devices, strict=True):
        owner = registry.owner_of("device", device.name) or device.name
        for prefix in type(device).public_paths:
            problem = device_path_problem(prefix)
            if problem is not None:
                raise OmoideError(f"{path} ({device.name}) declares the public path "
                                  f"{prefix!r}: {problem}")
            device_prefixes.append(prefix)
        app.include_router(device.router(server.host_for(owner)))
        log.debug("mounted device %s from %s", device.name, path)
    install_guard(app, settings.server,
                  token_store(settings.data_dir, settings.envelope.database.url),
                  device_prefixes=tuple(device_prefixes))
    return app


def install_guard(app: FastAPI, server_settings: ServerSettings, tokens: TokenStorage, *,
                  device_prefixes: tuple[str, ...] = ()) -> None:
    """Put ``app`` behind the guard (tokens, Host/Origin, limits) and add the sign-in
    routes. Creates the admin token if there is none. ``app.state.tokens`` is then the
    token store (``omoide.testing.auth`` reads it): the data dir's files, or the
    database's tables with ``database.url``."""
    from omoide.server.session_routes import session_router

    tokens.ensure_admin_token()
    limits = server_settings.limits
    sessions = session_store(tokens, server_settings.auth.session_hours * 3600,
                             capacity=limits.max_sessions,
                             per_token=limits.sessions_per_token)
    app.state.tokens = tokens
    app.include_router(session_router(tokens, sessions, per_source=limits.sign_ins_per_source,
                                      per_token=limits.sign_ins_per_token))
    app.add_middleware(RequestGuard, config=GuardConfig(
        tokens=tokens, sessions=sessions,
        hosts=HostPolicy.build(listen_host=server_settings.host,
                               public_url=server_settings.public_url,
                               allowed_hosts=server_settings.auth.allowed_hosts,
                               allowed_origins=server_settings.auth.allowed_origins),
        auth=server_settings.auth, limits=server_settings.limits,
        device_prefixes=device_prefixes))


def _version() -> str:
    from omoide import __version__
    return __version__


def _voice_router(server: OmoideServer) -> APIRouter:
    from omoide.server.voice_routes import voice_router

    def identifier() -> SpeakerIdentifier | None:
        assistant = getattr(server, "assistant", None) if server.ready.is_set() else None
        return assistant.speaker if assistant is not None else None

    return voice_router(server.voiceprints, identifier)


def _memory_router(server: OmoideServer, console: ConsoleServices) -> APIRouter | None:
    from omoide.memory.engine import MemoryEngine
    from omoide.server.memory_routes import memory_router

    engine = server.memory
    if not isinstance(engine, MemoryEngine):
        log.info("memory routes are off: the memory service is not omoide's engine")
        return None
    from omoide.server.profile_routes import profile_router
    router = memory_router(engine, limits=server.settings.server.limits,
                           ready=server.ready.is_set, forget_undo=console.forget_undo,
                           relevance=console.relevance)
    router.include_router(profile_router(engine, ready=server.ready.is_set))
    return router


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [{"path": ".".join(str(p) for p in e["loc"]),
                     "message": str(e["msg"]).removeprefix("Value error, ")}
                    for e in exc.errors()]
        return JSONResponse({"error": "invalid request", "problems": problems}, 422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse({"error": exc.detail}, exc.status_code, headers=exc.headers)

    @app.exception_handler(InvalidInput)
    async def _bad_input(request: Request, exc: InvalidInput) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, 400)

    @app.exception_handler(_NotReady)
    async def _not_ready(request: Request, exc: _NotReady) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, 503)

    @app.exception_handler(PersonMemoryUnavailable)
    async def _memory_unavailable(request: Request,
                                  exc: PersonMemoryUnavailable) -> JSONResponse:
        return JSONResponse({"error": f"the memories of {exc.damage.user!r} are unavailable:"
                                      f" their store is lost ({exc.damage.what}); repair it"
                                      " with `omoide memory repair --config FILE --user"
                                      f" {exc.damage.user}`", "memory_unavailable": True}, 503)

    @app.exception_handler(OmoideError)
    async def _omoide(request: Request, exc: OmoideError) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, 500)


def _core_routes(server: OmoideServer) -> APIRouter:
    router = APIRouter()

    @router.get("/healthz")
    @router.head("/healthz", include_in_schema=False)   # documented; GET's answer
    async def healthz(request: Request) -> JSONResponse:
        principal = request.scope.get(PRINCIPAL_KEY)
        body = server.health(name_people=isinstance(principal, Principal)
                             and principal.is_admin)
        return JSONResponse(body, 200 if body["status"] != "failed" else 503)

    async def admit_user(request: Request, user: str) -> None:
        require_user(request, user)
        client = request.client.host if request.client else None
        retry_after = await server.new_users.admit_async(user, client)
        if retry_after is not None:
            raise HTTPException(
                429, "too many new user ids from this address; try again later "
                     "(server.limits.new_users_per_source)",
                headers={"Retry-After": str(int(retry_after))})

    @router.post("/v1/turns")
    async def text_turn(body: TextTurnIn, request: Request) -> dict[str, Any]:
        await admit_user(request, body.user)
        result = await server.run_turn(
            TurnRequest(user=body.user, text=body.text, now=body.now, speak=body.speak,
                        device="http"), NullSink())
        return result_json(result, with_audio=body.speak)

    @router.post("/v1/turns/audio")
    async def audio_turn(request: Request, user: UserId, speak: bool = True,
                         ) -> dict[str, Any]:
        """WAV in (request body, ``audio/wav``), reply text and audio (base64 WAV) out.

        The body is limited by ``server.limits.max_audio_bytes`` while it streams.
        """
        await admit_user(request, user)
        clip = read_wav(await request.body())
        result = await server.run_turn(
            TurnRequest(user=user, audio=clip, speak=speak, device="http"), NullSink())
        return result_json(result, with_audio=speak)

    @router.get("/v1/traces")
    async def traces(request: Request, user: UserId | None = None,
                     limit: int = Query(50, ge=1, le=1000)) -> dict[str, Any]:
        """Recent turn traces; a person's token sees only that person's."""
        return {"traces": server.traces.recent(visible_user(request, user), limit)}

    return router
