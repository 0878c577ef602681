"""Test helpers for the StackChan device: a scripted host double and a live server.

``ScriptedHost`` is a test double of the server's DeviceHost (it extends
``omoide.testing.doubles.DeviceHostDouble``): instead of running ASR/chat/TTS it plays
a fixed script into the turn sink as the events the device reads (``Heard``,
``EmotionChosen``, ``Sentence``), so the tests see exactly the protocol the plugin
produces. The server is real: uvicorn on 127.0.0.1 with the plugin's router.
"""

from __future__ import annotations

import asyncio
import math
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from omoide.api import AudioClip, Emotion, EmotionChosen, Heard, Sentence, ToolCall, TurnResult
from omoide.testing.doubles import DeviceHostDouble
from omoide_device_stackchan.device import StackChan, StackChanConfig


def tone(seconds: float, rate: int = 24000, freq: float = 440.0, amp: float = 0.3) -> AudioClip:
    t = np.arange(int(seconds * rate), dtype=np.float32) / rate
    return AudioClip((amp * np.sin(2 * math.pi * freq * t)).astype(np.float32), rate)


def speech_like(seconds: float = 1.0, silence_after: float = 0.0) -> AudioClip:
    """A 16 kHz 'utterance': a loud harmonic burst, then optional silence."""
    rate = 16000
    t = np.arange(int(seconds * rate), dtype=np.float32) / rate
    burst = 0.25 * (np.sin(2 * math.pi * 180 * t) + 0.5 * np.sin(2 * math.pi * 360 * t))
    tail = np.zeros(int(silence_after * rate), dtype=np.float32)
    return AudioClip(np.concatenate([burst.astype(np.float32), tail]), rate)


@dataclass
class Script:
    transcript: str = "こんにちは"
    emotion: Emotion = Emotion.HAPPY
    sentences: list[str] = field(default_factory=lambda: ["はい、元気です。", "あなたは？"])
    seconds_per_sentence: float = 0.12
    delay_s: float = 0.0
    tool_call: ToolCall | None = None
    fail_with: str | None = None
    line_seconds: float = 0.18
    """Length of the audio :meth:`ScriptedHost.synthesize` gives a fixed line."""


class ScriptedHost(DeviceHostDouble):
    """A test double of the server: plays a fixed script into the sink's events."""

    def __init__(self, data_dir: Path, vad: Any = None) -> None:
        super().__init__(data_dir, vad)
        self.script = Script()
        self.tool_results: list[str] = []
        self.cancelled = 0
        self.completed = 0

    async def synthesize(self, text: str) -> AudioClip | None:
        """A fixed line (greeting, goodbye) as a tone of ``script.line_seconds``."""
        self.spoken.append(text)
        return tone(self.script.line_seconds)

    async def run_turn(self, request: Any, sink: Any) -> TurnResult:
        self.requests.append(request)
        s = self.script
        try:
            await asyncio.sleep(s.delay_s)
            if s.fail_with:
                raise RuntimeError(s.fail_with)
            transcript = request.text or s.transcript
            await sink.on_event(Heard(transcript=transcript, user=request.user))
            if not transcript:     # like the assistant: nothing heard, nothing said
                self.completed += 1
                return TurnResult(str(uuid.uuid4()), request.user, "", "", Emotion.NEUTRAL,
                                  [], [], [], {})
            if s.tool_call is not None and request.tool_handler is not None:
                self.tool_results.append(await request.tool_handler(s.tool_call))
            await sink.on_event(EmotionChosen(emotion=s.emotion, user=request.user))
            audio: list[AudioClip | None] = []
            for text in s.sentences:
                clip = tone(s.seconds_per_sentence)
                audio.append(clip)
                await sink.on_event(Sentence(text=text, emotion=s.emotion, audio=clip,
                                             user=request.user))
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        self.completed += 1
        return TurnResult(str(uuid.uuid4()), request.user, transcript, "".join(s.sentences),
                          s.emotion, [], list(s.sentences), audio, {})


class LiveServer:
    """uvicorn serving a FastAPI app with one StackChan router, on a free port."""

    def __init__(self, device: StackChan, host: ScriptedHost) -> None:
        self.device = device
        self.host = host
        self.server: Any = None
        self.task: asyncio.Task[None] | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def service(self) -> Any:
        return self.device.service

    async def start(self) -> None:
        import uvicorn
        from fastapi import FastAPI
        app = FastAPI()
        app.include_router(self.device.router(self.host))
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                lifespan="off")
        self.server = uvicorn.Server(config)
        self.task = asyncio.create_task(self.server.serve())
        while not self.server.started:
            await asyncio.sleep(0.01)
        self.port = self.server.servers[0].sockets[0].getsockname()[1]

    async def stop(self) -> None:
        await self.device.stop()
        self.server.should_exit = True
        if self.task is not None:
            await asyncio.wait_for(self.task, 10)


async def start_server(tmp_path: Path, vad: Any = None, **options: Any) -> LiveServer:
    config = StackChanConfig.model_validate({"hello_timeout_s": 1.0, **options})
    device = StackChan(config)
    await device.start()
    server = LiveServer(device, ScriptedHost(tmp_path / "device", vad))
    await server.start()
    return server
