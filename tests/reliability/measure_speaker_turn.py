"""Time a household turn with and without speaker identification (not a test).

    .venv/bin/python tests/reliability/measure_speaker_turn.py [--turns 10]

The real server on loopback with the real Resemblyzer speaker stage and the ``fake`` ASR,
chat and TTS (instant: the worst case for identification, which runs beside recognition
and can only add time when it ends after it); one simulated robot of a household of two
says the same OpenJTalk utterance ``--turns`` times with no one enrolled (identification
never runs: the turn as before) and ``--turns`` times with both members enrolled. Per
condition: end of speech -> first sentence's audio (the trace's first_sentence_audio)
p50/p95, and the speaker stage's span and how far it ended after the asr stage.
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


def openjtalk(text: str, half_tone: float = 0.0) -> AudioClip:
    import pyopenjtalk

    samples, rate = pyopenjtalk.tts(text, half_tone=half_tone)
    return resample(AudioClip((np.asarray(samples) / 32768).astype(np.float32), rate), 16000)


def config(data: Path) -> dict[str, Any]:
    return yaml.safe_load(f"""
server: {{data_dir: {data}}}
memory: {{extraction: {{on_disconnect: false}}}}
vad: {{use: fake, min_silence_ms: 300}}
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


async def run(server: LoopbackOmoide, turns: int, clip: AudioClip) -> dict[str, list[float]]:
    from omoide_device_stackchan.simulator import SimulatedStackChan

    robot = SimulatedStackChan(server.url, speed=1.0)
    pairings = server.device("stackchan").service.pairings
    pairings.pair(robot.device_id, "alice")
    pairings.update_household(robot.device_id, add=("bob",), default=None)
    await robot.provision()
    await robot.connect()
    out: dict[str, list[float]] = {"first_audio": [], "speaker": [], "after_asr": []}
    try:
        for _ in range(turns):
            assert (await robot.say(clip, mode="manual", timeout=120)).complete
            trace = server.omoide.traces.recent()[-1]
            stages = trace["stages"]
            out["first_audio"].append(stages["first_sentence_audio"]["end_ms"])
            if "speaker" in stages:
                spk, asr = stages["speaker"], stages["asr"]
                out["speaker"].append(spk["end_ms"] - spk["start_ms"])
                out["after_asr"].append(max(0.0, spk["end_ms"] - asr["end_ms"]))
    finally:
        await robot.close()
    return out


async def main(turns: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = LoopbackOmoide(settings_from_data(config(Path(tmp) / "data")))
        await server.start(ready_timeout_s=120)
        try:
            clip = openjtalk(ASK)
            before = await run(server, turns, clip)
            speaker = server.omoide.assistant.speaker
            assert speaker is not None
            await speaker.enrol("alice", [openjtalk(t) for t in ENROL], source="measure")
            await speaker.enrol("bob", [openjtalk(t, -8) for t in ENROL], source="measure")
            after = await run(server, turns, clip)
        finally:
            await server.stop()
    print(f"load average {os.getloadavg()[0]:.2f}, {turns} turns each")
    for name, got in (("no one enrolled", before), ("both enrolled", after)):
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
    asyncio.run(main(parser.parse_args().turns))
    sys.exit(0)
