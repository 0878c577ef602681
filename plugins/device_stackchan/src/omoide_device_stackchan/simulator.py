"""A simulated StackChan: speaks the xiaozhi protocol from the robot's side.

It does what the stock firmware does: calls the OTA endpoint (getting a token, or an
activation code when it still has to be paired), opens the WebSocket with the same
headers, says hello, answers MCP as the robot would (head, LED and reminder tools),
streams a WAV as real-time paced 60 ms Opus frames, and collects what comes back:
``stt``, ``llm`` (face), ``tts`` sentences and the Opus reply, decoded to audio.

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
import json
import logging
import sys
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from omoide.audio import resample, write_wav
from omoide.types import AudioClip
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
                 board: str = "m5stack-stackchan") -> None:
        self.base_url = base_url.rstrip("/")
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
        self.close_code: int | None = None
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
                "application": {"name": "xiaozhi", "version": FIRMWARE_VERSION,
                                "idf_version": "v5.4"},
                "board": {"type": self.board}}

    async def provision(self) -> dict[str, Any]:
        """POST the OTA endpoint; keeps the token and URL. Raises
        :class:`ProvisioningRefused` when the server answers with an activation code."""
        import httpx
        headers = {"Device-Id": self.device_id, "Client-Id": self.client_id,
                   "Activation-Version": "1", "User-Agent": f"{self.board}/{FIRMWARE_VERSION}",
                   "Accept-Language": "ja-JP"}
        # Building a TLS context costs ~70 ms of CPU; plain-http servers need none (and
        # fifty robots provisioning at once would otherwise measure their own start-up).
        tls = self.base_url.startswith("https://")
        async with httpx.AsyncClient(timeout=10, verify=tls) as client:
            response = await client.post(f"{self.base_url}/xiaozhi/ota/", headers=headers,
                                         json=self.system_info())
        response.raise_for_status()
        data: dict[str, Any] = response.json()
        if "websocket" in data:
            self.token = data["websocket"].get("token")
            self.ws_url = data["websocket"].get("url")
            self.framing_version = int(data["websocket"].get("version", self.framing_version))
        elif "activation" in data:
            raise ProvisioningRefused(data["activation"])
        return data

    # -- connection ----------------------------------------------------------------
    def handshake_headers(self) -> dict[str, str]:
        headers = {"Protocol-Version": str(self.framing_version), "Device-Id": self.device_id,
                   "Client-Id": self.client_id}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    async def connect(self, *, hello: dict[str, Any] | None = None,
                      audio_params_rate: int = UPLINK_RATE) -> dict[str, Any]:
        """Open the WebSocket, say hello and wait (10 s, as the firmware) for the reply."""
        from websockets.asyncio.client import connect
        url = self.ws_url or self.base_url.replace("http", "ws", 1) + "/xiaozhi/v1/"
        self._ws = await connect(url, additional_headers=self.handshake_headers(),
                                 compression=None, proxy=None, max_size=2**20)
        self._events = asyncio.Queue()
        self._reader = asyncio.create_task(self._read())
        features: dict[str, Any] = {"mcp": True} if self.mcp_enabled else {}
        await self.send_json(hello or {
            "type": "hello", "version": 1, "features": features, "transport": "websocket",
            "audio_params": {"format": "opus", "sample_rate": audio_params_rate,
                             "channels": 1, "frame_duration": FRAME_MS}})
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

    async def say(self, clip: AudioClip | Sequence[bytes], *, mode: str = "auto",
                  timeout: float = 60.0,
                  max_trailing_silence_s: float = 5.0) -> Reply:
        """Speak ``clip`` and collect the reply until ``tts stop``.

        ``auto``: after the speech, keep streaming silence (as the robot's open mic does)
        until the server reacts. ``manual``: send ``listen stop`` after the speech.
        """
        await self.send_json({"type": "listen", "state": "start", "mode": mode})
        reply = Reply()
        reply.sent_audio_end = await self.stream_clip(clip)
        if mode == "manual":
            reply.sent_audio_end = time.perf_counter()
            await self.send_json({"type": "listen", "state": "stop"})
            return await self._collect(reply, timeout)
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
        """Send a typed utterance (``listen detect`` with text) and collect the reply."""
        reply = Reply()
        reply.sent_audio_end = time.perf_counter()
        await self.send_json({"type": "listen", "state": "detect", "text": text})
        return await self._collect(reply, timeout)

    async def abort(self) -> None:
        await self.send_json({"type": "abort", "reason": "wake_word_detected"})

    async def _collect(self, reply: Reply, timeout: float,
                       reacted: asyncio.Event | None = None) -> Reply:
        assert self._decoder is not None, "connect() first"
        reply.sample_rate = self._decoder.sample_rate
        deadline = time.monotonic() + timeout
        while True:
            kind, payload, at = await self._next_event(max(0.01, deadline - time.monotonic()))
            if reacted is not None and kind in ("stt", "tts", "error", "llm"):
                reacted.set()
            if kind == "stt":
                reply.transcript, reply.stt_at = payload.get("text"), at
                if not reply.transcript:
                    return reply        # the server heard nothing: no reply will come
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
            elif kind == "tts":
                state = payload.get("state")
                if state == "start":
                    reply.tts_start_at = at
                elif state == "sentence_start":
                    reply.sentences.append(str(payload.get("text") or ""))
                elif state == "stop":
                    reply.tts_stop_at = at
                    reply.complete = True
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
    from omoide.audio import read_wav
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
