"""``omoide bench tts``: how soon and how fast each offline voice speaks on this machine.

    omoide bench tts [--voice USE[:VOICE]]... [--rounds N] [--json]

Forty typical replies (reactions, recall answers with dates, advice, numbers;
``data/tts_replies_ja.txt``) are cut into sentences by the pipeline's own splitter
and spoken sentence by sentence, as a turn does, by each voice (default: OpenJTalk and,
when installed, Kokoro with each of its five voices). Reported per voice, from one run:

- first audio: the time to synthesise a reply's first sentence, which is what the
  turn waits for once the chat model has written it (p50/p95), and its difference to
  the first voice's (the offline default may add at most 300 ms at p50);
- real-time factor: synthesis time over the duration of the speech produced, over
  every sentence (p50/p95; below 1 is faster than real time).

Each voice is measured in turn, after one warm-up reply, ``--rounds`` times over the set.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.resources
import json
import os
import time
from typing import Any

FIRST_AUDIO_BUDGET_MS = 300.0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("tts", help="first-audio latency and real-time factor of the voices")
    p.add_argument("--voice", action="append", metavar="USE[:VOICE]",
                   help="voice to measure (repeatable; default: openjtalk and every kokoro"
                        " voice when installed); the first is the reference")
    p.add_argument("--rounds", type=int, default=1, help="passes over the replies per voice")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=lambda args: asyncio.run(_bench(args)))


def replies() -> list[list[str]]:
    """The bench's replies, each cut into sentences as the pipeline cuts them."""
    from omoide.pipeline.splitter import SentenceSplitter

    text = (importlib.resources.files("omoide_bench.benches") / "data" / "tts_replies_ja.txt"
            ).read_text(encoding="utf-8")
    out = []
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            splitter = SentenceSplitter()
            out.append(splitter.feed(line.strip()) + splitter.flush())
    return out


def default_voices() -> list[str]:
    import importlib.util

    voices = ["openjtalk"]
    if importlib.util.find_spec("omoide_tts_kokoro") is not None:
        voices += [f"kokoro:{v}" for v in ("jf_alpha", "jf_gongitsune", "jf_nezumi",
                                           "jf_tebukuro", "jm_kumo")]
    return voices


async def measure(tts: Any, sentences_by_reply: list[list[str]], rounds: int
                  ) -> dict[str, Any]:
    """First-sentence latency and per-sentence real-time factor of a started ``tts``."""
    from omoide_bench.benches._stats import percentiles

    await tts.synthesize(sentences_by_reply[0][0])  # warm-up
    first_ms: list[float] = []
    rtf: list[float] = []
    audio_s = synth_s = 0.0
    for _ in range(rounds):
        for sentences in sentences_by_reply:
            for i, sentence in enumerate(sentences):
                started = time.perf_counter()
                clip = await tts.synthesize(sentence)
                took = time.perf_counter() - started
                if i == 0:
                    first_ms.append(took * 1000)
                synth_s += took
                audio_s += clip.duration_s
                if clip.duration_s > 0:
                    rtf.append(took / clip.duration_s)
    return {"first_audio_ms": percentiles(first_ms),
            "rtf": {**percentiles(rtf, digits=3),
                    "overall": round(synth_s / audio_s, 3) if audio_s else float("nan")},
            "sentences": len(rtf), "speech_s": round(audio_s, 1)}


async def _bench(args: argparse.Namespace) -> int:
    from omoide_bench.benches._speech import build_component, voice_label, voice_spec

    voices = [voice_spec(v) for v in (args.voice or default_voices())]
    sentences = replies()
    load_before = os.getloadavg()
    rows: list[dict[str, Any]] = []
    for spec in voices:
        tts = build_component("tts", spec)
        started = time.perf_counter()
        await tts.start()
        start_s = time.perf_counter() - started
        try:
            row = {"voice": voice_label(spec), "start_s": round(start_s, 2),
                   **await measure(tts, sentences, args.rounds)}
        finally:
            await tts.stop()
        rows.append(row)
        if not args.json:
            print(f"  measured {row['voice']}", flush=True)
    reference = rows[0]["first_audio_ms"]["p50"]
    for row in rows:
        row["first_audio_p50_vs_reference_ms"] = round(row["first_audio_ms"]["p50"] - reference, 1)
        row["within_first_audio_budget"] = \
            row["first_audio_p50_vs_reference_ms"] <= FIRST_AUDIO_BUDGET_MS
    report = {"replies": len(sentences), "rounds": args.rounds, "cpus": os.cpu_count(),
              "load_average": {"before": load_before, "after": os.getloadavg()},
              "voices": rows}
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=1))
        return 0
    print(f"\nomoide bench tts: {report['replies']} replies x {args.rounds}, {report['cpus']}"
          f" CPUs, load average {load_before[0]:.2f} -> {report['load_average']['after'][0]:.2f}")
    print(f"{'voice':<22}{'first audio p50':>16}{'p95':>8}{'vs ref':>9}{'RTF p50':>9}"
          f"{'p95':>7}{'overall':>9}{'start s':>9}")
    for r in rows:
        flag = "" if r["within_first_audio_budget"] else "  (over the 300 ms budget)"
        print(f"{r['voice']:<22}{r['first_audio_ms']['p50']:>14.0f}ms{r['first_audio_ms']['p95']:>6.0f}"
              f"ms{r['first_audio_p50_vs_reference_ms']:>+7.0f}ms{r['rtf']['p50']:>9.3f}"
              f"{r['rtf']['p95']:>7.3f}{r['rtf']['overall']:>9.3f}{r['start_s']:>9.1f}{flag}")
    return 0
