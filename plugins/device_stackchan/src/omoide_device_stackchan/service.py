"""HTTP side of the StackChan device: the OTA endpoint and the WebSocket handshake.

- ``GET|POST /xiaozhi/ota/``: server time, firmware (the device's own version, so it
  never upgrades), and either ``websocket{url, token, version}`` for a paired device
  or ``activation{message, code}`` for one that still has to be paired.
- ``/xiaozhi/v1/`` (WebSocket): checks ``Device-Id`` / ``Client-Id`` /
  ``Authorization: Bearer`` (headers, or the query parameters ``device-id``,
  ``client-id``, ``authorization`` browser clients use) and the pairing, refuses
  with HTTP 401 otherwise, then hands the socket to a :class:`DeviceConnection`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.websockets import WebSocket

from omoide_device_stackchan import framing
from omoide_device_stackchan.announce import StackChanAnnouncer, cancel_watch
from omoide_device_stackchan.connection import DeviceConnection, DeviceIdentity
from omoide_device_stackchan.pairing import PairingStore
from omoide_device_stackchan.tokens import (
    TokenSigner,
    bearer_token,
    load_or_create_secret,
    normalize_device_id,
)

if TYPE_CHECKING:
    from omoide.components.device import DeviceHost
    from omoide_device_stackchan.device import StackChanConfig

log = logging.getLogger("omoide.device.stackchan")

OTA_PATH = "/xiaozhi/ota/"
WS_PATH = "/xiaozhi/v1/"
MAX_OTA_BODY = 64 * 1024
SECRET_FILE = "token_secret"


def pairing_store_for(data_dir: Path) -> PairingStore:
    """The pairing store the plugin keeps in its data folder (shared with the CLI)."""
    return PairingStore(Path(data_dir))


def timezone_offset_minutes(zone: str, at: datetime | None = None) -> int:
    offset = (at or datetime.now(ZoneInfo(zone))).astimezone(ZoneInfo(zone)).utcoffset()
    return int(offset.total_seconds() // 60) if offset else 0


class AuthDecision:
    """Outcome of the handshake check: the user to serve, or why the device is refused."""

    def __init__(self, user: str | None, reason: str = "") -> None:
        self.user = user
        self.reason = reason

    @property
    def ok(self) -> bool:
        return self.user is not None


class StackChanService:
    """State shared by every connection of one ``stackchan`` device component."""

    def __init__(self, config: StackChanConfig, host: DeviceHost) -> None:
        self.config = config
        self.host = host
        self.data_dir = Path(host.data_dir)
        self.pairings = pairing_store_for(self.data_dir)
        if config.token_secret is not None:
            secret = config.token_secret.get_secret_value().encode()
        else:
            secret = load_or_create_secret(self.data_dir / SECRET_FILE)
        self.signer = TokenSigner(secret, config.token_ttl_days * 86400)
        self.connections: dict[str, DeviceConnection] = {}
        self.closed: list[DeviceConnection] = []
        self.announcer = StackChanAnnouncer(self)

    # -- auth ----------------------------------------------------------------------
    def issue_token(self, device_id: str, client_id: str) -> str:
        return self.signer.issue(client_id, device_id)

    def authorize(self, device_id: str, client_id: str, token: str | None) -> AuthDecision:
        """Decide whether this device may connect, and as which user."""
        if not device_id:
            return AuthDecision(None, "no Device-Id")
        check = self.signer.check(token, client_id, device_id)
        if not check.ok:
            return AuthDecision(None, check.reason)
        pairing = self.pairings.get(device_id)
        if pairing is not None and not pairing.active:
            return AuthDecision(None, "device was revoked")
        if pairing is not None:
            if check.issued_at < int(pairing.paired_at):
                return AuthDecision(None, "token predates the device's pairing")
            return AuthDecision(pairing.user)
        if self.config.pairing_required:
            return AuthDecision(None, "device is not paired")
        return AuthDecision(self.config.open_user or f"device-{device_id.replace(':', '')}")

    def _still_allowed(self, device_id: str) -> bool:
        """False once the device's pairing was revoked (checked while it is connected)."""
        try:
            pairing = self.pairings.get(device_id)
        except OSError:
            return True
        return (pairing is None and not self.config.pairing_required) or (
            pairing is not None and pairing.active)

    # -- routes --------------------------------------------------------------------
    def router(self) -> APIRouter:
        router = APIRouter(tags=["stackchan"])

        async def ota(request: Request) -> Response:
            if request.method == "OPTIONS":
                return Response(status_code=204, headers={
                    "Access-Control-Allow-Origin": "*",
                    "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
                    "Access-Control-Allow-Headers": "*"})
            body = await self._ota_body(request)
            # the pairing file is read (and maybe written) under a lock: keep it off the loop
            status, payload = await asyncio.to_thread(
                self.ota_response, dict(request.headers), dict(request.query_params), body,
                self._ws_url(request))
            return JSONResponse(payload, status_code=status)

        async def websocket(ws: WebSocket) -> None:
            await self.serve_websocket(ws)

        router.add_api_route(OTA_PATH, ota, methods=["GET", "POST", "OPTIONS"],
                             name="stackchan_ota")
        router.add_api_route(OTA_PATH.rstrip("/"), ota, methods=["GET", "POST", "OPTIONS"],
                             include_in_schema=False)
        router.add_api_websocket_route(WS_PATH, websocket, name="stackchan_ws")
        router.add_api_websocket_route(WS_PATH.rstrip("/"), websocket)
        return router

    async def _ota_body(self, request: Request) -> dict[str, Any]:
        if request.method != "POST":
            return {}
        raw = await request.body()
        if not raw or len(raw) > MAX_OTA_BODY:
            return {}
        import json
        try:
            data = json.loads(raw)
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    def _ws_url(self, request: Request) -> str:
        if self.config.public_url:
            base = self.config.public_url
            for http, ws in (("https://", "wss://"), ("http://", "ws://")):
                if base.startswith(http):
                    base = ws + base[len(http):]
            return base + WS_PATH
        proto = request.headers.get("x-forwarded-proto", request.url.scheme)
        scheme = "wss" if proto in ("https", "wss") else "ws"
        host = request.headers.get("x-forwarded-host") or request.headers.get("host") \
            or f"{request.url.hostname}:{request.url.port}"
        return f"{scheme}://{host}{WS_PATH}"

    def ota_response(self, headers: Mapping[str, str], query: Mapping[str, str],
                     body: dict[str, Any], ws_url: str) -> tuple[int, dict[str, Any]]:
        """The OTA answer for one device (status code, JSON)."""
        device_id = normalize_device_id(headers.get("device-id") or query.get("device-id")
                                        or str(body.get("mac_address") or ""))
        client_id = (headers.get("client-id") or query.get("client-id")
                     or str(body.get("uuid") or ""))
        raw_app = body.get("application")
        app: dict[str, Any] = raw_app if isinstance(raw_app, dict) else {}
        version = str(app.get("version") or "")
        if not version:
            agent = headers.get("user-agent", "")
            version = agent.rpartition("/")[2] if "/" in agent else "0.0.0"
        payload: dict[str, Any] = {
            "server_time": {"timestamp": int(time.time() * 1000),
                            "timezone_offset": timezone_offset_minutes(self.config.timezone)},
            "firmware": {"version": version, "url": ""},
        }
        if not device_id:
            payload["error"] = "Device-Id header is required"
            return 400, payload
        pairing = self.pairings.get(device_id)
        # Unpaired (when pairing is required) or revoked: show a code to pair with.
        if (pairing is None and self.config.pairing_required) or (
                pairing is not None and not pairing.active):
            activation = self.pairings.request_activation(device_id, client_id or None)
            payload["activation"] = {
                "code": activation.code,
                "message": f"omoide devices pair --code {activation.code} --user <name>",
            }
            log.info("OTA: device %s is not paired; activation code %s", device_id,
                     activation.code)
            return 200, payload
        payload["websocket"] = {"url": ws_url, "token": self.issue_token(device_id, client_id),
                                "version": self.config.protocol_version}
        return 200, payload

    # -- WebSocket -----------------------------------------------------------------
    async def serve_websocket(self, ws: WebSocket) -> None:
        headers, query = ws.headers, ws.query_params
        device_id = normalize_device_id(headers.get("device-id") or query.get("device-id") or "")
        client_id = headers.get("client-id") or query.get("client-id") or ""
        token = bearer_token(headers.get("authorization") or query.get("authorization"))
        peer = f"{ws.client.host}:{ws.client.port}" if ws.client else "?"
        try:
            version = framing.parse_version(headers.get("protocol-version")
                                            or query.get("protocol-version"))
        except framing.FramingError as exc:
            await self._deny(ws, 400, str(exc), device_id, peer)
            return
        decision = self.authorize(device_id, client_id, token)
        if not decision.ok:
            await self._deny(ws, 401, decision.reason, device_id, peer)
            return
        assert decision.user is not None
        await ws.accept()
        identity = DeviceIdentity(device_id, client_id, decision.user, version, peer)
        conn = DeviceConnection(ws, self.host, self.config, identity,
                                still_allowed=lambda: self._still_allowed(device_id))
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

    async def _deny(self, ws: WebSocket, status: int, reason: str, device_id: str,
                    peer: str) -> None:
        log.warning("refused WebSocket from %s (device %s): %d %s", peer, device_id or "?",
                    status, reason)
        from starlette.responses import PlainTextResponse
        try:
            await ws.send_denial_response(PlainTextResponse(
                "unauthorized" if status == 401 else reason, status_code=status))
        except RuntimeError:
            # The server lacks the denial extension: refuse with a policy close instead.
            await ws.close(1008 if status == 401 else 1002, reason[:120])

    async def close_all(self) -> None:
        await asyncio.gather(*(c.close(1001, "server stopping")
                               for c in list(self.connections.values())),
                             return_exceptions=True)
