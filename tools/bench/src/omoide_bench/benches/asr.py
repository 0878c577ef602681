"""``omoide bench asr``: speed and accuracy of the recogniser on this machine.

    omoide bench asr [--config FILE] [--setting K=V,...]... [--context-setting K=V,...]...
                     [--voice USE[:VOICE]]... [--limit N] [--vocabulary N] [--json]

Every sentence of the Japanese phrase set (120: statements, questions, names, places,
dates, numbers) is spoken by each voice — the config's TTS, plus the other offline voice
when installed (Kokoro next to OpenJTalk) — and transcribed by the config's ASR under
each ``--setting`` (overrides of the ``asr`` section; for Whisper the default grid is
the config's own setting, ``beam_size=5`` and ``threads=1``). Reported per voice and
setting, from one run:

- latency per utterance (p50/p95), p50 of the utterances of 2.5–3.5 s (the target is
  <= 1.0 s with the default setting on 2 cores), and the real-time factor;
- CER: character error rate over the whole set, after NFKC and without punctuation
  or spaces; and the reading CER, the same on kana readings (pyopenjtalk), which does
  not count 3時 against 三時 or 雪 against ゆき as errors.

With ``--stream``, each utterance of the first setting is also recognised while it is
"spoken": fed to ``asr.open_stream()`` in 60 ms frames at real time (``--stream-speed N``
feeds N times faster, and the report says so), with ``stream.finish()`` called right
after the last frame. Both paths are timed from the end of the audio to the final
transcript: for today's path that is the whole ``transcribe`` call (it starts when the
utterance is complete), for the stream only ``finish()`` (the background passes ran
while the audio arrived). Reported per voice: CER of both, the difference (target:
streaming <= today's + 0.01), end of audio -> final transcript p50/p95 of both and their
ratio, and how many utterances needed a decode at finish.

Then, for the first setting, memory-biased recognition: each utterance again with a
recognition context of ``--vocabulary`` words, as a person's memory vocabulary would
be — the entities the sentence names, hidden among entities of other sentences — under
each ``--context-setting`` (for Whisper: ``context_as=prompt`` and ``hotwords``).
Reported: the entity hit rate (entities spelled as in the phrase set) with and without
the context, how many context words appeared that were not said ("inserted"), CER.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

TARGET_SECONDS = (2.5, 3.5)
DEFAULT_WHISPER_GRID = ("", "beam_size=5", "threads=1")
DEFAULT_WHISPER_CONTEXTS = ("context_as=prompt", "context_as=hotwords")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("asr", help="ASR latency, real-time factor, CER and memory-biased"
                                   " entity recall on a Japanese phrase set")
    p.add_argument("--config", help="config whose asr and tts sections are used"
                                    " (default: configs/offline.yaml)")
    p.add_argument("--setting", action="append", metavar="K=V,...",
                   help="asr overrides to measure (repeatable; '' is the config's own)")
    p.add_argument("--context-setting", action="append", metavar="K=V,...",
                   help="asr overrides under which the memory context is measured"
                        " (repeatable; applied on top of the first --setting)")
    p.add_argument("--voice", action="append", metavar="USE[:VOICE]",
                   help="TTS that speaks the phrases (repeatable; default: the config's tts"
                        " and the other offline voice if installed)")
    p.add_argument("--limit", type=int, default=None, help="use only the first N phrases")
    p.add_argument("--vocabulary", type=int, default=32,
                   help="words in each utterance's memory context")
    p.add_argument("--no-context", action="store_true", help="skip the memory-context runs")
    p.add_argument("--stream", action="store_true",
                   help="also recognise each utterance while it is fed in real time"
                        " (open_stream) and compare with today's path")
    p.add_argument("--stream-speed", type=float, default=1.0, metavar="N",
                   help="feed the stream N times faster than real time (default 1)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=lambda args: asyncio.run(_bench(args)))


# -- metrics ---------------------------------------------------------------------------
def normalise(text: str) -> str:
    """NFKC, without spaces or punctuation (what CER compares). The long-vowel mark ー
    is kept: it is part of words (ラーメン)."""
    text = unicodedata.normalize("NFKC", text)
    return "".join(c for c in text if not _is_punctuation(c))


def _is_punctuation(c: str) -> bool:
    if c == "ー":
        return False
    category = unicodedata.category(c)
    return category[0] in ("P", "Z", "S") or c.isspace()


def character_error_rate(references: Sequence[str], hypotheses: Sequence[str]) -> float:
    """Edits over reference characters, over the whole set (jiwer)."""
    import jiwer

    refs = [normalise(r) for r in references]
    hyps = [normalise(h) for h in hypotheses]
    kept = [(r, h) for r, h in zip(refs, hyps, strict=True) if r]
    if not kept:
        return float("nan")
    return float(jiwer.cer([r for r, _ in kept], [h for _, h in kept]))


def reading(text: str) -> str:
    """Katakana reading of ``text`` (pyopenjtalk), punctuation dropped; "" without it."""
    try:
        import pyopenjtalk
    except ImportError:
        return ""
    clean = normalise(text)
    if not clean:
        return ""
    kana = pyopenjtalk.g2p(clean, kana=True)
    return normalise(kana if isinstance(kana, str) else "".join(kana))


def entity_hits(entities: Sequence[str], hypothesis: str) -> int:
    heard = normalise(hypothesis)
    return sum(1 for e in entities if normalise(e) in heard)


# -- runs ------------------------------------------------------------------------------
@dataclass
class Utterance:
    phrase: Any
    clip: Any
    context: tuple[str, ...] = ()


@dataclass
class RunResult:
    label: str
    voice: str
    hypotheses: list[str] = field(default_factory=list)
    latencies_s: list[float] = field(default_factory=list)
    durations_s: list[float] = field(default_factory=list)

    def summary(self, utterances: Sequence[Utterance], readings: dict[str, str]
                ) -> dict[str, Any]:
        from omoide_bench.benches._stats import percentiles

        refs = [u.phrase.text for u in utterances]
        lat_ms = [s * 1000 for s in self.latencies_s]
        rtf = [lat / dur for lat, dur in zip(self.latencies_s, self.durations_s, strict=True)]
        near = [lat for lat, dur in zip(lat_ms, self.durations_s, strict=True)
                if TARGET_SECONDS[0] <= dur <= TARGET_SECONDS[1]]
        out: dict[str, Any] = {
            "setting": self.label, "voice": self.voice, "utterances": len(refs),
            "latency_ms": percentiles(lat_ms),
            "latency_ms_p50_2.5-3.5s": percentiles(near)["p50"], "n_2.5-3.5s": len(near),
            "rtf": percentiles(rtf, digits=3),
            "cer": round(character_error_rate(refs, self.hypotheses), 4),
        }
        if reading("あ"):  # pyopenjtalk is installed
            ref_readings = [readings.setdefault(r, reading(r)) for r in refs]
            out["reading_cer"] = round(character_error_rate(
                ref_readings, [reading(h) for h in self.hypotheses]), 4)
        entities = [(u.phrase.entities, h) for u, h in zip(utterances, self.hypotheses,
                                                           strict=True) if u.phrase.entities]
        total = sum(len(e) for e, _ in entities)
        out["entity_hit_rate"] = round(sum(entity_hits(e, h) for e, h in entities)
                                       / max(1, total), 4)
        out["entities"] = total
        said = [normalise(u.phrase.text) for u in utterances]
        out["transcripts"] = [{"said": u.phrase.text, "heard": h}
                              for u, h in zip(utterances, self.hypotheses, strict=True)]
        out["inserted_context_words"] = sum(
            1 for u, h, s in zip(utterances, self.hypotheses, said, strict=True)
            for w in u.context if normalise(w) not in s and normalise(w) in normalise(h))
        return out


def with_contexts(utterances: Sequence[Utterance], size: int, seed: int = 11
                  ) -> list[Utterance]:
    """Each utterance with a memory context: its own entities among others of the set."""
    pool = sorted({e for u in utterances for e in u.phrase.entities})
    out = []
    for i, u in enumerate(utterances):
        rnd = random.Random(seed + i)
        said = normalise(u.phrase.text)
        others = [e for e in pool if normalise(e) not in said]
        words = list(u.phrase.entities) + rnd.sample(others, max(0, min(
            len(others), size - len(u.phrase.entities))))
        rnd.shuffle(words)
        out.append(Utterance(u.phrase, u.clip, tuple(words[:size])))
    return out


async def _transcribe_all(asr: Any, utterances: Sequence[Utterance], label: str,
                          voice: str, use_context: bool) -> RunResult:
    from omoide.components import RecognitionContext

    result = RunResult(label, voice)
    await asr.transcribe(utterances[0].clip)  # warm-up, not timed
    for u in utterances:
        context = RecognitionContext.of(u.context) if use_context else None
        started = time.perf_counter()
        transcript = await asr.transcribe(u.clip, context)
        result.latencies_s.append(time.perf_counter() - started)
        result.durations_s.append(u.clip.duration_s)
        result.hypotheses.append(transcript.text)
    return result


FRAME_S = 0.06


async def _stream_all(asr: Any, utterances: Sequence[Utterance], label: str, voice: str,
                      speed: float) -> tuple[RunResult, int]:
    """Each utterance fed in 60 ms frames on a real-time schedule (``speed`` times
    faster), timed from the last frame to the final transcript. Also returns how many
    finishes decoded again (``final_decoded`` when the stream reports it)."""
    result = RunResult(label, voice)
    decoded = 0
    for u in utterances:
        stream = asr.open_stream(sample_rate=u.clip.sample_rate)
        step = int(u.clip.sample_rate * FRAME_S)
        loop = asyncio.get_running_loop()
        begun = loop.time()
        for k, i in enumerate(range(0, u.clip.samples.size, step)):
            stream.feed(u.clip.samples[i:i + step])
            await asyncio.sleep(max(0.0, begun + (k + 1) * FRAME_S / speed - loop.time()))
        started = time.perf_counter()
        transcript = await stream.finish()
        result.latencies_s.append(time.perf_counter() - started)
        result.durations_s.append(u.clip.duration_s)
        result.hypotheses.append(transcript.text)
        decoded += int(getattr(stream, "final_decoded", True))
    return result, decoded


def stream_comparison(today: dict[str, Any], streamed: dict[str, Any], decoded: int,
                      speed: float) -> dict[str, Any]:
    """One voice's streaming row beside today's path (CER and end-of-audio latency)."""
    p50, p95 = streamed["latency_ms"]["p50"], streamed["latency_ms"]["p95"]
    return {"voice": today["voice"], "setting": today["setting"], "speed": speed,
            "cer_today": today["cer"], "cer_stream": streamed["cer"],
            "cer_delta": round(streamed["cer"] - today["cer"], 4),
            "ms_today": today["latency_ms"], "ms_stream": streamed["latency_ms"],
            "ratio_p50": round(p50 / today["latency_ms"]["p50"], 3)
            if today["latency_ms"]["p50"] else None,
            "ratio_p95": round(p95 / today["latency_ms"]["p95"], 3)
            if today["latency_ms"]["p95"] else None,
            "decoded_at_finish": decoded, "utterances": streamed["utterances"],
            "transcripts": streamed["transcripts"]}


async def _speak_set(voice: dict[str, Any], phrases: Sequence[Any]) -> list[Utterance]:
    from omoide_bench.benches._speech import build_component, synthesise

    tts = build_component("tts", voice)
    await tts.start()
    try:
        return [Utterance(p, await synthesise(tts, p.text)) for p in phrases]
    finally:
        await tts.stop()


def _default_voices(tts: dict[str, Any]) -> list[dict[str, Any]]:
    import importlib.util

    voices = [tts]
    other = {"openjtalk": ("kokoro", "omoide_tts_kokoro"),
             "kokoro": ("openjtalk", "omoide_tts_openjtalk")}.get(tts.get("use", ""))
    if other and importlib.util.find_spec(other[1]) is not None:
        voices.append({"use": other[0]})
    return voices


async def _bench(args: argparse.Namespace) -> int:
    from omoide_bench.benches._speech import (
        config_stage,
        label,
        load_phrases,
        parse_overrides,
        voice_label,
        voice_spec,
    )

    base = config_stage(args.config, "asr")
    whisper = base.get("use") == "whisper"
    settings = [parse_overrides(s) for s in
                (args.setting or (DEFAULT_WHISPER_GRID if whisper else ("",)))]
    contexts = [] if args.no_context else [parse_overrides(s) for s in (
        args.context_setting or (DEFAULT_WHISPER_CONTEXTS if whisper else ("",)))]
    voices = [voice_spec(v) for v in args.voice] if args.voice else \
        _default_voices(config_stage(args.config, "tts"))
    phrases = load_phrases(args.limit)
    load_before = os.getloadavg()
    spoken: dict[str, list[Utterance]] = {}
    for voice in voices:
        spoken[voice_label(voice)] = await _speak_set(voice, phrases)
    readings: dict[str, str] = {}
    rows: list[dict[str, Any]] = []
    context_rows: list[dict[str, Any]] = []
    stream_rows: list[dict[str, Any]] = []
    from omoide_bench.benches._speech import build_component

    for i, overrides in enumerate(settings):
        asr = build_component("asr", {**base, **overrides})
        await asr.start()
        try:
            for name, utterances in spoken.items():
                run = await _transcribe_all(asr, utterances, label(overrides), name, False)
                rows.append(run.summary(utterances, readings))
                if i == 0 and args.stream:
                    live, decoded = await _stream_all(asr, utterances, label(overrides), name,
                                                      args.stream_speed)
                    stream_rows.append(stream_comparison(
                        rows[-1], live.summary(utterances, readings), decoded,
                        args.stream_speed))
                if i == 0 and contexts:
                    context_rows.append({**run.summary(with_contexts(
                        utterances, args.vocabulary), readings), "context": "none"})
                _progress(rows[-1], args.json)
        finally:
            await asr.stop()
        if i == 0:
            for extra in contexts:
                merged = {**overrides, **extra}
                asr = build_component("asr", {**base, **merged})
                await asr.start()
                try:
                    for name, utterances in spoken.items():
                        biased = with_contexts(utterances, args.vocabulary)
                        run = await _transcribe_all(asr, biased, label(merged), name, True)
                        context_rows.append({**run.summary(biased, readings),
                                             "context": label(extra)})
                        _progress(context_rows[-1], args.json)
                finally:
                    await asr.stop()
    report = {"asr": base, "voices": [voice_label(v) for v in voices],
              "phrases": len(phrases), "vocabulary": args.vocabulary,
              "cpus": os.cpu_count(), "load_average": {"before": load_before,
                                                       "after": os.getloadavg()},
              "settings": rows, "memory_context": context_rows, "streaming": stream_rows}
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=1))
    else:
        _print_report(report)
    return 0


def _progress(row: dict[str, Any], quiet: bool) -> None:
    if not quiet:
        print(f"  measured {row['voice']} / {row['setting']}"
              f"{' / context ' + row['context'] if 'context' in row else ''}", flush=True)


def _print_report(report: dict[str, Any]) -> None:
    print(f"\nomoide bench asr: {report['asr']}, {report['phrases']} phrases,"
          f" voices {', '.join(report['voices'])}; {report['cpus']} CPUs, load average"
          f" {report['load_average']['before'][0]:.2f} -> {report['load_average']['after'][0]:.2f}")
    print(f"\n{'voice':<16}{'setting':<22}{'p50 ms':>8}{'p95 ms':>8}{'p50 3s':>8}"
          f"{'RTF p50':>9}{'RTF p95':>9}{'CER':>7}{'rdgCER':>8}{'entity':>8}")
    for r in report["settings"]:
        print(f"{r['voice']:<16}{r['setting']:<22}{r['latency_ms']['p50']:>8.0f}"
              f"{r['latency_ms']['p95']:>8.0f}{r['latency_ms_p50_2.5-3.5s']:>8.0f}"
              f"{r['rtf']['p50']:>9.2f}{r['rtf']['p95']:>9.2f}{r['cer']:>7.3f}"
              f"{r.get('reading_cer', float('nan')):>8.3f}{r['entity_hit_rate']:>8.3f}")
    if report["streaming"]:
        _print_streaming(report["streaming"])
    if report["memory_context"]:
        print(f"\nmemory context ({report['vocabulary']} words per utterance: its own entities"
              " among others)")
        print(f"{'voice':<16}{'context':<24}{'entity hit':>11}{'inserted':>9}{'CER':>7}"
              f"{'rdgCER':>8}{'p50 ms':>8}")
        for r in report["memory_context"]:
            print(f"{r['voice']:<16}{r['context']:<24}{r['entity_hit_rate']:>11.3f}"
                  f"{r['inserted_context_words']:>9}{r['cer']:>7.3f}"
                  f"{r.get('reading_cer', float('nan')):>8.3f}{r['latency_ms']['p50']:>8.0f}")


def _print_streaming(rows: Sequence[dict[str, Any]]) -> None:
    speed = rows[0]["speed"]
    print("\nrecognition while speaking (60 ms frames, "
          + ("real time" if speed == 1 else f"{speed:g}x faster than real time")
          + "): end of audio -> final transcript")
    print(f"{'voice':<16}{'CER today':>10}{'stream':>8}{'delta':>8}{'p50 today':>11}"
          f"{'p50 strm':>10}{'p95 today':>11}{'p95 strm':>10}{'ratio p50':>10}{'decoded':>9}")
    for r in rows:
        print(f"{r['voice']:<16}{r['cer_today']:>10.3f}{r['cer_stream']:>8.3f}"
              f"{r['cer_delta']:>+8.3f}{r['ms_today']['p50']:>11.0f}{r['ms_stream']['p50']:>10.0f}"
              f"{r['ms_today']['p95']:>11.0f}{r['ms_stream']['p95']:>10.0f}"
              f"{r['ratio_p50'] or float('nan'):>10.3f}"
              f"{r['decoded_at_finish']:>5}/{r['utterances']}")
