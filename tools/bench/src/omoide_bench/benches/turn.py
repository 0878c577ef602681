"""``omoide bench turn``: does the turn stage tell a finished sentence from a pause?

    omoide bench turn [--config FILE] [--setting K=V,...]... [--voice USE[:VOICE]]...
                      [--limit N] [--pause-ms LO-HI] [--json]

Each sentence of the phrase set is cut in two at a phrase boundary near its middle (its
own 「、」, else after a particle: 「来週の土曜日に、友達と箱根に行くんだ」), spoken whole by each
voice (OpenJTalk and, when installed, Kokoro), and the short pause the voice leaves at
the cut is stretched to a mid-sentence pause of ``--pause-ms`` (600-900 ms, longer than
the VAD's end of speech). The recording is fed to the config's VAD in 60 ms frames, as
the StackChan device feeds it, and at every end of speech the config's turn detector
(with each ``--setting`` of its section) judges the utterance so far, from its start
less the device's 300 ms pre-roll to where the voice stopped. A judgement at the
sentence's end is of the class ``complete`` (finished is right); one at any earlier
stop, the stretched pause or a shorter one the VAD also hears with a short silence, of
the class ``cut`` (unfinished is right). Reported per voice and setting:

- how often each class is judged finished, and the mean probability;
- the judgement's latency (the ``finished_probability`` call, p50/p95);
- when the turn section reads text (``text_complete_silence_ms``, or ``--text``): what
  the config's recogniser hears up to each stop (a stream fed the audio up to there,
  asked ``heard_so_far`` as the device asks it at a pause; one pass, where the device's
  stream would have settled its first words in earlier passes), how its end reads
  (complete, open, neither) at the sentences' ends and inside them; the detector's wait
  is then the one for the judgement and that text;
- for ceilings (``max_silence_ms``) from 600 to 2,000 ms: the sentences whose turn would
  end inside them (at a stop whose silence outlasts what the detector's judgement waits:
  ``silence_to_wait_ms``) and the time from the end of a complete sentence to the end of
  its turn (p50/p95: the VAD's silence plus the judgement, or the wait when longer),
  beside silence alone.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

SAMPLE_RATE = 16000
FRAME_S = 0.06
PRE_ROLL_S = 0.3
"""Audio the device keeps before the VAD's start of speech (StackChan's pre_roll_ms)."""
LEAD_S, TRAIL_S = 0.5, 2.0
NOISE_RMS = 3e-4
"""A quiet room under the speech (-70 dBFS), so silence is not digital zero."""
CEILINGS_MS = (600, 800, 1000, 1200, 1500, 2000)
PARTICLE_KINDS = {"格助詞", "係助詞", "接続助詞", "副助詞"}
CONTENT = {"名詞", "動詞", "形容詞", "副詞", "代名詞", "形状詞", "連体詞", "接頭辞"}


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("turn", help="end of turn: finished sentences against mid-sentence"
                                    " pauses, judgement latency, the ceiling's trade-off")
    p.add_argument("--config", help="config whose vad, turn and tts sections are used"
                                    " (default: configs/offline.yaml)")
    p.add_argument("--setting", action="append", metavar="K=V,...",
                   help="overrides of the turn section (repeatable; default: as configured)")
    p.add_argument("--voice", action="append", metavar="USE[:VOICE]",
                   help="voice (repeatable; default: openjtalk, and kokoro when installed)")
    p.add_argument("--vad-silence", action="append", type=int, metavar="MS",
                   help="the VAD's min_silence_ms (repeatable: each is measured on the same"
                        " recordings; default: as configured)")
    p.add_argument("--limit", type=int, default=None, help="use only the first N phrases")
    p.add_argument("--pause-ms", default="600-900", metavar="LO-HI",
                   help="length of the mid-sentence pauses, drawn uniformly")
    p.add_argument("--text", action="store_true",
                   help="recognise the text up to each stop even when no setting reads it")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=lambda args: asyncio.run(_bench(args)))


def split_sentence(text: str) -> tuple[str, str] | None:
    """``text`` cut at a phrase boundary near its middle: at its first 「、」, else after
    the particle closest to the middle that a content word follows (not の). None when
    there is no such boundary."""
    if "、" in text.strip("、"):
        head, _, tail = text.partition("、")
        return head, tail
    from sudachipy import dictionary

    words = list(dictionary.Dictionary().tokenizer().tokenize(text))
    best: tuple[float, int] | None = None
    at = 0
    for word, following in itertools.pairwise(words):
        at += len(word.surface())
        kind = word.part_of_speech()
        if kind[0] == "助詞" and kind[1] in PARTICLE_KINDS and word.surface() != "の" \
                and following.part_of_speech()[0] in CONTENT and 3 <= at <= len(text) - 3:
            distance = abs(at - len(text) / 2)
            if best is None or distance < best[0]:
                best = (distance, at)
    return None if best is None else (text[:best[1]], text[best[1]:])


def find_gap(samples: np.ndarray, near: float) -> tuple[int, int] | None:
    """The quiet stretch inside ``samples`` (at least 40 ms below 2 % of the loudest
    10 ms) whose middle is closest to the fraction ``near`` of the recording."""
    hop = SAMPLE_RATE // 100
    frames = samples[:len(samples) // hop * hop].reshape(-1, hop).astype(np.float64)
    quiet = np.sqrt((frames ** 2).mean(axis=1)) < 0.02 * np.sqrt((frames ** 2).mean(axis=1)
                                                                  ).max()
    runs: list[tuple[int, int]] = []
    i = 0
    while i < len(quiet):
        j = i
        while j < len(quiet) and quiet[j]:
            j += 1
        if j - i >= 4 and i > 5 and j < len(quiet) - 5:
            runs.append((i, j))
        i = j + 1 if j == i else j
    if not runs:
        return None
    i, j = min(runs, key=lambda r: abs((r[0] + r[1]) / 2 / len(quiet) - near))
    return i * hop, j * hop


@dataclass(frozen=True)
class Sample:
    """One spoken sentence with its mid-sentence pause stretched to ``pause_s``."""

    voice: str
    text: str
    stream: np.ndarray
    pause_at: int
    """Where the first half's voice stops (samples into ``stream``)."""
    pause_s: float


def stretched(voice: str, text: str, head: str, samples: np.ndarray, pause_s: float,
              rng: np.random.Generator) -> Sample | None:
    """``samples`` (the sentence spoken whole, 16 kHz) with the gap at the cut replaced by
    ``pause_s`` of quiet room, quiet before and after; None when no gap is found."""
    gap = find_gap(samples, len(head) / max(1, len(text) - 1))
    if gap is None:
        return None

    def room(n: int) -> np.ndarray:
        return (rng.standard_normal(n) * NOISE_RMS).astype(np.float32)

    first, second = samples[:gap[0]], samples[gap[1]:]
    stream = np.concatenate([room(int(LEAD_S * SAMPLE_RATE)), first + room(len(first)),
                             room(int(pause_s * SAMPLE_RATE)), second + room(len(second)),
                             room(int(TRAIL_S * SAMPLE_RATE))])
    return Sample(voice, text, stream, int(LEAD_S * SAMPLE_RATE) + len(first), pause_s)


@dataclass(frozen=True)
class Stop:
    """One place the VAD heard the voice stop, as the device's turn stage sees it."""

    probability: float
    """The judgement there (NaN: it failed, and the device falls back to silence alone)."""
    silence_ms: float
    """Silence from the voice stopping to its start again (inf: nothing followed)."""
    final: bool
    """The sentence's end (finished is right); every earlier stop is inside it."""
    text: str | None = None
    """What the recogniser heard up to the stop (None: not recognised)."""


@dataclass
class Judgements:
    """One voice and setting: probabilities and latencies per class, each sentence's
    stops."""

    voice: str
    setting: str
    probabilities: dict[str, list[float]] = field(
        default_factory=lambda: {"complete": [], "cut": []})
    latencies_ms: list[float] = field(default_factory=list)
    pauses_s: list[float] = field(default_factory=list)
    stops: list[list[Stop]] = field(default_factory=list)
    """Per sentence, every end of speech the VAD reported, in order."""
    failed: dict[str, int] = field(default_factory=lambda: {"complete": 0, "cut": 0})


Hearing = Callable[[np.ndarray], Awaitable[str | None]]
"""What the recogniser hears in the audio up to a stop."""


def heard_by(asr: Any, cache: dict[tuple[int, int], str | None]) -> Hearing:
    """``asr``'s ``heard_so_far`` of a stream fed the audio at once (kept per audio: the
    same stops recur across settings)."""
    async def hear(audio: np.ndarray) -> str | None:
        key = (len(audio), hash(audio.tobytes()))
        if key not in cache:
            async with asr.open_stream(sample_rate=SAMPLE_RATE) as stream:
                stream.feed(audio)
                cache[key] = await stream.heard_so_far()
        return cache[key]
    return hear


async def judge(vad: Any, detector: Any, sample: Sample, into: Judgements,
                hear: Hearing | None = None) -> None:
    """Feed ``sample`` to the VAD in 60 ms frames; judge at every end of speech, as the
    device does, each from the utterance's start less the pre-roll (and, with ``hear``,
    recognise the same audio)."""
    from omoide.api import ComponentError

    detector_input = vad.new_detector()
    step = int(FRAME_S * SAMPLE_RATE)
    start: int | None = None
    stops: list[tuple[int, float, float]] = []   # (where, probability, silence ms)
    texts: list[str | None] = []
    for i in range(0, len(sample.stream), step):
        for event in detector_input.push(sample.stream[i:i + step]):
            at = int(event.at_s * SAMPLE_RATE)
            if event.kind == "speech_start":
                if start is None:
                    start = at
                elif stops and stops[-1][2] == float("inf"):
                    stops[-1] = (stops[-1][0], stops[-1][1],
                                 (at - stops[-1][0]) * 1000 / SAMPLE_RATE)
            elif event.kind == "speech_end" and start is not None:
                audio = sample.stream[max(0, start - int(PRE_ROLL_S * SAMPLE_RATE)):at]
                began = time.perf_counter()
                try:
                    probability = await detector.finished_probability(audio)
                except ComponentError:   # too slow or failed: silence alone decides
                    probability = float("nan")
                into.latencies_ms.append((time.perf_counter() - began) * 1000)
                stops.append((at, probability, float("inf")))
                texts.append(await hear(audio) if hear is not None else None)
    judged = [Stop(p, silence, k == len(stops) - 1, texts[k])
              for k, (_, p, silence) in enumerate(stops)]
    for stop in judged:
        kind = "complete" if stop.final else "cut"
        if stop.probability != stop.probability:
            into.failed[kind] += 1
        else:
            into.probabilities[kind].append(stop.probability)
    into.pauses_s.append(sample.pause_s)
    into.stops.append(judged)


Wait = Callable[[float, int, str | None], float]
"""Silence (ms) after the voice stops that ends the turn, for a judgement, a ceiling and
the text heard up to the stop."""


def threshold_wait(threshold: float) -> Wait:
    """The core's rule: at once when judged finished, else the ceiling."""
    def wait(p: float, ceiling: int, _text: str | None = None) -> float:
        return 0.0 if p >= threshold else float(ceiling)
    return wait


def detector_wait(detector: Any) -> Wait:
    """``detector.silence_to_wait_ms``, its ceiling replaced by the one asked about."""
    def wait(p: float, ceiling: int, text: str | None = None) -> float:
        ms = detector.silence_to_wait_ms(p, text)
        return float(ceiling) if ms == detector.config.max_silence_ms else float(ms)
    return wait


def text_ends(run: Judgements) -> dict[str, dict[str, int]] | None:
    """How the text heard reads at the sentences' ends and inside them (None: no text)."""
    from omoide.components.turn import sentence_end

    stops = [s for sentence in run.stops for s in sentence]
    if all(s.text is None for s in stops):
        return None
    out: dict[str, dict[str, int]] = {}
    for kind, final in (("complete", True), ("cut", False)):
        ends = [str(sentence_end(s.text or "")) for s in stops if s.final == final]
        out[kind] = {end: ends.count(end) for end in ("complete", "request", "open", "None")}
    return out


def summary(run: Judgements, wait: Wait, threshold: float, vad_silence_ms: int,
            fallback_ms: int = 700) -> dict[str, Any]:
    """Per-class rates, the judgement latency and the ceiling trade-off of one run."""
    from omoide_bench.benches._stats import percentiles

    classes = {kind: {"judged": len(ps), "judged_finished": sum(p >= threshold for p in ps),
                      "rate_finished": round(sum(p >= threshold for p in ps) / len(ps), 3)
                      if ps else None,
                      "mean_probability": round(float(np.mean(ps)), 3) if ps else None,
                      "failed": run.failed[kind]}
               for kind, ps in run.probabilities.items()}
    latency = percentiles(run.latencies_ms, digits=1)
    decide_ms = vad_silence_ms + float(np.median(run.latencies_ms)) if run.latencies_ms else 0
    ceilings = [ceiling_row(run, wait, ceiling, decide_ms, fallback_ms)
                for ceiling in CEILINGS_MS]
    silence_cut = sum(any(not s.final for s in stops) for stops in run.stops)
    return {"voice": run.voice, "setting": run.setting, "sentences": len(run.pauses_s),
            "classes": classes, "latency_ms": latency, "ceilings": ceilings,
            "silence_only": {"pauses_cut": silence_cut,
                             "end_of_turn_ms": float(vad_silence_ms)},
            "text_ends": text_ends(run),
            "stops": [[[round(s.probability, 3), s.silence_ms, s.final, s.text] for s in stops]
                      for stops in run.stops]}


def ceiling_row(run: Judgements, wait: Wait, ceiling_ms: int, decide_ms: float,
                fallback_ms: int = 700) -> dict[str, Any]:
    """With ``ceiling_ms``: sentences whose turn would end inside them (at a stop whose
    silence outlasts its wait), and end of speech -> end of turn at the sentences' ends
    (``decide_ms``: the VAD's silence plus the judgement's median latency; a failed
    judgement waits ``fallback_ms``, as the device does)."""
    from omoide_bench.benches._stats import percentiles

    def waited(stop: Stop) -> float:
        if stop.probability != stop.probability:
            return float(fallback_ms)
        return wait(stop.probability, ceiling_ms, stop.text)

    cut = sum(any(not s.final and s.silence_ms > waited(s) for s in stops)
              for stops in run.stops)
    ends = [max(decide_ms, waited(s)) for stops in run.stops for s in stops if s.final]
    return {"max_silence_ms": ceiling_ms, "pauses_cut": cut,
            "end_of_turn_ms": percentiles(ends, digits=0)}


async def _samples(voice: dict[str, Any], phrases: Sequence[Any], pause_ms: tuple[int, int],
                   ) -> list[Sample]:
    from omoide.audio import resample
    from omoide_bench.benches._speech import build_component, voice_label

    rng = np.random.default_rng(0)
    tts = build_component("tts", voice)
    await tts.start()
    out: list[Sample] = []
    try:
        for phrase in phrases:
            halves = split_sentence(phrase.text)
            if halves is None:
                continue
            spoken = resample(await tts.synthesize("、".join(halves)), SAMPLE_RATE).samples
            pause_s = rng.uniform(*pause_ms) / 1000
            sample = stretched(voice_label(voice), phrase.text, halves[0],
                               np.asarray(spoken, np.float32), pause_s, rng)
            if sample is not None:
                out.append(sample)
    finally:
        await tts.stop()
    return out


def default_voices() -> list[str]:
    import importlib.util

    voices = ["openjtalk"]
    if importlib.util.find_spec("omoide_tts_kokoro") is not None:
        voices.append("kokoro:jf_alpha")
    return voices


async def _bench(args: argparse.Namespace) -> int:
    from omoide_bench.benches._speech import (
        build_component,
        config_stage,
        label,
        load_phrases,
        parse_overrides,
        voice_spec,
    )

    lo, _, hi = args.pause_ms.partition("-")
    pause_ms = (int(lo), int(hi or lo))
    phrases = load_phrases(args.limit)
    load_before = os.getloadavg()
    samples = [s for v in (args.voice or default_voices())
               for s in await _samples(voice_spec(v), phrases, pause_ms)]
    vad_base = config_stage(args.config, "vad")
    silences = args.vad_silence or [None]
    base = config_stage(args.config, "turn")
    settings = [parse_overrides(s) for s in (args.setting or [""])]
    reads_text = args.text or any({**base, **o}.get("text_complete_silence_ms") is not None
                                  for o in settings)
    asr = build_component("asr", config_stage(args.config, "asr")) if reads_text else None
    if asr is not None:
        await asr.start()
    hear = heard_by(asr, {}) if asr is not None else None
    rows: list[dict[str, Any]] = []
    for silence in silences:
        vad = build_component("vad", vad_base if silence is None
                              else {**vad_base, "min_silence_ms": silence})
        await vad.start()
        try:
            for overrides in settings:
                rows += await _measure(build_component("turn", {**base, **overrides}), vad,
                                       samples, label(overrides), hear)
                if not args.json:
                    print(f"  measured {label(overrides)}, VAD silence "
                          f"{vad.config.min_silence_ms} ms", flush=True)
        finally:
            await vad.stop()
    if asr is not None:
        await asr.stop()
    report = {"turn": base, "vad_min_silence_ms": sorted({r["vad_min_silence_ms"]
                                                         for r in rows}),
              "pause_ms": list(pause_ms), "phrases": len(phrases), "cpus": os.cpu_count(),
              "load_average": {"before": load_before, "after": os.getloadavg()},
              "runs": rows}
    print(json.dumps(report, ensure_ascii=False, indent=1) if args.json else render(report))
    return 0


async def _measure(detector: Any, vad: Any, samples: Sequence[Sample], setting: str,
                   hear: Hearing | None = None) -> list[dict[str, Any]]:
    """Each voice's samples judged by ``detector`` (started here, warmed up once)."""
    await detector.start()
    try:
        await detector.finished_probability(samples[0].stream[:SAMPLE_RATE])
        rows = []
        for voice in dict.fromkeys(s.voice for s in samples):
            run = Judgements(voice, setting)
            for sample in (s for s in samples if s.voice == voice):
                await judge(vad, detector, sample, run, hear)
            rows.append({**summary(run, detector_wait(detector), detector.config.threshold,
                                   vad.config.min_silence_ms,
                                   detector.config.fallback_silence_ms),
                         "vad_min_silence_ms": vad.config.min_silence_ms})
        return rows
    finally:
        await detector.stop()


def render(report: dict[str, Any]) -> str:
    """The report as a table."""
    load = report["load_average"]
    lines = [f"\nomoide bench turn: {report['turn']}, {report['phrases']} phrases, pauses "
             f"{report['pause_ms'][0]}-{report['pause_ms'][1]} ms; {report['cpus']} CPUs,"
             f" load average "
             f"{load['before'][0]:.2f} -> {load['after'][0]:.2f}"]
    for r in report["runs"]:
        complete, cut = r["classes"]["complete"], r["classes"]["cut"]
        lines += [f"\n{r['voice']} / {r['setting']} / VAD silence "
                  f"{r['vad_min_silence_ms']} ms: {r['sentences']} sentences",
                  f"  judged finished: complete {complete['judged_finished']}/"
                  f"{complete['judged']}, cut at the pause {cut['judged_finished']}/"
                  f"{cut['judged']} (failed {complete['failed']} + {cut['failed']});"
                  f" judgement p50 {r['latency_ms']['p50']:.0f} ms, p95 "
                  f"{r['latency_ms']['p95']:.0f} ms",
                  f"  {'ceiling ms':>11}{'pauses cut':>12}{'end p50 ms':>12}{'end p95 ms':>12}"]
        for c in r["ceilings"]:
            lines.append(f"  {c['max_silence_ms']:>11}{c['pauses_cut']:>8}/{r['sentences']:<3}"
                         f"{c['end_of_turn_ms']['p50']:>12.0f}{c['end_of_turn_ms']['p95']:>12.0f}")
        silence = r["silence_only"]
        lines.append(f"  {'silence':>11}{silence['pauses_cut']:>8}/{r['sentences']:<3}"
                     f"{silence['end_of_turn_ms']:>12.0f}{silence['end_of_turn_ms']:>12.0f}")
        if r.get("text_ends"):
            lines.append("  text heard ends complete/request/open/neither: at the sentences'"
                         " ends " +
                         "/".join(str(n) for n in r["text_ends"]["complete"].values()) +
                         ", inside them " +
                         "/".join(str(n) for n in r["text_ends"]["cut"].values()))
    return "\n".join(lines)
