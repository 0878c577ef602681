"""``omoide bench voice``: how soon the robot answers once the person stops talking.

A simulated StackChan (the ``stackchan`` device's simulated client, real Opus, 60 ms
frames paced in real time, auto listening with the microphone open throughout) speaks
N Japanese utterances of 1-8 s to a real omoide server on the offline stack (the config,
``configs/offline.yaml`` by default: Silero VAD, the turn stage, Whisper, e5, Qdrant,
the stand-in chat, OpenJTalk), served in this process on loopback
(:class:`omoide.server.loopback.LoopbackOmoide`). The utterances are phrases of the
bench's phrase set spoken by OpenJTalk and, when installed, Kokoro (alternating); the
phrases with a comma are spoken as two parts with a 600-900 ms pause between them, as a
person pausing mid-sentence.

Each utterance is timed from the **end of its last word** (the moment the robot has
sent, in real time, the last frame of speech; the TTS's own trailing silence is trimmed)
to the robot receiving:

- **final transcript**: the ``stt`` of the turn that answers the utterance's last words;
- **first reply audio**: the first Opus frame of that turn's reply.

Also per utterance: **cut-off** (the server made more than one turn of it: it ended the
turn inside the pause), **lost** (no turn heard anything of it, or queued speech was
dropped), the recognised text and the CPU time this process spent from the first frame
to the last reply (server and robot together; the robot's share, Opus encoding and
decoding, is a few ms).

The same utterances go through two servers in one run: **streaming** (the config as
it is: recognition while the person speaks, the turn stage ends the turn) and
**today** (``asr.streaming: false``, no ``turn`` stage and the VAD's default silence:
the whole utterance is recognised after silence endpointing ended it), and the ratio
of their p50s is printed with the load average. Target: end of last word -> first
reply audio p50 <= 800 ms and <= 0.5 x today's path, for the 2-4 s utterances.

Where the time goes, per utterance and as p50 (from the connection's instants and the
turn's trace, one clock in one process): **vad** (end of the last word -> the VAD hears
the voice stop), **turn** (-> the turn ended: the turn stage's judgement, or its
ceiling), **asr** (-> the transcript: what was left to decode), **recall** (-> the
prompt built: memory and prompt), **chat** (-> the chat's first token), **tts** (-> the
first sentence's audio: the rest of the sentence and its synthesis), **send** (-> the
robot's first Opus frame: encoding, pacing, loopback, decoding).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from omoide_bench.benches._stats import percentiles

DEVICE = "stackchan"
NEEDS_DEVICE = "the StackChan plugin is not installed (pip install -e plugins/device_stackchan)"
RATE = 16000
LEAD_S = 0.3
"""Silence the robot sends before each utterance."""
MORE_TURNS_S = 2.5
"""After a reply, how long to wait for another turn of the same utterance (its part
after a pause the server cut), the microphone still open."""
TARGET_MS = 800.0
TARGET_RATIO = 0.5


@dataclass(frozen=True)
class Utterance:
    text: str
    voice: str
    speech: np.ndarray
    """16 kHz mono, from the first word's start to the last word's end."""
    pause_s: float = 0.0

    @property
    def seconds(self) -> float:
        return len(self.speech) / RATE


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("voice", help="end of speech -> transcript and first reply audio, "
                                     "streaming recognition vs. recognising after the end")
    p.add_argument("--config", help="config file (default: configs/offline.yaml)")
    p.add_argument("--utterances", type=int, default=8, help="how many utterances (N)")
    p.add_argument("--voices", help="comma-separated TTS voices, e.g. "
                                    "openjtalk,kokoro:jf_alpha (default: OpenJTalk, and "
                                    "Kokoro when installed)")
    p.add_argument("--paths", choices=("both", "streaming", "today"), default="both")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(handler=_run)


# -- the utterances ----------------------------------------------------------------------
def trim_silence(samples: np.ndarray, threshold: float = 0.01) -> np.ndarray:
    """``samples`` from the first to the last 10 ms window louder than ``threshold``."""
    n = RATE // 100
    frames = len(samples) // n
    loud = [i for i in range(frames)
            if float(np.sqrt(np.mean(samples[i * n:(i + 1) * n] ** 2))) > threshold]
    if not loud:
        return samples[:0]
    return samples[loud[0] * n:(loud[-1] + 1) * n]


def default_voices() -> list[dict[str, Any]]:
    import importlib.util

    voices: list[dict[str, Any]] = [{"use": "openjtalk"}]
    if importlib.util.find_spec("omoide_tts_kokoro") is not None:
        voices.append({"use": "kokoro", "voice": "jf_alpha"})
    return voices


def plan(count: int, rng: random.Random) -> list[tuple[str, bool]]:
    """(text, spoken with a pause at its comma) for ``count`` utterances: about a third
    with a pause, the rest plain phrases, in a shuffled order."""
    from omoide_bench.benches._speech import load_phrases

    phrases = [p.text for p in load_phrases()]
    with_comma = [t for t in phrases if "、" in t]
    plain = [t for t in phrases if "、" not in t]
    rng.shuffle(with_comma)
    rng.shuffle(plain)
    paused = min(len(with_comma), max(1, count // 3))
    chosen = [(t, True) for t in with_comma[:paused]] + \
        [(t, False) for t in plain[:count - paused]]
    rng.shuffle(chosen)
    # spares, for phrases whose speech is shorter than 1 s or longer than 8 s
    return chosen + [(t, False) for t in plain[count - paused:]]


async def speak_utterances(voices: list[dict[str, Any]], count: int,
                           seed: int) -> list[Utterance]:
    """``count`` utterances of 1-8 s, the voices taking turns."""
    from omoide.audio import resample
    from omoide_bench.benches._speech import build_component, voice_label

    rng = random.Random(seed)
    engines = [build_component("tts", v) for v in voices]
    for tts in engines:
        await tts.start()
    out: list[Utterance] = []
    try:
        for text, paused in plan(count, rng):
            if len(out) >= count:
                break
            k = len(out) % len(engines)
            parts = text.split("、", 1) if paused else [text]
            clips = [trim_silence(resample(await engines[k].synthesize(part), RATE).samples)
                     for part in parts]
            pause = rng.uniform(0.6, 0.9) if paused else 0.0
            gap = np.zeros(int(pause * RATE), dtype=np.float32)
            speech = np.concatenate([clips[0], gap, *clips[1:]]).astype(np.float32)
            if 1.0 <= len(speech) / RATE <= 8.0:
                out.append(Utterance(text, voice_label(voices[k]), speech, pause))
    finally:
        for tts in engines:
            await tts.stop()
    return out


# -- the servers -----------------------------------------------------------------------------
def server_config(path: str | None, data_dir: Path, streaming: bool) -> dict[str, Any]:
    """The config at ``path`` with its data in ``data_dir``, an open-mode StackChan and,
    for today's path, no recognition while speaking and no turn stage."""
    import yaml

    from omoide.commands.demo import default_config

    data: dict[str, Any] = yaml.safe_load(
        (Path(path) if path else default_config()).read_text(encoding="utf-8")) or {}
    data["server"] = {**(data.get("server") or {}), "data_dir": str(data_dir),
                      "trace_file": None}
    memory = dict(data.get("memory") or {})
    memory["extraction"] = {**(memory.get("extraction") or {}), "on_disconnect": False}
    data["memory"] = memory
    store = data.get("store")
    if isinstance(store, dict) and "path" in store:
        data["store"] = {**store, "path": str(data_dir / "store")}
    data["devices"] = [{"use": DEVICE, "pairing_required": False,
                        "ota_rate_limit": "100000/minute"}]
    if not streaming:
        asr = data.get("asr")
        data["asr"] = {**(asr if isinstance(asr, dict) else {"use": asr}), "streaming": False}
        data.pop("turn", None)
        # A VAD silence made short for asking a turn stage is too short to end turns on.
        vad = data.get("vad")
        if isinstance(vad, dict):
            data["vad"] = {k: v for k, v in vad.items() if k != "min_silence_ms"}
    return data


async def run_path(args: argparse.Namespace, utterances: list[Utterance],
                   streaming: bool) -> dict[str, Any]:
    """Start a server for one path, let the robot say every utterance, stop it."""
    from omoide.server.loopback import LoopbackOmoide, settings_from_data

    with tempfile.TemporaryDirectory(prefix="omoide-bench-voice-") as tmp:
        data = server_config(args.config, Path(tmp), streaming)
        server = LoopbackOmoide(settings_from_data(data), log_level="error")
        await server.start(ready_timeout_s=300)
        try:
            load_before = os.getloadavg()[0]
            rows = await talk(server, utterances)
            load_after = os.getloadavg()[0]
        finally:
            await server.stop()
    return {"path": "streaming" if streaming else "today", "rows": rows,
            "load_average": [round(load_before, 2), round(load_after, 2)],
            "asr": data.get("asr"), "turn": data.get("turn")}


async def talk(server: Any, utterances: list[Utterance]) -> list[dict[str, Any]]:
    from omoide_bench.benches._components import component_class

    device_cls = component_class("device", DEVICE, needs=NEEDS_DEVICE)
    client = device_cls.simulated_client(server.url, management_headers={})
    robot = client.robot
    await robot.provision()
    await robot.connect()
    service = server.device(DEVICE).service
    try:
        warm = utterances[0]   # first use of every model is not steady state
        await say(robot, service.connections[robot.device_id].stats, warm)
        rows = []
        for utterance in utterances:
            stats = service.connections[robot.device_id].stats
            rows.append(await say(robot, stats, utterance))
            trace = server.omoide.traces.recent(limit=1)
            rows[-1]["breakdown"] = breakdown(rows[-1].pop("_instants"),
                                              trace[-1] if trace else None)
    finally:
        await robot.close()
    return rows


async def say(robot: Any, stats: Any, utterance: Utterance) -> dict[str, Any]:
    """Speak one utterance with the microphone open before and after it; collect every
    reply the server makes of it."""
    turns0, dropped0 = stats.turns, stats.queued_dropped
    lead = np.zeros(int(LEAD_S * RATE), dtype=np.float32)
    from omoide.types import AudioClip

    packets = robot.encode(AudioClip(np.concatenate([lead, utterance.speech]), RATE))
    silence = robot.encode(AudioClip(np.zeros(RATE * 120, dtype=np.float32), RATE))
    if robot.listening != "auto":
        await robot.start_listening("auto")
    cpu0 = time.process_time()
    last_word = await robot.stream_clip(packets)
    stop = asyncio.Event()
    mic = asyncio.create_task(robot.stream_clip(silence, stop=stop))
    replies: list[Any] = []
    try:
        while await more_turns(stats, turns0 + len(replies)):
            try:
                replies.append(await robot.collect(timeout=30))
            except TimeoutError:
                break   # a turn that heard nothing sends no reply
    finally:
        stop.set()
        await asyncio.gather(mic, return_exceptions=True)
    cpu = time.process_time() - cpu0
    out = row(utterance, replies, last_word, cpu, stats.turns - turns0,
              stats.queued_dropped - dropped0)
    out["_instants"] = (last_word, stats.voice_stopped_at, stats.turn_ended_at,
                        replies[-1].first_audio_at if replies else None)
    return out


STEPS = ("vad", "turn", "asr", "recall", "chat", "tts", "send")


def breakdown(instants: tuple[float | None, ...], trace: dict[str, Any] | None,
              ) -> dict[str, float | None]:
    """End of the last word -> first reply audio in :data:`STEPS` (ms; None: unknown).

    ``instants``: the last word's end, the voice stopping, the turn ending (the trace's
    zero) and the first reply frame, all ``perf_counter`` readings of this process."""
    last_word, stopped, ended, first_audio = instants
    stages = (trace or {}).get("stages", {})

    def at(stage: str) -> float | None:
        span = stages.get(stage) or {}
        return span.get("end_ms")

    marks: list[float | None] = [0.0, None, None, at("asr"), at("prompt"),
                                 at("chat_first_token"), at("first_sentence_audio"), None]
    if last_word is not None and stopped is not None and ended is not None:
        marks[1] = (stopped - last_word) * 1000 if stopped >= last_word else 0.0
        turn_end = (ended - last_word) * 1000
        marks[2] = turn_end
        marks[3:7] = [None if m is None else m + turn_end for m in marks[3:7]]
        if first_audio is not None:
            marks[7] = (first_audio - last_word) * 1000
    return {step: None if a is None or b is None else round(b - a, 1)
            for step, a, b in zip(STEPS, marks[:-1], marks[1:], strict=True)}


async def more_turns(stats: Any, seen: int) -> bool:
    """True when the server starts (or started) a turn beyond the ``seen`` ones within
    :data:`MORE_TURNS_S` (the first turn: within 60 s)."""
    deadline = time.monotonic() + (60.0 if seen == 0 or stats.turns > seen else MORE_TURNS_S)
    while time.monotonic() < deadline:
        if stats.turns > seen:
            return True
        await asyncio.sleep(0.05)
    return False


def row(utterance: Utterance, replies: list[Any], last_word: float, cpu_s: float,
        turns: int, dropped: int) -> dict[str, Any]:
    last = replies[-1] if replies else None

    def after(at: float | None) -> float | None:
        return None if at is None else round((at - last_word) * 1000, 1)

    heard = "".join(r.transcript or "" for r in replies)
    return {"text": utterance.text, "voice": utterance.voice,
            "seconds": round(utterance.seconds, 2), "pause_s": round(utterance.pause_s, 2),
            "heard": heard, "turns": turns, "cut_off": turns > 1,
            "lost": not heard or dropped > 0,
            "transcript_ms": after(last.stt_at if last else None),
            "first_audio_ms": after(last.first_audio_at if last else None),
            "cpu_ms": round(cpu_s * 1000, 1)}


# -- the report ------------------------------------------------------------------------------
def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    from omoide_bench.benches.asr import character_error_rate

    def of(key: str, keep: Any = lambda r: True) -> dict[str, float]:
        return percentiles([r[key] for r in rows if r[key] is not None and keep(r)], 0)

    short = [r for r in rows if 2.0 <= r["seconds"] <= 4.0]
    return {"utterances": len(rows),
            "transcript_ms": of("transcript_ms"), "first_audio_ms": of("first_audio_ms"),
            "first_audio_ms_2_4s": of("first_audio_ms", lambda r: 2.0 <= r["seconds"] <= 4.0),
            "utterances_2_4s": len(short),
            "cut_off": sum(r["cut_off"] for r in rows),
            "paused": sum(r["pause_s"] > 0 for r in rows),
            "cut_in_pause": sum(r["cut_off"] for r in rows if r["pause_s"] > 0),
            "lost": sum(r["lost"] for r in rows),
            "cpu_ms_per_turn": of("cpu_ms"),
            "breakdown_p50_ms": {step: percentiles(
                [r["breakdown"][step] for r in rows
                 if r.get("breakdown", {}).get(step) is not None], 0)["p50"]
                for step in STEPS},
            "cer": round(character_error_rate([r["text"] for r in rows],
                                              [r["heard"] for r in rows]), 3)}


def compare(results: list[dict[str, Any]]) -> dict[str, Any] | None:
    by = {r["path"]: r["summary"] for r in results}
    if set(by) != {"streaming", "today"}:
        return None
    new, old = by["streaming"]["first_audio_ms_2_4s"], by["today"]["first_audio_ms_2_4s"]
    ratio = new["p50"] / old["p50"] if old["p50"] else float("nan")
    return {"first_audio_p50_ratio_2_4s": round(ratio, 2),
            "transcript_p50_ratio": round(by["streaming"]["transcript_ms"]["p50"]
                                          / by["today"]["transcript_ms"]["p50"], 2),
            "target_met": new["p50"] <= TARGET_MS and ratio <= TARGET_RATIO}


def print_report(report: dict[str, Any]) -> None:
    print(f"{len(report['utterances'])} utterances, voices {', '.join(report['voices'])}; "
          "times in ms from the end of the last word")
    for result in report["results"]:
        print(f"\n== {result['path']}: asr {result['asr']}, turn {result['turn']}; load "
              f"average {result['load_average'][0]} -> {result['load_average'][1]} on "
              f"{os.cpu_count()} CPUs")
        print(f"{'s':>5} {'pause':>5} {'->stt':>7} {'->audio':>7} {'cpu':>6} turns  "
              "voice       heard / said")
        for r in result["rows"]:
            print(f"{r['seconds']:5.1f} {r['pause_s']:5.2f} {fmt(r['transcript_ms'])} "
                  f"{fmt(r['first_audio_ms'])} {r['cpu_ms']:6.0f} {r['turns']:>5}"
                  f"{' CUT' if r['cut_off'] else '    '}{' LOST' if r['lost'] else ''}"
                  f"  {r['voice']:<11} {r['heard']} / {r['text']}")
        s = result["summary"]
        print(f"p50/p95: ->transcript {s['transcript_ms']['p50']:.0f}/"
              f"{s['transcript_ms']['p95']:.0f}, ->first audio {s['first_audio_ms']['p50']:.0f}/"
              f"{s['first_audio_ms']['p95']:.0f} (2-4 s utterances, {s['utterances_2_4s']}: "
              f"{s['first_audio_ms_2_4s']['p50']:.0f}/{s['first_audio_ms_2_4s']['p95']:.0f}); "
              f"cut in a pause {s['cut_in_pause']}/{s['paused']}, cut-offs {s['cut_off']}, "
              f"lost {s['lost']}, CPU per turn p50 {s['cpu_ms_per_turn']['p50']:.0f} ms, "
              f"CER {s['cer']}")
        print("where it goes, p50 ms: " + ", ".join(
            f"{step} {ms:.0f}" for step, ms in s["breakdown_p50_ms"].items()))
    ratio = report.get("comparison")
    if ratio:
        print(f"\nstreaming / today, p50 end of last word -> first reply audio (2-4 s): "
              f"{ratio['first_audio_p50_ratio_2_4s']}; -> transcript (all): "
              f"{ratio['transcript_p50_ratio']}. Target p50 <= {TARGET_MS:.0f} ms and <= "
              f"{TARGET_RATIO} x today: {'met' if ratio['target_met'] else 'MISSED'}")


def fmt(ms: float | None) -> str:
    return f"{ms:7.0f}" if ms is not None else f"{'-':>7}"


async def _bench(args: argparse.Namespace) -> dict[str, Any]:
    from omoide_bench.benches._speech import voice_label, voice_spec

    voices = [voice_spec(v) for v in args.voices.split(",")] if args.voices \
        else default_voices()
    utterances = await speak_utterances(voices, args.utterances, args.seed)
    paths = {"both": (True, False), "streaming": (True,), "today": (False,)}[args.paths]
    results = []
    for streaming in paths:
        result = await run_path(args, utterances, streaming)
        result["summary"] = summary(result["rows"])
        results.append(result)
    return {"voices": [voice_label(v) for v in voices],
            "utterances": [{"text": u.text, "voice": u.voice, "seconds": round(u.seconds, 2),
                            "pause_s": round(u.pause_s, 2)} for u in utterances],
            "results": results, "comparison": compare(results)}


def _run(args: argparse.Namespace) -> int:
    import logging
    logging.getLogger("omoide").setLevel(logging.WARNING)
    from omoide_bench.benches._components import component_class

    try:
        component_class("device", DEVICE, needs=NEEDS_DEVICE)
    except SystemExit as missing:
        print(missing)
        return 1
    report = asyncio.run(_bench(args))
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print_report(report)
    return 0
