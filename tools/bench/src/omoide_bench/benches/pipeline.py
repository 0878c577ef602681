"""``omoide bench pipeline``: the framework's overhead over the components' critical path.

N turns go through the real :class:`Assistant` with test-double components of fixed
latency (ASR, chat first token then per token, TTS per sentence). For each turn the
critical path is computed from the components' own durations as they really ran
(the doubles record them, so timer granularity of the event loop is not charged to
the framework): ASR, then the chat until each sentence's last token, then its
synthesis (``tts_lookahead`` at a time), delivered in order. Overhead is what the
measured end-of-speech -> first audio and -> done add to that.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from omoide_bench.benches._stats import percentiles


class FirstAudioSink:
    """Reads a turn's events as a device would; notes when the first sentence with
    audio was delivered."""

    def __init__(self) -> None:
        self.first_audio: float | None = None

    async def on_event(self, event: Any) -> None:
        from omoide.components.turn_events import Sentence

        if self.first_audio is None and isinstance(event, Sentence) \
                and event.audio is not None:
            self.first_audio = time.perf_counter()


REPLY = ("[happy] うん、それはいいね！今日はとても楽しかったよ。"
         "また明日も一緒に遊ぼうね。おやすみなさい。")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("pipeline", help="turn pipeline overhead over the critical path")
    p.add_argument("--turns", type=int, default=30)
    p.add_argument("--asr-ms", type=float, default=300)
    p.add_argument("--first-token-ms", type=float, default=500)
    p.add_argument("--token-ms", type=float, default=30)
    p.add_argument("--tts-ms", type=float, default=200)
    p.add_argument("--chunk-chars", type=int, default=2, help="characters per streamed token")
    p.add_argument("--tool-ms", type=float, default=0,
                   help="latency of the tool in the tool-round pass")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_run)


def critical_path(sentences_end_token: list[int], *, asr: float, token_times: list[float],
                  tts: list[float], lookahead: int) -> tuple[float, float]:
    """(first audio, done) in ms from end of speech, from component durations alone.

    ``token_times``: when each chat piece arrived after the chat call started;
    ``tts``: each sentence's synthesis time.
    """
    complete = [asr + token_times[i] for i in sentences_end_token]
    slots = [0.0] * lookahead
    ends: list[float] = []
    for t, d in zip(complete, tts, strict=True):
        k = int(np.argmin(slots))
        start = max(t, slots[k])
        slots[k] = start + d
        ends.append(start + d)
    delivered = 0.0
    for e in ends:  # sentences are delivered in order
        delivered = max(delivered, e)
    return ends[0], delivered


def _sentence_end_tokens(reply: str, chunk: int, comma_split: bool) -> list[int]:
    from omoide.pipeline.emotion import StreamingEmotionParser
    from omoide.pipeline.splitter import SentenceSplitter

    splitter = SentenceSplitter(first_sentence_comma_split=comma_split)
    parser = StreamingEmotionParser()
    ends: list[int] = []
    pieces = [reply[i:i + chunk] for i in range(0, len(reply), chunk)]
    for i, piece in enumerate(pieces):
        tagged = parser.feed(piece)
        if tagged is not None:
            ends += [i] * len(splitter.feed(tagged.text))
    ends += [len(pieces) - 1] * len(splitter.flush())
    return ends


async def _bench(args: argparse.Namespace) -> dict[str, Any]:
    from omoide.config import AssistantSettings
    from omoide.pipeline import sections
    from omoide.pipeline.assistant import Assistant
    from omoide.pipeline.turn import TurnRequest
    from omoide.plugins import PluginRegistry
    from omoide.testing.doubles import FakeASR, FakeChat, FakeTTS, MemoryServiceDouble
    from omoide.types import AudioClip

    registry = PluginRegistry()
    registry.pm.register(sections)
    settings = AssistantSettings()

    ends = _sentence_end_tokens(REPLY, args.chunk_chars, settings.first_sentence_comma_split)
    asr, chat, tts = (FakeASR(FakeASR.Config(latency_ms=args.asr_ms, text="今日はどうだった？")),
                      FakeChat(FakeChat.Config(reply=REPLY, first_token_ms=args.first_token_ms,
                                               per_token_ms=args.token_ms,
                                               chunk_chars=args.chunk_chars)),
                      FakeTTS(FakeTTS.Config(latency_ms=args.tts_ms)))
    assistant = Assistant(settings=settings, asr=asr, chat=chat, tts=tts,
                          memory=MemoryServiceDouble(), hooks=registry.pm)
    clip = AudioClip(np.full(16000, 0.1, dtype=np.float32), 16000)
    firsts, dones, over_first, over_done, crit = [], [], [], [], []
    for i in range(args.turns):
        sink = FirstAudioSink()
        tts.durations_ms.clear()
        t0 = time.perf_counter()
        await assistant.run_turn(TurnRequest(user=f"u{i % 3}", audio=clip,
                                             end_of_speech_at=t0), sink)
        done = time.perf_counter()
        assert sink.first_audio is not None
        c_first, c_done = critical_path(
            ends, asr=asr.durations_ms[-1], token_times=chat.token_times_ms,
            tts=tts.durations_ms, lookahead=settings.tts_lookahead)
        firsts.append((sink.first_audio - t0) * 1000)
        dones.append((done - t0) * 1000)
        over_first.append(firsts[-1] - c_first)
        over_done.append(dones[-1] - c_done)
        crit.append((c_first, c_done))
    serial = args.asr_ms + args.first_token_ms + (
        len(range(0, len(REPLY), args.chunk_chars)) - 1) * args.token_ms + len(ends) * args.tts_ms
    tool_round = await _tool_round(args, assistant, asr, tts, clip)
    plain_first = percentiles(firsts)
    tool_round["first_audio_added_ms"] = {
        k: round(tool_round["end_of_speech_to_first_audio_ms"][k] - plain_first[k], 2)
        for k in ("p50", "p95")}
    return {
        "turns": args.turns, "sentences": len(ends), "tool_round": tool_round,
        "latencies_ms": {"asr": args.asr_ms, "first_token": args.first_token_ms,
                         "per_token": args.token_ms, "tts_per_sentence": args.tts_ms},
        "critical_path_ms": {"first_audio": percentiles([c[0] for c in crit])["p50"],
                             "done": percentiles([c[1] for c in crit])["p50"],
                             "done_if_tts_were_serial": round(serial, 2)},
        "end_of_speech_to_first_audio_ms": percentiles(firsts),
        "end_of_speech_to_done_ms": percentiles(dones),
        "overhead_first_audio_ms": percentiles(over_first),
        "overhead_done_ms": percentiles(over_done),
    }


async def _tool_round(args: argparse.Namespace, plain: Any, asr: Any, tts: Any,
                      clip: Any) -> dict[str, Any]:
    """The same turns again, each with one tool round before the reply.

    ``framework_ms`` is what the core adds per tool round: from the end of the chat
    stream that asked for the tool to the start of the next chat request, minus the
    tool's own time (argument parsing, dispatch, time budget, result rendering, trace,
    message building). ``first_audio_added_ms`` is the end-to-end cost a person hears:
    first audio with the tool round minus first audio without it (it includes the chat
    model's second first-token wait, ``--first-token-ms``, and the tool's time).
    """
    from omoide.config import ToolCallSettings
    from omoide.pipeline.assistant import Assistant
    from omoide.pipeline.tools import ToolRunner
    from omoide.pipeline.turn import TurnRequest
    from omoide.testing.doubles import FakeChat, MemoryServiceDouble, ToolDouble, ToolHostDouble

    chat = FakeChat(FakeChat.Config(reply=REPLY, first_token_ms=args.first_token_ms,
                                    per_token_ms=args.token_ms, chunk_chars=args.chunk_chars,
                                    call_tools=[{"name": "echo", "arguments": {"n": 1}}]))
    tool = ToolDouble(ToolDouble.Config(latency_ms=args.tool_ms))
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        tool.attach(ToolHostDouble(Path(tmp)))
        await tool.start()
        assistant = Assistant(settings=plain.settings, asr=asr, chat=chat, tts=tts,
                              memory=MemoryServiceDouble(), hooks=plain.hooks,
                              tools=ToolRunner([tool], ToolCallSettings(), "Asia/Tokyo"))
        framework, firsts = [], []
        for i in range(args.turns):
            sink = FirstAudioSink()
            t0 = time.perf_counter()
            result = await assistant.run_turn(TurnRequest(user=f"u{i % 3}", audio=clip,
                                                          end_of_speech_at=t0), sink)
            assert [c["outcome"] for c in result.trace["tools"]] == ["ok"]
            gap = (chat.started_at[-1] - chat.tool_calls_done_at[-1]) * 1000
            framework.append(gap - tool.durations_ms[-1])
            assert sink.first_audio is not None
            firsts.append((sink.first_audio - t0) * 1000)
        await tool.stop()
    return {"tool_ms": args.tool_ms, "framework_ms": percentiles(framework),
            "end_of_speech_to_first_audio_ms": percentiles(firsts)}


def _run(args: argparse.Namespace) -> int:
    result = asyncio.run(_bench(args))
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return 0
    cp = result["critical_path_ms"]
    print(f"pipeline bench: {result['turns']} turns, {result['sentences']} sentences per reply")
    print(f"  component latencies: {result['latencies_ms']}")
    print(f"  critical path (median): first audio {cp['first_audio']} ms, done {cp['done']} ms "
          f"(serial TTS would be {cp['done_if_tts_were_serial']} ms)")
    for key in ("end_of_speech_to_first_audio_ms", "end_of_speech_to_done_ms",
                "overhead_first_audio_ms", "overhead_done_ms"):
        s = result[key]
        print(f"  {key:34s} p50 {s['p50']:8.2f}  p95 {s['p95']:8.2f}  max {s['max']:8.2f}")
    tool = result["tool_round"]
    added = tool["first_audio_added_ms"]
    print(f"  with one tool round (tool {tool['tool_ms']:g} ms; the chat model answers twice):")
    s = tool["framework_ms"]
    print(f"  {'tool_round_framework_ms':34s} p50 {s['p50']:8.2f}  p95 {s['p95']:8.2f}"
          f"  max {s['max']:8.2f}")
    print(f"  {'tool_round_first_audio_added_ms':34s} p50 {added['p50']:8.2f}  "
          f"p95 {added['p95']:8.2f}  (includes the model's second first token, "
          f"{result['latencies_ms']['first_token']:g} ms)")
    return 0
