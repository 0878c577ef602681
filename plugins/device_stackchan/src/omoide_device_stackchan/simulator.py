"""A simulated StackChan: speaks the xiaozhi protocol from the robot's side.

It does what the stock firmware does: calls the OTA endpoint (getting a token, or an
activation code and challenge when it still has to be paired, then polls activation
with its signature), opens the WebSocket with the same headers, says hello, answers
MCP as the robot would (head, LED and reminder tools), streams a WAV as real-time
paced 60 ms Opus frames, and collects what comes back: ``stt``, ``llm`` (face),
``tts`` sentences and the Opus reply, decoded to audio.

Where the clients of the protocol differ, :class:`ClientHabits` says which one it
plays: the firmware (:data:`FIRMWARE`, the default), the reference server's web page
(:data:`WEB_PAGE`: credentials in the query, a hello without audio parameters, wake
word then ``listen start`` once, never again after a reply, an empty binary frame when
recording stops, the microphone open while the reply plays) or py-xiaozhi
(:data:`PY_XIAOZHI`: no ``aec`` in hello, ``listen start`` before typed text, the
activation body wrapped in ``Payload``, the ``websocket`` of the OTA answer that
carried the activation code used as is once activation answers 200 (no second OTA
request), and "listening" again for a moment after every ``tts stop``, the goodbye's
included, expecting the socket to stay open: :meth:`SimulatedStackChan.linger`).

Library use::

    robot = SimulatedStackChan("http://127.0.0.1:8003", device_id="aa:bb:cc:00:00:01")
    await robot.provision()          # OTA; returns the activation code if unpaired
    async with robot.session():
        reply = await robot.say(read_wav(Path("hello.wav").read_bytes()))
    reply.save_wav("reply.wav")

Command line::

    python -m omoide_device_stackchan.simulator --url http://127.0.0.1:8003 \\
        --wav hello.wav --out reply.wav
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from omoide.api import AudioClip, resample, write_wav
from omoide_device_stackchan import framing
from omoide_device_stackchan.codec import OpusDecoder, OpusEncoder

log = logging.getLogger("omoide.device.simulator")

UPLINK_RATE = 16000
FRAME_MS = 60
FIRMWARE_VERSION = "2.2.4"


def stackchan_tools() -> list[dict[str, Any]]:
    """The MCP tools the official StackChan firmware offers (as the robot lists them)."""
    def num(desc: str, lo: int, hi: int, default: int | None = None) -> dict[str, Any]:
        d: dict[str, Any] = {"type": "integer", "description": desc, "minimum": lo,
                             "maximum": hi}
        if default is not None:
            d["default"] = default
        return d
    return [
        {"name": "self.robot.get_head_angles", "description": "Current head yaw and pitch.",
         "inputSchema": {"type": "object", "properties": {}}},
        {"name": "self.robot.set_head_angles",
         "description": "Turn the head. yaw: left/right, pitch: up/down; speed 100-1000.",
         "inputSchema": {"type": "object", "properties": {
             "yaw": num("yaw angle", -128, 128, -9999), "pitch": num("pitch", -90, 90, -9999),
             "speed": num("speed", 100, 1000, 150)}}},
        {"name": "self.robot.set_led_color", "description": "Set the LED colour (0-168 each).",
         "inputSchema": {"type": "object", "properties": {
             "red": num("red", 0, 168), "green": num("green", 0, 168),
             "blue": num("blue", 0, 168)}, "required": ["red", "green", "blue"]}},
        {"name": "self.robot.create_reminder", "description": "Remind the user later.",
         "inputSchema": {"type": "object", "properties": {
             "duration_seconds": num("seconds from now", 1, 86400),
             "message": {"type": "string"}, "repeat": {"type": "boolean"}},
             "required": ["duration_seconds", "message"]}},
        {"name": "self.robot.get_reminders", "description": "List reminders.",
         "inputSchema": {"type": "object", "properties": {}}},
        {"name": "self.robot.stop_reminder", "description": "Cancel a reminder.",
         "inputSchema": {"type": "object", "properties": {"id": {"type": "integer"}},
                         "required": ["id"]}},
    ]


@dataclass
class Reply:
    """Everything the robot received for one utterance."""

    transcript: str | None = None
    face: str | None = None
    emoji: str | None = None
    sentences: list[str] = field(default_factory=list)
    frames: list[bytes] = field(default_factory=list)
    frame_times: list[float] = field(default_factory=list)
    """``perf_counter`` at each frame's arrival."""
    frame_sentence: list[int] = field(default_factory=list)
    """Index of the sentence each frame belongs to."""
    samples: list[np.ndarray] = field(default_factory=list)
    sample_rate: int = 24000
    errors: list[str] = field(default_factory=list)
    sent_audio_end: float | None = None
    """``perf_counter`` when the last uplink speech frame (or the text) was sent."""
    stt_at: float | None = None
    llm_at: float | None = None
    tts_start_at: float | None = None
    first_audio_at: float | None = None
    tts_stop_at: float | None = None
    complete: bool = False

    @property
    def text(self) -> str:
        return "".join(self.sentences)

    def audio(self) -> AudioClip:
        data = np.concatenate(self.samples) if self.samples else np.zeros(0, np.float32)
        return AudioClip(data.astype(np.float32), self.sample_rate)

    def save_wav(self, path: str | Path) -> None:
        Path(path).write_bytes(write_wav(self.audio()))


@dataclass(frozen=True)
class ClientHabits:
    """How one xiaozhi client behaves where the clients differ (see the module doc)."""

    name: str
    relisten_after_tts: bool = True
    """Sends ``listen start`` again after each reply in auto mode (firmware, py-xiaozhi)."""
    end_frame: bool = False
    """Sends an empty binary frame when it stops recording (the web page)."""
    announces_aec: bool = False
    hello_audio_params: bool = True
    """The hello names transport and audio parameters (the web page's does not)."""
    credentials_in_query: bool = False
    """Device id, client id and token as query parameters (browsers can't set headers)."""
    listen_before_typing: bool = True
    """Opens a listening session before sending typed text (py-xiaozhi)."""
    wraps_activation: bool = False
    """Activation body as ``{"Payload": {...}}`` (py-xiaozhi) instead of the object."""
    ota_after_activation: bool = True
    """Asks OTA again once activation answers 200 (as the simulated firmware does);
    py-xiaozhi does not: it connects with the ``websocket`` of the answer that carried
    the activation code."""
    linger_after_tts_s: float = 0.0
    """How long after a ``tts stop`` the client stays "listening" and expects the socket
    open (py-xiaozhi goes back to listening at once, also after a goodbye)."""


FIRMWARE = ClientHabits("firmware")
WEB_PAGE = ClientHabits("web page", relisten_after_tts=False, end_frame=True,
                        hello_audio_params=False, credentials_in_query=True,
                        listen_before_typing=False)
PY_XIAOZHI = ClientHabits("py-xiaozhi", wraps_activation=True, ota_after_activation=False,
                          linger_after_tts_s=1.0)


class ProvisioningRefused(Exception):
    """The OTA endpoint did not hand out a WebSocket (``activation`` holds the code)."""

    def __init__(self, activation: dict[str, Any]) -> None:
        super().__init__(f"device not paired; activation code {activation.get('code')}")
        self.activation = activation


class SimulatedStackChan:
    """One simulated robot. Not thread-safe; one session at a time."""

    def __init__(self, base_url: str, *, device_id: str | None = None,
                 client_id: str | None = None, framing_version: int = 1,
                 mcp: bool = True, tools: list[dict[str, Any]] | None = None,
                 tools_page_size: int = 4, speed: float = 1.0,
                 board: str = "m5stack-stackchan", habits: ClientHabits = FIRMWARE,
                 serial_number: str | None = None, chip_key: bytes | None = None,
                 firmware_version: str = FIRMWARE_VERSION, application: str = "xiaozhi",
                 local_address: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.habits = habits
        self.serial_number = serial_number
        self.chip_key = chip_key
        """The key burned into the chip that signs activation challenges."""
        self.firmware_version = firmware_version
        self.application = application
        self.local_address = local_address
        """Source address for HTTP (e.g. ``127.0.0.2``, to play another machine)."""
        self.activation: dict[str, Any] | None = None
        self.ota_requests = 0
        """How many times this robot asked the OTA endpoint."""
        self.listening: str | None = None
        """The listening mode the client believes it is in (None: idle)."""
        self.device_id = device_id or "02:00:00:" + ":".join(
            f"{b:02x}" for b in uuid.uuid4().bytes[:3])
        self.client_id = client_id or str(uuid.uuid4())
        self.framing_version = framing_version
        self.mcp_enabled = mcp
        self.tools = stackchan_tools() if tools is None else tools
        self.tools_page_size = tools_page_size
        self.speed = speed
        self.board = board
        self.token: str | None = None
        self.ws_url: str | None = None
        self.session_id: str | None = None
        self.server_hello: dict[str, Any] | None = None
        self.tool_calls: list[dict[str, Any]] = []
        self.mcp_requests: list[str] = []
        self.answer_tool_calls = True
        """Set False to play a robot that never answers ``tools/call`` (timeouts)."""
        self.stray: list[dict[str, Any]] = []
        self.sent: list[dict[str, Any]] = []
        """Every JSON message sent, in order."""
        self.close_code: int | None = None
        self.dropped_while_listening = False
        """The server closed the socket while this client was still listening after a
        ``tts stop`` (see :meth:`linger`)."""
        self._ws: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._events: asyncio.Queue[tuple[str, Any, float]] = asyncio.Queue()
        self._decoder: OpusDecoder | None = None
        self._encoder = OpusEncoder(UPLINK_RATE, FRAME_MS)

    # -- provisioning --------------------------------------------------------------
    def system_info(self) -> dict[str, Any]:
        """The OTA request body, shaped like ``Board::GetSystemInfoJson()``."""
        return {"version": 2, "flash_size": 16777216, "mac_address": self.device_id,
                "uuid": self.client_id, "chip_model_name": "esp32s3",
                "application": {"name": self.application, "version": self.firmware_version,
                                "idf_version": "v5.4"},
                "board": {"type": self.board}}

    def http_headers(self) -> dict[str, str]:
        """The headers the firmware's ``Ota::SetupHttp`` sends with OTA and activation."""
        headers = {"Device-Id": self.device_id, "Client-Id": self.client_id,
                   "Activation-Version": "2" if self.serial_number else "1",
                   "User-Agent": f"{self.board}/{self.firmware_version}",
                   "Accept-Language": "ja-JP"}
        if self.serial_number:
            headers["Serial-Number"] = self.serial_number
        return headers

    def _http(self) -> Any:
        import httpx
        # Building a TLS context costs ~70 ms of CPU; plain-http servers need none (and
        # fifty robots provisioning at once would otherwise measure their own start-up).
        tls = self.base_url.startswith("https://")
        transport = httpx.AsyncHTTPTransport(local_address=self.local_address, verify=tls) \
            if self.local_address else None
        return httpx.AsyncClient(timeout=10, verify=tls, transport=transport)

    async def provision(self) -> dict[str, Any]:
        """POST the OTA endpoint; keeps the token and URL of its ``websocket``. Raises
        :class:`ProvisioningRefused` when the answer carries an activation code (kept in
        ``activation``, with its challenge; a ``websocket`` in the same answer is kept
        too, as the clients store it)."""
        self.ota_requests += 1
        async with self._http() as client:
            response = await client.post(f"{self.base_url}/xiaozhi/ota/",
                                         headers=self.http_headers(), json=self.system_info())
        response.raise_for_status()
        data: dict[str, Any] = response.json()
        if "websocket" in data:
            self.token = data["websocket"].get("token")
            self.ws_url = data["websocket"].get("url")
            self.framing_version = int(data["websocket"].get("version", self.framing_version))
        self.activation = data.get("activation")
        if self.activation is not None:
            raise ProvisioningRefused(self.activation)
        return data

    def activation_body(self, challenge: str | None = None) -> dict[str, Any]:
        """What ``Ota::GetActivationPayload`` posts: the signed challenge (``{}`` for a
        chip without a serial number), wrapped in ``Payload`` by py-xiaozhi."""
        challenge = challenge if challenge is not None else \
            str((self.activation or {}).get("challenge") or "")
        if not self.serial_number:
            return {}
        signature = hmac.new(self.chip_key or b"", challenge.encode(), hashlib.sha256)
        payload = {"algorithm": "hmac-sha256", "serial_number": self.serial_number,
                   "challenge": challenge,
                   "hmac": signature.hexdigest() if self.chip_key else ""}
        return {"Payload": payload} if self.habits.wraps_activation else payload

    async def activate(self, challenge: str | None = None) -> int:
        """One activation poll (``POST <ota>/activate``); the HTTP status (202: waiting
        for the code to be entered, 200: paired)."""
        async with self._http() as client:
            response = await client.post(
                f"{self.base_url}/xiaozhi/ota/activate",
                headers={**self.http_headers(), "Activation-Version": "2"},
                json=self.activation_body(challenge))
        return int(response.status_code)

    async def wait_until_activated(self, *, interval_s: float = 0.1,
                                   timeout_s: float = 30.0) -> int:
        """Poll activation while it answers 202 (the firmware polls every 3 s); returns
        the final status."""
        deadline = time.monotonic() + timeout_s
        while True:
            status = await self.activate()
            if status != 202 or time.monotonic() > deadline:
                return status
            await asyncio.sleep(interval_s)

    async def finish_activation(self, *, interval_s: float = 0.1,
                                timeout_s: float = 30.0) -> None:
        """What the client does after showing its code: poll activation until 200, then
        ask OTA again only if its habits say so (py-xiaozhi keeps the ``websocket`` it
        already has). Raises RuntimeError when activation ends otherwise."""
        status = await self.wait_until_activated(interval_s=interval_s, timeout_s=timeout_s)
        if status != 200:
            raise RuntimeError(f"activation of {self.device_id} ended with HTTP {status}")
        self.activation = None
        if self.habits.ota_after_activation or self.token is None:
            await self.provision()

    # -- connection ----------------------------------------------------------------
    def handshake_headers(self) -> dict[str, str]:
        headers = {"Protocol-Version": str(self.framing_version), "Device-Id": self.device_id,
                   "Client-Id": self.client_id}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def handshake_url(self) -> str:
        """The WebSocket URL; with the web page's habit the credentials go in its query
        (``device-id``, ``client-id``, ``authorization=Bearer ...``)."""
        from urllib.parse import urlencode
        url = self.ws_url or self.base_url.replace("http", "ws", 1) + "/xiaozhi/v1/"
        if not self.habits.credentials_in_query:
            return url
        query = {"device-id": self.device_id, "client-id": self.client_id}
        if self.token:
            query["authorization"] = f"Bearer {self.token}"
        return f"{url}?{urlencode(query)}"

    def hello(self, audio_params_rate: int = UPLINK_RATE) -> dict[str, Any]:
        """The client hello this client's habits produce."""
        features: dict[str, Any] = {"mcp": True} if self.mcp_enabled else {}
        if self.habits.announces_aec:
            features["aec"] = True
        if not self.habits.hello_audio_params:    # the web page's hello
            return {"type": "hello", "device_id": self.device_id, "device_name": self.board,
                    "device_mac": self.device_id, "token": self.token,
                    "features": {**features, "emoji": True}}
        return {"type": "hello", "version": 1, "features": features, "transport": "websocket",
                "audio_params": {"format": "opus", "sample_rate": audio_params_rate,
                                 "channels": 1, "frame_duration": FRAME_MS}}

    async def connect(self, *, hello: dict[str, Any] | None = None,
                      audio_params_rate: int = UPLINK_RATE) -> dict[str, Any]:
        """Open the WebSocket, say hello and wait (10 s, as the firmware) for the reply."""
        from websockets.asyncio.client import connect
        headers = {"Protocol-Version": str(self.framing_version)} \
            if self.habits.credentials_in_query else self.handshake_headers()
        self._ws = await connect(self.handshake_url(), additional_headers=headers,
                                 compression=None, proxy=None, max_size=2**20)
        self._events = asyncio.Queue()
        self._reader = asyncio.create_task(self._read())
        self.listening = None
        await self.send_json(hello or self.hello(audio_params_rate))
        _, payload, _ = await self._next_event(10.0, {"hello"})
        self.server_hello = payload
        self.session_id = payload.get("session_id")
        params = payload.get("audio_params") or {}
        if payload.get("transport") != "websocket":
            raise RuntimeError(f"server hello has transport {payload.get('transport')!r}")
        self._decoder = OpusDecoder(int(params.get("sample_rate", 24000)))
        return dict(payload)

    async def close(self) -> None:
        if self._ws is not None:
            with contextlib.suppress(Exception):
                await self._ws.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(BaseException):
                await self._reader
        self._ws = None

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[SimulatedStackChan]:
        """Provision if needed, connect, and close at the end."""
        if self.token is None:
            await self.provision()
        await self.connect()
        try:
            yield self
        finally:
            await self.close()

    async def send_json(self, payload: dict[str, Any]) -> None:
        if self.session_id and payload.get("type") != "hello":
            payload = {"session_id": self.session_id, **payload}
        self.sent.append(payload)
        await self._ws.send(json.dumps(payload, ensure_ascii=False))

    async def send_raw(self, data: bytes | str) -> None:
        """Send a message as is (for fuzzing)."""
        await self._ws.send(data)

    async def send_opus(self, packet: bytes) -> None:
        await self._ws.send(framing.encode(self.framing_version, packet,
                                           timestamp_ms=int(time.monotonic() * 1000)))

    # -- receiving -----------------------------------------------------------------
    async def _read(self) -> None:
        from websockets.exceptions import ConnectionClosed
        try:
            async for message in self._ws:
                now = time.perf_counter()
                if isinstance(message, bytes):
                    frame = framing.decode(self.framing_version, message)
                    if frame.type == framing.TYPE_JSON:
                        message = frame.payload.decode()
                    else:
                        await self._events.put(("audio", frame.payload, now))
                        continue
                payload = json.loads(message)
                if payload.get("type") == "mcp":
                    await self._answer_mcp(payload.get("payload") or {})
                    continue
                await self._events.put((str(payload.get("type")), payload, now))
        except ConnectionClosed as exc:
            self.close_code = exc.rcvd.code if exc.rcvd else 1006
        finally:
            if self.close_code is None and self._ws is not None:
                self.close_code = self._ws.close_code
            await self._events.put(("closed", {"code": self.close_code}, time.perf_counter()))

    async def _next_event(self, timeout: float, kinds: set[str] | None = None
                          ) -> tuple[str, Any, float]:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no {kinds or 'message'} within {timeout:g}s")
            async with asyncio.timeout(remaining):
                kind, payload, at = await self._events.get()
            if kind == "closed":
                raise ConnectionError(f"server closed the connection ({payload['code']})")
            if kinds is None or kind in kinds:
                return kind, payload, at
            self.stray.append({"kind": kind, "payload": payload})

    async def wait_closed(self, timeout: float = 5.0) -> int | None:
        """Wait until the server closes the connection; returns the close code."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                async with asyncio.timeout(deadline - time.monotonic()):
                    kind, payload, _ = await self._events.get()
            except TimeoutError:
                break
            if kind == "closed":
                code: int | None = payload["code"]
                return code
            self.stray.append({"kind": kind, "payload": payload})
        raise TimeoutError("connection still open")

    async def next_message(self, timeout: float = 5.0) -> tuple[str, Any]:
        """The next message (type, payload); audio comes as ``("audio", bytes)``."""
        kind, payload, _ = await self._next_event(timeout)
        return kind, payload

    # -- MCP server side -------------------------------------------------------------
    async def _answer_mcp(self, request: dict[str, Any]) -> None:
        method = request.get("method")
        self.mcp_requests.append(str(method))
        msg_id = request.get("id")
        if msg_id is None:
            return  # notification
        result: dict[str, Any] | None = None
        error: dict[str, Any] | None = None
        params = request.get("params") or {}
        if method == "initialize":
            result = {"protocolVersion": "2024-11-05", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "stackchan-simulator",
                                     "version": FIRMWARE_VERSION}}
        elif method == "tools/list":
            start = int(params.get("cursor") or 0)
            page = self.tools[start:start + self.tools_page_size]
            result = {"tools": page}
            if start + self.tools_page_size < len(self.tools):
                result["nextCursor"] = str(start + self.tools_page_size)
        elif method == "tools/call":
            name = params.get("name")
            self.tool_calls.append({"name": name, "arguments": params.get("arguments")})
            if not self.answer_tool_calls:
                return
            if any(t["name"] == name for t in self.tools):
                result = {"content": [{"type": "text", "text": "true"}], "isError": False}
            else:
                error = {"code": -32601, "message": f"Unknown tool: {name}"}
        else:
            error = {"code": -32601, "message": f"Method not implemented: {method}"}
        response: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id}
        if error is not None:
            response["error"] = error
        else:
            response["result"] = result
        await self.send_json({"type": "mcp", "payload": response})

    # -- talking -------------------------------------------------------------------
    def encode(self, clip: AudioClip) -> list[bytes]:
        """``clip`` as the 60 ms Opus packets the robot would send (reusable)."""
        samples = resample(clip, UPLINK_RATE).samples
        n = self._encoder.frame_samples
        return [self._encoder.encode_frame(samples[lo:lo + n])
                for lo in range(0, len(samples), n)]

    async def stream_clip(self, clip: AudioClip | Sequence[bytes], *,
                          stop: asyncio.Event | None = None) -> float:
        """Send ``clip`` (audio, or packets from :meth:`encode`) as 60 ms Opus frames
        paced at ``speed`` x real time; returns the ``perf_counter`` after the last."""
        packets = self.encode(clip) if isinstance(clip, AudioClip) else clip
        period = FRAME_MS / 1000 / self.speed
        start = time.perf_counter()
        for i, packet in enumerate(packets):
            if stop is not None and stop.is_set():
                break
            await self.send_opus(packet)
            wait = start + (i + 1) * period - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
        return time.perf_counter()

    async def start_listening(self, mode: str = "auto") -> None:
        await self.send_json({"type": "listen", "state": "start", "mode": mode})
        self.listening = mode

    async def linger(self, seconds: float | None = None) -> bool:
        """Stay "listening" after a reply as py-xiaozhi does: send a silent microphone
        frame every 60 ms (real time, whatever ``speed``) for ``seconds`` (default: the
        habits' ``linger_after_tts_s``). True when the socket stayed open throughout;
        False, with ``dropped_while_listening`` set, when the server closed it."""
        from websockets.exceptions import ConnectionClosed
        seconds = self.habits.linger_after_tts_s if seconds is None else seconds
        silent = self._encoder.encode_frame(np.zeros(self._encoder.frame_samples, np.float32))
        deadline = time.monotonic() + seconds
        try:
            while time.monotonic() < deadline:
                if self._reader is None or self._reader.done():
                    raise ConnectionError("closed")
                await self.send_opus(silent)
                await asyncio.sleep(FRAME_MS / 1000)
        except (ConnectionClosed, ConnectionError):
            self.dropped_while_listening = True
            return False
        return True

    async def send_end_frame(self) -> None:
        """The web page's "recording stopped": an empty binary frame."""
        await self._ws.send(b"")

    async def say(self, clip: AudioClip | Sequence[bytes], *, mode: str = "auto",
                  timeout: float = 60.0,
                  max_trailing_silence_s: float = 5.0) -> Reply:
        """Speak ``clip`` and collect the reply until ``tts stop``.

        Sends ``listen start`` unless the client listens in ``mode`` already. ``auto``:
        after the speech, send the end frame if the client does, then keep streaming
        silence (as the robot's open mic does) until the server reacts. ``manual``:
        send ``listen stop`` after the speech.
        """
        if self.listening != mode:
            await self.start_listening(mode)
        reply = Reply()
        reply.sent_audio_end = await self.stream_clip(clip)
        if mode == "manual":
            reply.sent_audio_end = time.perf_counter()
            await self.send_json({"type": "listen", "state": "stop"})
            self.listening = None
            return await self._collect(reply, timeout)
        if self.habits.end_frame:
            await self.send_end_frame()
        reacted = asyncio.Event()
        silence = AudioClip(np.zeros(int(UPLINK_RATE * max_trailing_silence_s), np.float32),
                            UPLINK_RATE)
        pump = asyncio.create_task(self.stream_clip(silence, stop=reacted))
        try:
            return await self._collect(reply, timeout, reacted)
        finally:
            reacted.set()
            with contextlib.suppress(BaseException):
                await pump

    async def type_text(self, text: str, *, timeout: float = 60.0) -> Reply:
        """Send a typed utterance (``listen detect`` with text) and collect the reply.
        Clients that do (py-xiaozhi) open a listening session first: a ``listen detect``
        while nobody listens is how robots report their wake word."""
        if self.habits.listen_before_typing and self.listening is None:
            await self.start_listening("auto")
        reply = Reply()
        reply.sent_audio_end = time.perf_counter()
        await self.send_json({"type": "listen", "state": "detect", "text": text})
        return await self._collect(reply, timeout)

    async def wake(self, wake_word: str = "嘿，你好呀", *, timeout: float = 30.0) -> Reply:
        """Report the wake word as robots and the web page do (``listen detect`` with
        the word, then ``listen start``) and collect the greeting."""
        reply = Reply()
        reply.sent_audio_end = time.perf_counter()
        await self.send_json({"type": "listen", "state": "detect", "text": wake_word})
        await self.start_listening("auto")
        return await self._collect(reply, timeout)

    async def collect(self, *, timeout: float = 60.0) -> Reply:
        """Collect the next reply (until ``tts stop``)."""
        return await self._collect(Reply(), timeout)

    async def listen_to_reply(self, *, echo_gain: float, talk_over: AudioClip | None = None,
                              after_s: float = 0.6, timeout: float = 60.0) -> Reply:
        """Collect a reply with the microphone open, as a client without echo
        cancellation does: every reply frame comes back as echo (x ``echo_gain``), and
        ``talk_over`` (the user talking over the robot) is mixed in once ``after_s`` of
        the reply has arrived. What is left of ``talk_over`` when the reply stops is sent
        on, paced, before returning."""
        assert self._decoder is not None, "connect() first"
        talk = resample(talk_over, UPLINK_RATE).samples if talk_over is not None \
            else np.zeros(0, np.float32)
        n = UPLINK_RATE * FRAME_MS // 1000
        state = {"frames": 0, "talk": 0}
        start_after = int(after_s * 1000 / FRAME_MS)

        def talk_chunk() -> np.ndarray:
            lo = state["talk"]
            state["talk"] = min(len(talk), lo + n)
            chunk = talk[lo:lo + n]
            return np.pad(chunk, (0, n - len(chunk)))

        async def echo(samples: np.ndarray) -> None:
            mic = resample(AudioClip(samples, self._decoder.sample_rate),  # type: ignore[union-attr]
                           UPLINK_RATE).samples[:n] * echo_gain
            mic = np.pad(mic, (0, n - len(mic)))
            if state["frames"] >= start_after:
                mic = mic + talk_chunk()
            state["frames"] += 1
            await self.send_opus(self._encoder.encode_frame(mic.astype(np.float32)))

        reply = await self._collect(Reply(), timeout, on_audio=echo)
        rest = talk[state["talk"]:] if state["frames"] >= start_after else talk
        if len(rest):
            await self.stream_clip(AudioClip(rest, UPLINK_RATE))
        return reply

    async def abort(self) -> None:
        await self.send_json({"type": "abort", "reason": "wake_word_detected"})

    async def _relisten(self) -> None:
        """``listen start`` after a ``tts stop``; a socket the server closed right after
        that ``tts stop`` leaves the client listening on nothing (noted, not raised)."""
        from websockets.exceptions import ConnectionClosed
        try:
            await self.start_listening("auto")
        except ConnectionClosed:
            self.dropped_while_listening = True

    async def _collect(self, reply: Reply, timeout: float,
                       reacted: asyncio.Event | None = None,
                       on_audio: Callable[[np.ndarray], Awaitable[None]] | None = None
                       ) -> Reply:
        assert self._decoder is not None, "connect() first"
        reply.sample_rate = self._decoder.sample_rate
        deadline = time.monotonic() + timeout
        while True:
            kind, payload, at = await self._next_event(max(0.01, deadline - time.monotonic()))
            if reacted is not None and kind in ("stt", "tts", "error", "llm"):
                reacted.set()
            if kind == "stt":
                reply.transcript, reply.stt_at = payload.get("text"), at
            elif kind == "llm":
                reply.face, reply.emoji, reply.llm_at = payload.get("emotion"), \
                    payload.get("text"), at
            elif kind == "audio":
                if reply.first_audio_at is None:
                    reply.first_audio_at = at
                reply.frames.append(payload)
                reply.frame_times.append(at)
                reply.frame_sentence.append(len(reply.sentences) - 1)
                reply.samples.append(self._decoder.decode(payload))
                if on_audio is not None:
                    await on_audio(reply.samples[-1])
            elif kind == "tts":
                state = payload.get("state")
                if state == "start":
                    reply.tts_start_at = at
                elif state == "sentence_start":
                    reply.sentences.append(str(payload.get("text") or ""))
                elif state == "stop":
                    reply.tts_stop_at = at
                    reply.complete = True
                    if self.listening == "manual":
                        self.listening = None      # the firmware goes idle
                    elif self.listening == "auto" and self.habits.relisten_after_tts:
                        # the firmware re-enters Listening and says so; in realtime
                        # mode its microphone never stopped, so it sends nothing
                        await self._relisten()
                    return reply
            elif kind == "error":
                reply.errors.append(str(payload.get("message")))
                if str(payload.get("message", "")).startswith("turn failed"):
                    return reply
            else:
                self.stray.append({"kind": kind, "payload": payload})


# -- command line ---------------------------------------------------------------------
def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m omoide_device_stackchan.simulator",
                                description="Talk to an omoide server as a StackChan would.")
    p.add_argument("--url", default="http://127.0.0.1:8003", help="server base URL")
    p.add_argument("--device-id", help="MAC-style device id (default: random)")
    p.add_argument("--client-id", help="client UUID (default: random)")
    p.add_argument("--wav", action="append", default=[], help="utterance WAV (repeatable)")
    p.add_argument("--text", action="append", default=[], help="typed utterance (repeatable)")
    p.add_argument("--out", default="reply", help="reply WAV path prefix")
    p.add_argument("--mode", choices=["auto", "manual"], default="auto")
    p.add_argument("--speed", type=float, default=1.0, help="uplink pacing factor (2 = 2x)")
    p.add_argument("--protocol-version", type=int, choices=[1, 2, 3], default=None)
    return p.parse_args(argv)


async def _main(args: argparse.Namespace) -> int:
    from omoide.api import read_wav
    robot = SimulatedStackChan(args.url, device_id=args.device_id, client_id=args.client_id,
                               speed=args.speed)
    try:
        await robot.provision()
    except ProvisioningRefused as exc:
        print(f"not paired yet: {exc.activation.get('message')}")
        return 2
    if args.protocol_version:
        robot.framing_version = args.protocol_version
    await robot.connect()
    print(f"connected as {robot.device_id}, session {robot.session_id}")
    try:
        utterances: list[tuple[str, Any]] = [("wav", w) for w in args.wav] + \
            [("text", t) for t in args.text]
        for i, (kind, item) in enumerate(utterances):
            if kind == "wav":
                reply = await robot.say(read_wav(Path(item).read_bytes()), mode=args.mode)
            else:
                reply = await robot.type_text(item)
            out = f"{args.out}-{i + 1}.wav"
            reply.save_wav(out)
            print(f"you: {reply.transcript}\nrobot [{reply.face}]: {reply.text}\n"
                  f"  ({len(reply.frames)} frames, {reply.audio().duration_s:.1f}s -> {out})")
    finally:
        await robot.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(_main(_parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
