"""HTTP side of the StackChan device: OTA, activation, firmware, the WebSocket handshake.

Public routes (robots and browser clients; CORS on every answer, see :mod:`.cors`):

- ``GET|POST /xiaozhi/ota/``: server time; firmware (an update from ``firmware_dir``,
  else the robot's own version with no URL); and either ``websocket{url, token,
  version}`` for a paired robot presenting its paired client id, or
  ``activation{code, challenge, message, timeout_ms}`` for one that has to be paired,
  with a ``websocket`` too whose token is bound to that activation: it is refused until
  the code is entered and good from then on, so a client that keeps the ``websocket`` of
  that answer (py-xiaozhi) connects once its activation poll says 200, with no second
  OTA round (see :mod:`.tokens`).
- ``POST /xiaozhi/ota/activate``: the robot's activation poll, 202 while its code waits
  to be entered, 200 once paired, 404/409/410 for an unknown, mismatched or expired
  activation (see :mod:`.activation`).
- ``GET /xiaozhi/ota/firmware/<board>/<file>``: a firmware image (the firmware
  downloads it without credentials).
- ``/xiaozhi/v1/`` (WebSocket): checks ``Device-Id`` / ``Client-Id`` /
  ``Authorization: Bearer`` (headers, or the query parameters ``device-id``,
  ``client-id``, ``authorization`` browser clients use) against the pairing, refuses
  with HTTP 401 otherwise, then hands the socket to a :class:`DeviceConnection`.

OTA and activation are limited per source address (``ota_rate_limit``, 429 beyond).
When the pending-code pool has no room for another code (every code in the way belongs
to a robot still asking, see :mod:`.pairing`), OTA answers 429 with ``Retry-After``
instead of a code. A body nested too deeply to parse is a 400 and one log line.
The management API for the console is in :mod:`.management`. No log line here carries
a token: tokens are only ever written into the OTA answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from starlette.websockets import WebSocket

from omoide.api import Household, InvalidInput
from omoide_device_stackchan import framing
from omoide_device_stackchan.activation import parse_activation
from omoide_device_stackchan.announce import StackChanAnnouncer, cancel_watch
from omoide_device_stackchan.connection import DeviceConnection, DeviceIdentity
from omoide_device_stackchan.cors import PublicDeviceRoute, preflight
from omoide_device_stackchan.firmware import FirmwareLibrary
from omoide_device_stackchan.identifiers import (
    BadIdentifier,
    check_client_id,
    check_device_id,
    check_serial_number,
)
from omoide_device_stackchan.pairing import (
    ActivationState,
    DeviceInfo,
    Pairing,
    PairingStore,
    PendingActivation,
    PendingPoolFull,
)
from omoide_device_stackchan.ratelimit import SourceRateLimiter
from omoide_device_stackchan.tokens import TokenSigner, bearer_token, load_or_create_secret

if TYPE_CHECKING:
    from omoide.api import DeviceHost
    from omoide_device_stackchan.config import StackChanConfig

log = logging.getLogger("omoide.device.stackchan")

OTA_PATH = "/xiaozhi/ota/"
ACTIVATE_PATH = OTA_PATH + "activate"
FIRMWARE_PATH = OTA_PATH + "firmware"
WS_PATH = "/xiaozhi/v1/"
MAX_OTA_BODY = 64 * 1024
SECRET_FILE = "token_secret"

_ACTIVATION_ANSWERS: dict[ActivationState, tuple[int, str]] = {
    ActivationState.PENDING: (202, "waiting for the owner to enter the activation code"),
    ActivationState.ACTIVATED: (200, "activated"),
    ActivationState.EXPIRED: (410, "the activation code expired; ask OTA for a new one"),
    ActivationState.UNKNOWN: (404, "no activation for this device, client and challenge"),
    ActivationState.MISMATCH: (409, "serial number differs from the one announced"),
}


def pairing_store_for(data_dir: Path, config: StackChanConfig | None = None,
                      database_url: str | None = None) -> PairingStore:
    """The pairing store of the plugin whose data folder is ``data_dir`` (shared with
    the CLI): the JSON file there, or with ``database_url`` (PostgreSQL: several
    workers) the shared database's tables, under the folder's name."""
    limits: dict[str, Any] = {} if config is None else {
        "activation_ttl_s": config.activation_ttl_minutes * 60,
        "max_pending": config.max_pending, "max_per_source": config.max_pending_per_source}
    if database_url:
        from omoide_device_stackchan.shared_pairing import PostgresPairingStore

        return PostgresPairingStore(database_url, Path(data_dir).name, **limits)
    return PairingStore(Path(data_dir), **limits)


def timezone_offset_minutes(zone: str, at: datetime | None = None) -> int:
    offset = (at or datetime.now(ZoneInfo(zone))).astimezone(ZoneInfo(zone)).utcoffset()
    return int(offset.total_seconds() // 60) if offset else 0


class AuthDecision:
    """Outcome of the handshake check: the user to serve, or why the device is refused
    (``reason`` for the log; ``public`` is what the refused client may read, when the
    token it showed is genuine)."""

    def __init__(self, user: str | None, reason: str = "", public: str = "") -> None:
        self.user = user
        self.reason = reason
        self.public = public

    @property
    def ok(self) -> bool:
        return self.user is not None


@dataclass(frozen=True)
class OtaRequest:
    """Who asks at OTA and what it runs, from headers, query and body."""

    device_id: str
    client_id: str
    source: str
    info: DeviceInfo

    @classmethod
    def read(cls, headers: Mapping[str, str], query: Mapping[str, str],
             body: dict[str, Any], source: str) -> OtaRequest:
        """Raises :class:`BadIdentifier` for a missing or malformed id."""
        device = (headers.get("device-id") or query.get("device-id")
                  or str(body.get("mac_address") or ""))
        client = (headers.get("client-id") or query.get("client-id")
                  or str(body.get("uuid") or ""))
        if not device.strip():
            raise BadIdentifier("Device-Id header is required")
        if not client.strip():
            raise BadIdentifier("Client-Id header is required")
        serial = headers.get("serial-number")
        app = body.get("application") if isinstance(body.get("application"), dict) else {}
        board = body.get("board") if isinstance(body.get("board"), dict) else {}
        agent = headers.get("user-agent", "")
        version = str(app.get("version") or "") or (
            agent.rpartition("/")[2] if "/" in agent else "0.0.0")
        board_type = str(board.get("type") or "") or agent.partition("/")[0]
        return cls(check_device_id(device), check_client_id(client), source, DeviceInfo(
            check_serial_number(serial) if serial else None, version[:64],
            board_type[:64] or None, str(app.get("name") or "")[:64] or None))


class StackChanService:
    """State shared by every connection of one ``stackchan`` device component."""

    def __init__(self, config: StackChanConfig, host: DeviceHost) -> None:
        self.config = config
        self.host = host
        self.data_dir = Path(host.data_dir)
        # The server's host says where the shared database is (``database.url``);
        # another host (a test's) may not have the attribute: files then.
        database_url: str | None = getattr(host, "database_url", None)
        self.pairings = pairing_store_for(self.data_dir, config, database_url)
        if config.token_secret is not None:
            secret = config.token_secret.get_secret_value().encode()
        else:   # with the database every worker signs with the same secret
            secret = self.pairings.shared_secret() or \
                load_or_create_secret(self.data_dir / SECRET_FILE)
        self.signer = TokenSigner(secret, config.token_ttl_days * 86400)
        self.limiter = SourceRateLimiter(config.ota_rate_limit, database_url=database_url,
                                         namespace=self.data_dir.name)
        self.firmware = FirmwareLibrary(Path(config.firmware_dir)) if config.firmware_dir \
            else None
        self.connections: dict[str, DeviceConnection] = {}
        self.closed: list[DeviceConnection] = []
        self.announcer = StackChanAnnouncer(self)
        self._pool_full_logged_at = -60.0
        self._pool_refusals = 0

    # -- auth ----------------------------------------------------------------------
    def issue_token(self, device_id: str, client_id: str) -> str:
        return self.signer.issue(client_id, device_id)

    def issue_activation_token(self, activation: PendingActivation) -> str | None:
        """A token good once ``activation``'s code is paired (None for an activation
        kept from before challenges, which cannot be bound)."""
        if activation.client_id is None:
            return None
        try:
            return self.signer.issue_for_activation(activation.client_id,
                                                    activation.device_id,
                                                    activation.challenge)
        except ValueError:
            return None

    def authorize(self, device_id: str, client_id: str, token: str | None) -> AuthDecision:
        """Decide whether this device may connect, and as which user."""
        if not device_id:
            return AuthDecision(None, "no Device-Id")
        check = self.signer.check(token, client_id, device_id)
        if not check.ok:
            return AuthDecision(None, check.reason)
        pairing = self.pairings.get(device_id)
        if check.activation is not None:
            return self._authorize_activation(device_id, client_id, pairing,
                                              check.activation)
        if pairing is not None and not pairing.active:
            return AuthDecision(None, "device was revoked")
        if pairing is not None:
            if pairing.client_id is not None and pairing.client_id != client_id:
                return AuthDecision(None, "client id differs from the paired one")
            if check.issued_at < int(pairing.paired_at):
                return AuthDecision(None, "token predates the device's pairing")
            return AuthDecision(pairing.user)
        if self.config.pairing_required:
            return AuthDecision(None, "device is not paired")
        return AuthDecision(self.config.open_user or f"device-{device_id.replace(':', '')}")

    def _authorize_activation(self, device_id: str, client_id: str,
                              pairing: Pairing | None, challenge: str) -> AuthDecision:
        """An activation token is good only while the device's pairing is the one made
        from that activation: this client id, this challenge, not revoked. Anything else
        (not entered yet, revoked, re-paired by hand or with another code) refuses it."""
        if pairing is not None and pairing.activation_challenge == challenge \
                and pairing.client_id == client_id:
            if not pairing.active:
                return AuthDecision(None, "device was revoked")
            return AuthDecision(pairing.user)
        waiting = self.pairings.waiting(device_id, client_id)
        if waiting is not None and waiting.challenge == challenge:
            return AuthDecision(None, "activation code not entered yet",
                                "activation code not entered yet: enter the code the "
                                "device shows, then connect again")
        return AuthDecision(None, "token's activation was not the one paired "
                                  "(expired, replaced or revoked)")

    def _still_allowed(self, device_id: str, client_id: str) -> bool:
        """False once the device's pairing was revoked or moved to another client
        (checked while it is connected)."""
        try:
            pairing = self.pairings.recent(device_id)
        except OSError:
            return True
        if pairing is None:
            return not self.config.pairing_required
        return pairing.active and pairing.client_id in (None, client_id)

    def household_of(self, device_id: str, user: str) -> Household:
        """Who a connected robot serves now (read at each turn, so a change from the
        console or the CLI applies at its next turn). A robot served unpaired (no
        ``pairing_required``) is ``user``'s household of one; a household the file
        cannot express (edited by hand) answers as a guest rather than as anyone."""
        try:
            pairing = self.pairings.recent(device_id)
        except OSError:
            pairing = None
        if pairing is None:
            return Household.of_one(user)
        try:
            return pairing.household
        except InvalidInput as exc:
            log.error("device %s: its household is not valid (%s); it answers as a guest",
                      device_id, exc)
            return Household((user,), None)

    # -- routes --------------------------------------------------------------------
    def router(self) -> APIRouter:
        from omoide_device_stackchan.management import management_router

        public = APIRouter(tags=["stackchan"], route_class=PublicDeviceRoute)

        async def ota(request: Request) -> Response:
            raw = await self._device_request_body(request)
            if isinstance(raw, Response):
                return raw
            try:
                body = _json_object(raw)
            except RecursionError:
                return _too_deep("OTA", _source(request))
            # the pairing file is read (and maybe written) under a lock: keep it off the loop
            status, payload = await asyncio.to_thread(
                self.ota_response, dict(request.headers), dict(request.query_params),
                body, self._ws_url(request), _source(request), self._base_url(request))
            return _json_answer(status, payload)

        async def activate(request: Request) -> Response:
            raw = await self._device_request_body(request)
            if isinstance(raw, Response):
                return raw
            try:
                status, payload = await asyncio.to_thread(
                    self.activation_response, dict(request.headers),
                    dict(request.query_params), raw)
            except RecursionError:
                return _too_deep("activation", _source(request))
            return _json_answer(status, payload)

        async def firmware(request: Request, board: str, file_name: str) -> Response:
            if request.method == "OPTIONS":
                return preflight(request)
            limited = await self._rate_limited(_source(request))
            if limited is not None:
                return limited
            path = self.firmware.path_of(board, file_name) if self.firmware else None
            if path is None:
                return JSONResponse({"error": "no such firmware image"}, 404)
            return FileResponse(path, media_type="application/octet-stream")

        async def websocket(ws: WebSocket) -> None:
            await self.serve_websocket(ws)

        methods = ["GET", "POST", "OPTIONS"]
        public.add_api_route(OTA_PATH, ota, methods=methods, name="stackchan_ota")
        public.add_api_route(OTA_PATH.rstrip("/"), ota, methods=methods,
                             include_in_schema=False)
        public.add_api_route(ACTIVATE_PATH, activate, methods=["POST", "OPTIONS"],
                             name="stackchan_activate")
        public.add_api_route(ACTIVATE_PATH + "/", activate, methods=["POST", "OPTIONS"],
                             include_in_schema=False)
        public.add_api_route(FIRMWARE_PATH + "/{board}/{file_name}", firmware,
                             methods=["GET", "HEAD", "OPTIONS"], name="stackchan_firmware")
        public.add_api_websocket_route(WS_PATH, websocket, name="stackchan_ws")
        public.add_api_websocket_route(WS_PATH.rstrip("/"), websocket)
        router = APIRouter()
        router.include_router(public)
        router.include_router(management_router(self))
        return router

    async def _device_request_body(self, request: Request) -> bytes | Response:
        """The body of an OTA or activation request (at most ``MAX_OTA_BODY`` bytes), or
        the answer that ends it first: a CORS preflight, 429 past the source's rate, 413
        past the size."""
        if request.method == "OPTIONS":
            return preflight(request)
        limited = await self._rate_limited(_source(request))
        if limited is not None:
            return limited
        raw = await _read_capped(request, MAX_OTA_BODY)
        if raw is None:
            return JSONResponse({"error": "request body too large"}, 413)
        return raw

    async def _rate_limited(self, source: str) -> Response | None:
        wait = await self.limiter.refusal(source)
        if wait is None:
            return None
        log.warning("OTA: too many requests from %s; refused for %ds", source, wait)
        return JSONResponse({"error": "too many requests"}, 429,
                            headers={"Retry-After": str(wait)})

    def _note_pool_full(self, source: str, exc: PendingPoolFull) -> None:
        """Log a refused code at most once a minute (a flood is one line, not one each)."""
        self._pool_refusals += 1
        now = time.monotonic()
        if now - self._pool_full_logged_at < 60:
            return
        log.warning("OTA: no activation code for a robot from %s (%d refused since the "
                    "last note): %s", source or "?", self._pool_refusals, exc)
        self._pool_full_logged_at, self._pool_refusals = now, 0

    def _base_url(self, request: Request) -> str:
        if self.config.public_url:
            base = self.config.public_url
            for ws, http in (("wss://", "https://"), ("ws://", "http://")):
                if base.startswith(ws):
                    base = http + base[len(ws):]
            return base
        proto = request.headers.get("x-forwarded-proto", request.url.scheme)
        scheme = "https" if proto in ("https", "wss") else "http"
        host = request.headers.get("x-forwarded-host") or request.headers.get("host") \
            or f"{request.url.hostname}:{request.url.port}"
        return f"{scheme}://{host}"

    def _ws_url(self, request: Request) -> str:
        base = self._base_url(request)
        for http, ws in (("https://", "wss://"), ("http://", "ws://")):
            if base.startswith(http):
                base = ws + base[len(http):]
        return base + WS_PATH

    # -- OTA -----------------------------------------------------------------------
    def ota_response(self, headers: Mapping[str, str], query: Mapping[str, str],
                     body: dict[str, Any], ws_url: str, source: str = "",
                     base_url: str = "") -> tuple[int, dict[str, Any]]:
        """The OTA answer for one robot (status code, JSON)."""
        payload: dict[str, Any] = {
            "server_time": {"timestamp": int(time.time() * 1000),
                            "timezone_offset": timezone_offset_minutes(self.config.timezone)},
            "firmware": {"version": "", "url": ""},
        }
        try:
            req = OtaRequest.read(headers, query, body, source)
        except BadIdentifier as exc:
            payload["error"] = str(exc)
            return 400, payload
        payload["firmware"]["version"] = req.info.firmware_version
        admitted, why = self._admit(req)
        if not admitted:
            try:
                activation = self.pairings.request_activation(
                    req.device_id, req.client_id, source=source, info=req.info)
            except PendingPoolFull as exc:
                self._note_pool_full(source, exc)
                return 429, {"error": "too many robots are waiting to be paired; ask "
                                      "again later", "retry_after_s": exc.retry_after_s}
            payload["activation"] = self._activation_json(activation)
            token = self.issue_activation_token(activation)
            if token is not None:
                payload["websocket"] = {"url": ws_url, "token": token,
                                        "version": self.config.protocol_version}
            log.info("OTA: device %s from %s gets an activation code (%s)", req.device_id,
                     source or "?", why)
            return 200, payload
        self.pairings.mark_seen(req.device_id, req.info)
        payload["websocket"] = {"url": ws_url,
                                "token": self.issue_token(req.device_id, req.client_id),
                                "version": self.config.protocol_version}
        update = self._firmware_update(req.info)
        if update is not None:
            payload["firmware"] = {"version": update.version, "url":
                                   f"{base_url}{FIRMWARE_PATH}/{update.board}/{update.file_name}"}
            log.info("OTA: offering firmware %s to device %s (runs %s)", update.version,
                     req.device_id, req.info.firmware_version)
        return 200, payload

    def _admit(self, req: OtaRequest) -> tuple[bool, str]:
        """Whether this robot gets a token; if not, why (for the log)."""
        pairing = self.pairings.get(req.device_id)
        if pairing is None:
            if self.config.pairing_required:
                return False, "not paired"
            return True, ""
        if not pairing.active:
            return False, "revoked"
        if pairing.client_id is None:
            bound = self.pairings.bind_client(req.device_id, req.client_id)
            return (bound is not None), "another client id was bound meanwhile"
        if pairing.client_id != req.client_id:
            log.warning("OTA: device %s presents another client id than the paired one "
                        "(re-flashed, or someone else using its id); it must be re-paired",
                        req.device_id)
            return False, "client id differs from the paired one"
        serial = req.info.serial_number
        if serial and pairing.serial_number and serial != pairing.serial_number:
            log.warning("OTA: device %s presents another serial number than the paired one",
                        req.device_id)
            return False, "serial number differs from the paired one"
        return True, ""

    def _activation_json(self, activation: PendingActivation) -> dict[str, Any]:
        return {"code": activation.code, "challenge": activation.challenge,
                "message": f"omoide devices pair --code {activation.code} --user <name>",
                "timeout_ms": max(0, int((activation.expires_at - time.time()) * 1000))}

    def _firmware_update(self, info: DeviceInfo) -> Any:
        if self.firmware is None or not info.board or not info.firmware_version:
            return None
        return self.firmware.update_for(info.board, info.application, info.firmware_version)

    def activation_response(self, headers: Mapping[str, str], query: Mapping[str, str],
                            raw: bytes) -> tuple[int, dict[str, Any]]:
        """The answer to one activation poll (status code, JSON)."""
        try:
            device = check_device_id(headers.get("device-id") or query.get("device-id") or "")
            client = check_client_id(headers.get("client-id") or query.get("client-id") or "")
            request = parse_activation(raw)
            serial = request.serial_number or (
                check_serial_number(headers["serial-number"])
                if headers.get("serial-number") else None)
        except ValueError as exc:     # BadIdentifier included
            return 400, {"error": str(exc)}
        state = self.pairings.record_activation(
            device, client, challenge=request.challenge, serial_number=serial,
            hmac=request.hmac)
        status, message = _ACTIVATION_ANSWERS[state]
        if state is not ActivationState.PENDING:
            log.info("activation of device %s: %s", device, state.value)
        return status, {"message": message} if status < 400 else {"error": message}

    # -- WebSocket -----------------------------------------------------------------
    async def serve_websocket(self, ws: WebSocket) -> None:
        headers, query = ws.headers, ws.query_params
        peer = f"{ws.client.host}:{ws.client.port}" if ws.client else "?"
        try:
            device_id = check_device_id(headers.get("device-id") or query.get("device-id")
                                        or "")
            client_id = check_client_id(headers.get("client-id") or query.get("client-id")
                                        or "")
        except BadIdentifier as exc:
            await self._deny(ws, 401, str(exc), "", peer)
            return
        token = bearer_token(headers.get("authorization") or query.get("authorization"))
        try:
            version = framing.parse_version(headers.get("protocol-version")
                                            or query.get("protocol-version"))
        except framing.FramingError as exc:
            await self._deny(ws, 400, str(exc), device_id, peer)
            return
        decision = self.authorize(device_id, client_id, token)
        if not decision.ok:
            await self._deny(ws, 401, decision.reason, device_id, peer, decision.public)
            return
        assert decision.user is not None
        await ws.accept()
        identity = DeviceIdentity(device_id, client_id, decision.user, version, peer)
        conn = DeviceConnection(ws, self.host, self.config, identity,
                                still_allowed=lambda: self._still_allowed(device_id,
                                                                          client_id),
                                household=lambda: self.household_of(device_id,
                                                                    identity.user))
        previous = self.connections.get(device_id)
        self.connections[device_id] = conn
        if previous is not None:
            log.info("device %s connected again; closing its older connection", device_id)
            await previous.close(1000, "replaced by a newer connection")
        with contextlib.suppress(Exception):
            await asyncio.to_thread(self.pairings.mark_seen, device_id)
        queued = self.announcer.watch(conn)
        try:
            await conn.run()
        finally:
            await cancel_watch(queued)
            if self.connections.get(device_id) is conn:
                del self.connections[device_id]
            self.closed.append(conn)
            del self.closed[:-100]
            with contextlib.suppress(Exception):
                await asyncio.to_thread(self.pairings.mark_seen, device_id)

    async def _deny(self, ws: WebSocket, status: int, reason: str, device_id: str,
                    peer: str, public: str = "") -> None:
        """Refuse the handshake. A 401 tells the client only ``public`` (said only to
        the holder of a genuine token), else "unauthorized"."""
        log.warning("refused WebSocket from %s (device %s): %d %s", peer, device_id or "?",
                    status, reason)
        from starlette.responses import PlainTextResponse
        told = (public or "unauthorized") if status == 401 else reason
        try:
            await ws.send_denial_response(PlainTextResponse(told, status_code=status))
        except RuntimeError:
            # The server lacks the denial extension: refuse with a policy close instead.
            await ws.close(1008 if status == 401 else 1002, told[:120])

    async def close_all(self) -> None:
        await asyncio.gather(*(c.close(1001, "server stopping")
                               for c in list(self.connections.values())),
                             return_exceptions=True)
        await asyncio.to_thread(self.pairings.close)   # the database's connections


def _source(request: Request) -> str:
    return request.client.host if request.client else "?"


async def _read_capped(request: Request, limit: int) -> bytes | None:
    """The request body, or None once it passes ``limit`` bytes (never read whole)."""
    if request.method not in ("POST", "PUT", "PATCH"):
        return b""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _json_object(raw: bytes) -> dict[str, Any]:
    """The body's JSON object ({} when it is none); RecursionError when it nests too
    deeply to parse."""
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _json_answer(status: int, payload: dict[str, Any]) -> JSONResponse:
    """A device answer; a 429 says when to ask again (``Retry-After``)."""
    retry = payload.get("retry_after_s") if status == 429 else None
    return JSONResponse(payload, status_code=status,
                        headers={"Retry-After": str(retry)} if retry else None)


def _too_deep(what: str, source: str) -> JSONResponse:
    """A body nested too deeply to parse: 400 and one log line (no traceback)."""
    log.warning("%s: refused a request from %s whose JSON body nests too deeply", what,
                source)
    return JSONResponse({"error": "JSON body nests too deeply"}, 400)
