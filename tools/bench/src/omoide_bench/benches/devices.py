"""``omoide bench devices``: many simulated StackChans against one server on loopback.

The server (the real app, the real ``stackchan`` device plugin, the real memory engine)
runs in this process with the ``fake`` test doubles of fixed latency for ASR, chat
(first token, then per piece) and TTS. The robots run in a second process, so their
Opus encoding and bookkeeping do not share the server's event loop, as on real
hardware. Each robot connects, then speaks ``--turns`` utterances (real-time paced
60 ms Opus frames, ``listen stop`` at the end of each, as in manual mode, so the end of
speech is known exactly) and collects the reply.

Reported per device count:

- overhead = (listen stop -> first reply audio frame at the robot) minus the
  components' critical path (ASR + chat until the first sentence is complete + TTS of
  that sentence), p50/p95: what transport, VAD, memory recall, prompt, splitting,
  Opus encoding and pacing add;
- pacing jitter: deviation of frame inter-arrival from the frame length, within a
  sentence after its pre-buffer, p50/p95/max;
- underruns: frames that reached the robot after the audio before them had finished
  playing (a stutter), and dropped frames: frames the TTS produced that never arrived.

The bench reaches the device by name through the registry, as a config does: the robots
are the simulated clients of the device class registered as ``stackchan``, and what it
measures (Opus frames, manual listening, the connections' late frames) is that device's
own, through the client's ``robot`` (the StackChan simulator) and the running device's
``service``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from omoide_bench.benches._stats import percentiles

REPLY = "[happy] 今日もいい天気ですね。散歩に行きましょう。"
FRAME_MS = 60
DOWNLINK_RATE = 24000
TARGET_P95_MS = 50.0
WARMUP_DEVICE = "02:be:ff:ff:00:00"
WARMUP_USER = "device-" + WARMUP_DEVICE.replace(":", "")
DEVICE = "stackchan"
NEEDS_DEVICE = "the StackChan plugin is not installed (pip install -e plugins/device_stackchan)"


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("devices", help="N simulated StackChans on loopback: overhead, "
                                       "pacing jitter, dropped frames")
    p.add_argument("--devices", type=int, nargs="+", default=[1, 10, 50],
                   help="device counts to run, one run each (1 shows the floor: the "
                        "doubles' own timer overshoot and the pipeline's fixed cost)")
    p.add_argument("--turns", type=int, default=3, help="utterances per device")
    p.add_argument("--utterance-s", type=float, default=1.0, help="length of each utterance")
    p.add_argument("--asr-ms", type=float, default=300)
    p.add_argument("--first-token-ms", type=float, default=400)
    p.add_argument("--token-ms", type=float, default=20)
    p.add_argument("--chunk-chars", type=int, default=2, help="characters per chat piece")
    p.add_argument("--tts-ms", type=float, default=150)
    p.add_argument("--ms-per-char", type=float, default=60,
                   help="length of synthesised audio per character")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(handler=_run)


# -- the components' critical path -------------------------------------------------------
def first_sentence_pieces(reply: str, chunk: int) -> tuple[int, str]:
    """(chat pieces needed until the first sentence is complete, that sentence)."""
    from omoide.pipeline.emotion import StreamingEmotionParser
    from omoide.pipeline.splitter import SentenceSplitter

    splitter = SentenceSplitter(first_sentence_comma_split=True)
    parser = StreamingEmotionParser()
    pieces = [reply[i:i + chunk] for i in range(0, len(reply), chunk)]
    for i, piece in enumerate(pieces):
        tagged = parser.feed(piece)
        if tagged is not None:
            done = splitter.feed(tagged.text)
            if done:
                return i + 1, done[0]
    rest = splitter.flush()
    return len(pieces), rest[0] if rest else ""


def critical_path_ms(args: argparse.Namespace) -> float:
    pieces, _ = first_sentence_pieces(REPLY, args.chunk_chars)
    return float(args.asr_ms + args.first_token_ms + (pieces - 1) * args.token_ms
                 + args.tts_ms)


def expected_frames(sentence: str, ms_per_char: float) -> int:
    samples = int(DOWNLINK_RATE * ms_per_char * len(sentence) / 1000)
    return math.ceil(samples / (DOWNLINK_RATE * FRAME_MS // 1000))


# -- the robots (run in a separate process) --------------------------------------------
def robots_main(params: dict[str, Any]) -> dict[str, Any]:
    """Entry point of the robots' process: run them all, return raw measurements."""
    with event_loop_runner() as runner:
        return runner.run(_robots(params))


def event_loop_runner() -> asyncio.Runner:
    """uvloop when installed, as ``omoide serve`` (uvicorn) uses it; else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.Runner()
    return asyncio.Runner(loop_factory=uvloop.new_event_loop)


async def _robots(params: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    from omoide.types import AudioClip
    from omoide_bench.benches._components import component_class

    device_cls = component_class("device", DEVICE, needs=NEEDS_DEVICE)

    def simulated_robot(device_id: str | None = None) -> Any:
        """The StackChan simulator of a new simulated client (it answers MCP)."""
        return device_cls.simulated_client(params["url"], management_headers={},
                                           device_id=device_id).robot

    rate = 16000
    t = np.arange(int(params["utterance_s"] * rate), dtype=np.float32) / rate
    speech = AudioClip((0.25 * np.sin(2 * np.pi * 180 * t)).astype(np.float32), rate)
    packets = simulated_robot().encode(speech)
    rng = random.Random(1)

    async def one(i: int) -> list[dict[str, Any]]:
        robot = simulated_robot(f"02:be:{i // 256:02x}:{i % 256:02x}:00:01")
        # spread the robots over one turn's length so they do not march in step
        await asyncio.sleep(rng.random() * params["stagger_s"])
        turns: list[dict[str, Any]] = []
        try:
            await robot.provision()
            await robot.connect()
            for _ in range(params["turns"]):
                try:
                    reply = await robot.say(packets, mode="manual", timeout=60)
                except Exception as exc:  # noqa: BLE001 - a failed turn is a result
                    turns.append({"error": f"{type(exc).__name__}: {exc}"})
                    continue
                turns.append({
                    "complete": reply.complete, "errors": reply.errors,
                    "sentences": reply.sentences,
                    "first_audio_ms": None if reply.first_audio_at is None else
                    (reply.first_audio_at - (reply.sent_audio_end or 0)) * 1000,
                    "frame_times": reply.frame_times,
                    "frame_sentence": reply.frame_sentence})
                await asyncio.sleep(rng.random() * 0.5)   # the robot goes back to listening
        except Exception as exc:  # noqa: BLE001
            turns.append({"error": f"{type(exc).__name__}: {exc}"})
        finally:
            await robot.close()
        return turns

    # one warm-up turn first: lazy imports and first-use set-up are not steady state
    warm = simulated_robot(WARMUP_DEVICE)
    await warm.provision()
    await warm.connect()
    await warm.say(packets, mode="manual", timeout=60)
    await warm.close()
    started, cpu0 = time.perf_counter(), time.process_time()
    results = await asyncio.gather(*(one(i) for i in range(params["devices"])))
    return {"turns": [t for r in results for t in r],
            "wall_s": time.perf_counter() - started,
            "robots_cpu_s": time.process_time() - cpu0}


# -- analysis ------------------------------------------------------------------------------
def pacing(turn: dict[str, Any], pre_buffer: int) -> tuple[list[float], int]:
    """(inter-arrival deviations in ms after each sentence's pre-buffer, underruns).

    The robot plays frames back to back from one queue for the whole turn, as the
    firmware does. An underrun is a frame that arrives after the queue ran dry, inside
    a sentence (a gap before a sentence is the TTS still working, not the transport).
    """
    deviations: list[float] = []
    underruns = 0
    frame_s = FRAME_MS / 1000
    play_end = 0.0
    index_in_sentence = 0
    previous_sentence = None
    previous_at = 0.0
    for at, sentence in zip(turn["frame_times"], turn["frame_sentence"], strict=True):
        index_in_sentence = index_in_sentence + 1 if sentence == previous_sentence else 0
        if index_in_sentence and at > play_end + 0.005:
            underruns += 1
        if index_in_sentence >= pre_buffer:
            deviations.append(abs((at - previous_at) * 1000 - FRAME_MS))
        play_end = max(play_end, at) + frame_s
        previous_sentence, previous_at = sentence, at
    return deviations, underruns


def analyse(raw: dict[str, Any], args: argparse.Namespace, pre_buffer: int,
            server_late_frames: int) -> dict[str, Any]:
    critical = critical_path_ms(args)
    overheads, deviations = [], []
    underruns = dropped = failed = 0
    errors: list[str] = []
    for turn in raw["turns"]:
        if "error" in turn or not turn["complete"] or turn["first_audio_ms"] is None:
            failed += 1
            errors.append(turn.get("error") or "; ".join(turn.get("errors") or []) or
                          "incomplete")
            continue
        overheads.append(turn["first_audio_ms"] - critical)
        devs, under = pacing(turn, pre_buffer)
        deviations += devs
        underruns += under
        got: dict[int, int] = {}
        for s in turn["frame_sentence"]:
            got[s] = got.get(s, 0) + 1
        for i, sentence in enumerate(turn["sentences"]):
            dropped += max(0, expected_frames(sentence, args.ms_per_char) - got.get(i, 0))
    over = percentiles(overheads)
    return {"turns": len(raw["turns"]), "failed_turns": failed,
            "errors": sorted(set(errors))[:5],
            "critical_path_ms": round(critical, 1),
            "overhead_ms": over,
            "jitter_ms": percentiles(deviations),
            "underruns": underruns, "server_late_frames": server_late_frames,
            "dropped_frames": dropped, "wall_s": round(raw["wall_s"], 1),
            "target_met": bool(overheads) and failed == 0 and dropped == 0
            and over["p95"] <= TARGET_P95_MS}


# -- the run -------------------------------------------------------------------------------
def config_for(args: argparse.Namespace, data_dir: Path, devices: int) -> dict[str, Any]:
    return {
        "server": {"data_dir": str(data_dir), "trace_file": None},
        "memory": {"extraction": {"on_disconnect": False}},
        "vad": {"use": "fake"},
        "asr": {"use": "fake", "text": "今日の天気はどう？", "latency_ms": args.asr_ms},
        "embed": {"use": "fake"},
        "store": {"use": "fake"},
        "chat": {"use": "fake", "reply": REPLY, "first_token_ms": args.first_token_ms,
                 "per_token_ms": args.token_ms, "chunk_chars": args.chunk_chars,
                 "timeout_s": 120},
        "tts": {"use": "fake", "latency_ms": args.tts_ms, "ms_per_char": args.ms_per_char,
                "sample_rate": DOWNLINK_RATE},
        # every simulated robot calls OTA from the same loopback address
        "devices": [{"use": "stackchan", "pairing_required": False,
                     "send_timeout_s": 10, "ota_rate_limit": "100000/minute"}],
    }


async def _one_run(args: argparse.Namespace, devices: int) -> dict[str, Any]:
    import concurrent.futures
    import multiprocessing

    from omoide.server.loopback import LoopbackOmoide, settings_from_data

    with tempfile.TemporaryDirectory(prefix="omoide-bench-devices-") as tmp:
        server = LoopbackOmoide(settings_from_data(config_for(args, Path(tmp), devices)),
                                log_level="error")
        await server.start(ready_timeout_s=60)
        try:
            params = {"url": server.url, "devices": devices, "turns": args.turns,
                      "utterance_s": args.utterance_s,
                      "stagger_s": args.utterance_s + critical_path_ms(args) / 1000}
            ctx = multiprocessing.get_context("spawn")
            with concurrent.futures.ProcessPoolExecutor(1, mp_context=ctx) as pool:
                cpu0, wall0 = time.process_time(), time.perf_counter()
                raw = await asyncio.get_running_loop().run_in_executor(
                    pool, robots_main, params)
                cpu_s, wall_s = time.process_time() - cpu0, time.perf_counter() - wall0
            await asyncio.sleep(0.2)
            service = server.device(DEVICE).service
            late = sum(c.stats.late_frames for c in service.closed)
            pre_buffer = service.config.pre_buffer_frames
            traces = [t for t in server.omoide.traces.recent(limit=100000)
                      if t["user"] != WARMUP_USER]
            stages = stage_breakdown(traces)
            server_side = [t["stages"]["first_sentence_audio"]["end_ms"] - critical_path_ms(args)
                           for t in traces if "first_sentence_audio" in t["stages"]]
        finally:
            await server.stop()
    # CPU the server process (event loop and its threads) spent: what the devices cost,
    # whatever else runs on the machine.
    server_cpu = {"percent_of_one_core": round(100 * cpu_s / wall_s, 1),
                  "ms_per_turn": round(1000 * cpu_s / max(1, devices * args.turns), 1),
                  "robots_percent_of_one_core": round(
                      100 * raw["robots_cpu_s"] / max(raw["wall_s"], 1e-9), 1)}
    return {"devices": devices, **analyse(raw, args, pre_buffer, late),
            "server_cpu": server_cpu,
            "server_overhead_ms": percentiles(server_side),
            "server_stages_ms": stages}


def stage_breakdown(traces: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """p50/p95 of each stage's duration in the server's own traces (ms)."""
    durations: dict[str, list[float]] = {}
    for trace in traces:
        for name, span in trace["stages"].items():
            if span["end_ms"] is not None:
                durations.setdefault(name, []).append(span["end_ms"] - span["start_ms"]
                                                      if span["end_ms"] != span["start_ms"]
                                                      else span["end_ms"])
    return {name: percentiles(values) for name, values in durations.items()}


def _run(args: argparse.Namespace) -> int:
    import logging
    logging.getLogger("omoide").setLevel(logging.WARNING)
    from omoide_bench.benches._components import component_class

    try:
        component_class("device", DEVICE, needs=NEEDS_DEVICE)
    except SystemExit as missing:
        print(missing)
        return 1
    results = []
    for n in args.devices:
        with event_loop_runner() as runner:
            results.append(runner.run(_one_run(args, n)))
    if args.json:
        print(json.dumps(results, indent=2, ensure_ascii=False))
        return 0
    print(f"components (fake doubles): asr {args.asr_ms:g} ms, chat first token "
          f"{args.first_token_ms:g} ms + {args.token_ms:g} ms per {args.chunk_chars}-char "
          f"piece, tts {args.tts_ms:g} ms per sentence -> critical path to first audio "
          f"{critical_path_ms(args):.0f} ms")
    header = ("devices", "turns", "failed", "overhead p50/p95 ms", "jitter p50/p95/max ms",
              "underruns", "dropped", "target")
    rows = [header]
    for r in results:
        o, j = r["overhead_ms"], r["jitter_ms"]
        rows.append((str(r["devices"]), str(r["turns"]), str(r["failed_turns"]),
                     f"{o['p50']:.1f} / {o['p95']:.1f}",
                     f"{j['p50']:.1f} / {j['p95']:.1f} / {j['max']:.1f}",
                     str(r["underruns"]), str(r["dropped_frames"]),
                     "met" if r["target_met"] else "MISSED"))
    widths = [max(len(row[c]) for row in rows) for c in range(len(header))]
    for row in rows:
        print("  ".join(cell.rjust(widths[c]) for c, cell in enumerate(row)))
    print(f"target: p95 overhead <= {TARGET_P95_MS:g} ms and no dropped frames")
    import os
    print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs "
          "(other processes on the machine compete with the server and the robots)")
    for r in results:
        so = r["server_overhead_ms"]
        cpu = r["server_cpu"]
        print(f"  {r['devices']} devices: the server process used {cpu['percent_of_one_core']}%"
              f" of one core ({cpu['ms_per_turn']} ms CPU per turn, the turn's audio "
              f"streaming included); the simulated robots' process "
              f"{cpu['robots_percent_of_one_core']}%")
        print(f"  {r['devices']} devices: overhead inside the server (its trace's first "
              f"sentence audio minus the critical path) p50/p95 {so['p50']:.1f} / "
              f"{so['p95']:.1f} ms; the rest is the robots' side of the sockets")
        parts = [f"{name} {v['p50']:.0f}/{v['p95']:.0f}"
                 for name, v in r["server_stages_ms"].items()]
        print(f"  {r['devices']} devices, server trace ms p50/p95 (instants: ms after end "
              f"of speech): " + ", ".join(parts))
    for r in results:
        for e in r["errors"]:
            print(f"  {r['devices']} devices: {e}")
    return 0
