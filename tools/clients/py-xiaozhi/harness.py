"""Drive the unmodified py-xiaozhi client (its source tree: ``--client`` or $PYXIAOZHI_SRC)
against omoide. Run with a Python that has the client's dependencies, not omoide's venv.

What runs unmodified (imported from the client's own source, nothing patched):
  main.py                       argument parsing, config + logging set-up, handle_activation()
  src/activation/*              ActivationService: efuse identity, OTA request, activation poll
  src/ui/cli/activation.py      CliActivation: prints the code, runs the poll
  src/bootstrap/container.py    ServiceContainer (event bus, state, tasks, protocol manager,
                                ConversationSession) -- built after activation in the same
                                process, as main.start_app() does
  src/core/*                    ProtocolManager, StateManager, TaskManager, EventBus
  src/protocols/websocket_protocol.py, protocol.py   the WebSocket protocol
  src/plugins/mcp.py, src/mcp/* McpPlugin + McpServer: answers the server's MCP initialize
                                and tools/list (tools whose devices are missing fail to
                                register and are left out, as on any machine without them)
  src/plugins/audio.py          AudioPlugin: the microphone gating (sends only while the
                                state says capture) and the playback hand-off
  src/audio_codecs/opus_codec.py OpusCodec: encodes the microphone's 20 ms frames, decodes
                                replies

What the harness replaces (no sound device here):
  - src/audio_codecs/audio_codec.AudioCodec (sounddevice capture/playback): a FakeCodec
    whose "microphone" thread feeds 20 ms frames of a WAV file (then silence, like a quiet
    room) through the client's OpusCodec into AudioPlugin._on_encoded_audio, exactly the
    callback the real codec calls from its audio thread; its "speaker" records when reply
    audio arrives and decodes it with OpusCodec.
  - The plugin set of ServiceContainer.run(): only McpPlugin (with the client's own
    bind_shared_services) and AudioPlugin are registered (no UI, wake word or shortcuts
    plugins); run()'s wiring is repeated by hand (set_protocol, bind_events, setup/start
    plugins, set_audio_handler).
  - The user: "start auto conversation" is ConversationSession.start_auto_conversation()
    (what the CLI's auto button calls); the owner types the code shown into
    `omoide devices pair --code ... --user ...`.

Usage: see README.md next to this file (run.sh starts a fresh server and calls this).
"""

from __future__ import annotations

import argparse
import asyncio
import faulthandler
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import wave
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
WORK = Path(os.environ.get("WORK", "/tmp/omoide-py-xiaozhi"))

ap = argparse.ArgumentParser()
ap.add_argument("--client", default=os.environ.get("PYXIAOZHI_SRC", str(WORK / "py-xiaozhi")),
                help="py-xiaozhi's source tree, unmodified")
ap.add_argument("--ota", default="http://127.0.0.1:8013/xiaozhi/ota/")
ap.add_argument("--omoide", default=str(REPO / ".venv" / "bin" / "omoide"))
ap.add_argument("--omoide-config", default=str(REPO / "configs" / "offline.yaml"))
ap.add_argument("--server-cwd", default=str(WORK / "server"))
ap.add_argument("--user", default="hanako")
ap.add_argument("--wav", nargs="+", default=[str(WORK / "speech1.wav"), str(WORK / "speech2.wav")])
ap.add_argument("--pair-delay", type=float, default=3.0,
                help="seconds between the code appearing and the owner entering it")
ap.add_argument("--idle-wait", type=float, default=0.0,
                help="after the turns keep the microphone open this long (the server's "
                     "idle close is 120 s) and report what the client does when it closes")
ap.add_argument("--after-idle", nargs="*", default=[],
                help="after the idle close, press auto conversation again and say these")
ap.add_argument("--data", default=str(WORK / "client-data"))
args = ap.parse_args()
args.wav = [str(Path(w).resolve()) for w in args.wav]
args.after_idle = [str(Path(w).resolve()) for w in args.after_idle]
args.data = str(Path(args.data).resolve())

os.environ["XIAOZHI_DATA_DIR"] = args.data
os.environ["XIAOZHI_DISABLE_AUDIO"] = "1"     # AudioPlugin.setup skips AudioCodec()
sys.path.insert(0, args.client)
os.chdir(args.client)

T0 = time.monotonic()
faulthandler.register(signal.SIGUSR1, all_threads=True)


def stamp() -> str:
    return f"[{time.monotonic() - T0:8.3f}s]"


def note(*parts: object) -> None:
    print(stamp(), "HARNESS", *parts, file=sys.__stdout__, flush=True)


# -- the owner reads the code off the client's terminal ---------------------------------
class CodeWatcher(io.TextIOBase):
    """A tee on stdout that notices the activation code CliActivation prints."""

    CODE = re.compile(r"验证码: ((?:\d ){5}\d)")

    def __init__(self, inner):
        self.inner, self.code, self.seen_at = inner, None, None
        self.event = threading.Event()

    def write(self, s):
        self.inner.write(s)
        m = self.CODE.search(s)
        if m and self.code is None:
            self.code, self.seen_at = m.group(1).replace(" ", ""), time.monotonic()
            self.event.set()
        return len(s)

    def flush(self):
        self.inner.flush()


watcher = CodeWatcher(sys.stdout)
sys.stdout = watcher

# The client's own entry module (parse_args, initialize_config, setup_logging at import).
sys.argv = ["main.py", "--mode", "cli", "--protocol", "websocket"]
import main  # noqa: E402  (the client's own main.py, unmodified)
import numpy as np  # noqa: E402
from src.audio_codecs.opus_codec import OpusCodec  # noqa: E402
from src.bootstrap.plugin_wiring import bind_shared_services  # noqa: E402
from src.constants.constants import AudioConfig, DeviceState  # noqa: E402
from src.core.event_bus import Events  # noqa: E402
from src.plugins.audio import AudioPlugin  # noqa: E402
from src.plugins.mcp import McpPlugin  # noqa: E402
from src.utils.config_manager import get_config  # noqa: E402


def read_wav(path: str) -> np.ndarray:
    with wave.open(path) as w:
        assert w.getframerate() == 16000 and w.getnchannels() == 1 and w.getsampwidth() == 2
        return np.frombuffer(w.readframes(w.getnframes()), np.int16).astype(np.float32) / 32768


class FakeCodec:
    """Stands in for AudioCodec: a WAV-fed microphone and a recording speaker."""

    def __init__(self, plugin: AudioPlugin, state) -> None:
        self.plugin, self.state = plugin, state
        self.opus = OpusCodec(AudioConfig.INPUT_SAMPLE_RATE, AudioConfig.OUTPUT_SAMPLE_RATE,
                              AudioConfig.CHANNELS)
        self.opus.initialize()
        self.frame = AudioConfig.INPUT_FRAME_SIZE              # 320 samples = 20 ms
        self.queue: list[np.ndarray] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.last_voiced_sent: float | None = None
        self.last_frame_fed: float | None = None
        self.voiced_dropped = 0
        self.rx: list[tuple[float, int]] = []                  # (time, decoded samples)
        self.aec_active = False
        self.thread = threading.Thread(target=self._mic, daemon=True)
        self.thread.start()

    def speak(self, pcm: np.ndarray) -> None:
        """Queue the person's words (then the mic goes back to room silence)."""
        frames = [pcm[i:i + self.frame] for i in range(0, len(pcm), self.frame)]
        frames[-1] = np.pad(frames[-1], (0, self.frame - len(frames[-1])))
        with self.lock:
            self.queue.extend(frames)

    def _mic(self) -> None:
        silence = np.zeros(self.frame, np.float32)
        period = self.frame / AudioConfig.INPUT_SAMPLE_RATE
        nxt = time.monotonic()
        while not self.stop.is_set():
            with self.lock:
                pcm = self.queue.pop(0) if self.queue else None
                more = bool(self.queue)
            voiced = pcm is not None and float(np.sqrt(np.mean(pcm ** 2))) > 0.01
            data = self.opus.encode(pcm if pcm is not None else silence, self.frame)
            capturing = self.state.should_capture_audio() and not self.plugin._in_silence_period
            # the exact callback AudioCodec calls from its audio thread
            self.plugin._on_encoded_audio(data)
            now = time.monotonic()
            if voiced:
                if capturing:
                    self.last_voiced_sent = now
                else:
                    self.voiced_dropped += 1
            if pcm is not None and not more:
                self.last_frame_fed = now
            nxt += period
            time.sleep(max(0.0, nxt - time.monotonic()))

    # -- the parts of AudioCodec that AudioPlugin / ConversationSession call -------------
    async def write_audio(self, opus_data: bytes) -> None:
        pcm = self.opus.decode(opus_data, AudioConfig.OUTPUT_SAMPLE_RATE * 120 // 1000)
        self.rx.append((time.monotonic(), len(pcm)))

    async def clear_audio_queue(self) -> None:
        pass

    async def close(self) -> None:
        self.stop.set()


async def pair_when_shown() -> None:
    while not watcher.event.is_set():
        await asyncio.sleep(0.05)
    note(f"client shows code {watcher.code}; owner enters it in {args.pair_delay:.0f} s")
    await asyncio.sleep(args.pair_delay)
    out = await asyncio.to_thread(
        subprocess.run,
        [args.omoide, "devices", "pair", "--config", args.omoide_config, "--code",
         watcher.code, "--user", args.user],
        cwd=args.server_cwd, capture_output=True, text=True)
    note(f"omoide devices pair -> rc {out.returncode}: {(out.stdout + out.stderr).strip()}")


async def run() -> int:
    cfg = get_config()
    # What the user sets in the client's settings: the OTA address of their server.
    cfg.update_config("SYSTEM_OPTIONS.NETWORK.OTA_VERSION_URL", args.ota)
    note("client data dir", args.data, "OTA", args.ota)

    pairing = asyncio.create_task(pair_when_shown())
    t = time.monotonic()
    ok = await main.handle_activation("cli")       # the client's own function
    note(f"handle_activation -> {ok} after {time.monotonic() - t:.1f} s")
    if not ok:
        pairing.cancel()
        return 1
    if not pairing.done():
        pairing.cancel()       # already activated from an earlier run: nothing to pair
    note("config after activation: WEBSOCKET_URL",
         cfg.get_config("SYSTEM_OPTIONS.NETWORK.WEBSOCKET_URL"), "token",
         (cfg.get_config("SYSTEM_OPTIONS.NETWORK.WEBSOCKET_ACCESS_TOKEN") or "None")[:16] + "...")

    # -- ServiceContainer as main.start_app() builds it, wired as run() wires it -------
    container = main.ServiceContainer()
    container.tasks.initialize()
    container.protocol.set_task_manager(container.tasks)
    container.protocol.set_protocol("websocket")
    container.session.bind_events(container.event_bus)
    bind_shared_services(container)                # the client's McpServer / MusicPlayer
    audio = AudioPlugin()
    mcp = McpPlugin(server=container.mcp_server, music_player=container.music_player)
    container.plugins.register(mcp, audio)
    await container.plugins.setup_all(container.create_plugin_context(),
                                      container.create_plugin_commands())
    codec = FakeCodec(audio, container.state)
    audio.codec = codec
    container.protocol.set_audio_handler(audio.on_incoming_audio)
    await container.plugins.start_all()

    log: list[tuple[float, dict]] = []
    states: list[tuple[float, str]] = []

    async def on_json(msg):
        log.append((time.monotonic(), msg))
        short = {k: v for k, v in msg.items() if k != "session_id"}
        note("<- json", json.dumps(short, ensure_ascii=False)[:160])

    async def on_state(data):
        states.append((time.monotonic(), str(data.get("new_state"))))
        note("client state ->", data.get("new_state"))

    closed_at: list[float] = []

    async def on_closed(_=None):
        closed_at.append(time.monotonic())
        note("client: audio channel closed")

    container.event_bus.on(Events.INCOMING_JSON, on_json)
    container.event_bus.on(Events.DEVICE_STATE_CHANGED, on_state)
    container.event_bus.on(Events.AUDIO_CHANNEL_CLOSED, on_closed)

    results = []

    async def turn(wav: str) -> None:
        while container.state.device_state != DeviceState.LISTENING:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)                   # the person starts a moment later
        n_rx, n_log = len(codec.rx), len(log)
        codec.last_voiced_sent = None
        pcm = read_wav(wav)
        note(f"person says {Path(wav).name} ({len(pcm) / 16000:.2f} s)")
        codec.speak(pcm)
        deadline = time.monotonic() + 60
        stopped = None
        while time.monotonic() < deadline and stopped is None:
            await asyncio.sleep(0.05)
            stopped = next((m for _, m in log[n_log:]
                            if m.get("type") == "tts" and m.get("state") == "stop"), None)
            if not container.protocol.is_audio_channel_opened():
                break
        stt = [m.get("text") for _, m in log[n_log:] if m.get("type") == "stt"]
        said = [m.get("text") for _, m in log[n_log:]
                if m.get("type") == "tts" and m.get("state") == "sentence_start"]
        first_rx = codec.rx[n_rx][0] if len(codec.rx) > n_rx else None
        lat = (first_rx - codec.last_voiced_sent) if first_rx and codec.last_voiced_sent \
            else None
        samples = sum(n for _, n in codec.rx[n_rx:])
        results.append({"wav": Path(wav).name, "stt": stt, "reply": said,
                        "last_speech_frame_to_first_reply_audio_ms":
                            None if lat is None else round(lat * 1000),
                        "reply_frames": len(codec.rx) - n_rx,
                        "reply_audio_s": round(samples / AudioConfig.OUTPUT_SAMPLE_RATE, 2),
                        "voiced_frames_not_sent": codec.voiced_dropped,
                        "tts_stop": stopped is not None})
        note("turn:", json.dumps(results[-1], ensure_ascii=False))

    async def press_auto() -> bool:
        # The user presses "auto conversation" (AEC off: auto_stop mode).
        t = time.monotonic()
        await container.session.start_auto_conversation()
        ok = container.protocol.is_audio_channel_opened()
        note(f"start_auto_conversation: connected={ok} in {time.monotonic() - t:.2f} s")
        return ok

    connected = await press_auto()
    if connected:
        for wav in args.wav:
            await turn(wav)
        if args.idle_wait:
            note(f"keeping the microphone open {args.idle_wait:.0f} s (idle close)")
            n_log, n_closed = len(log), len(closed_at)
            t = time.monotonic()
            while time.monotonic() - t < args.idle_wait and \
                    container.protocol.is_audio_channel_opened():
                await asyncio.sleep(0.2)
            stop_t = next((ts for ts, m in log[n_log:] if m.get("type") == "tts"
                           and m.get("state") == "stop"), None)
            await asyncio.sleep(2)
            close_t = closed_at[n_closed] if len(closed_at) > n_closed else None
            note("idle: goodbye lines",
                 [m.get("text") for _, m in log[n_log:] if m.get("state") == "sentence_start"],
                 "| states after tts stop:",
                 [s for ts, s in states if stop_t and ts >= stop_t],
                 "| channel open:", container.protocol.is_audio_channel_opened())
            results.append({"idle_goodbye_tts_stop": stop_t is not None,
                            "goodbye_tts_stop_to_client_sees_close_ms":
                                round((close_t - stop_t) * 1000) if close_t and stop_t
                                else None,
                            "state_after": str(container.state.device_state)})
            note("idle:", json.dumps(results[-1], ensure_ascii=False))
            if args.after_idle:
                await asyncio.sleep(1.0)
                if await press_auto():
                    for wav in args.after_idle:
                        await turn(wav)
                else:
                    results.append({"reconnect_after_idle": False})
    print(json.dumps({"results": results}, ensure_ascii=False, indent=1), file=sys.__stdout__)
    await container.protocol.disconnect()
    await codec.close()
    await container.tasks.cancel_all()
    return 0 if connected and all(r.get("tts_stop", True) for r in results) else 2


if __name__ == "__main__":
    sys.exit(asyncio.run(run()))
