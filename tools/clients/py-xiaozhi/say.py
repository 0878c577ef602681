"""Write the person's utterances for the py-xiaozhi run as 16 kHz mono WAVs, in
OpenJTalk's voice (run with omoide's venv, which has pyopenjtalk).

    .venv/bin/python tools/clients/py-xiaozhi/say.py OUT_DIR
"""

from __future__ import annotations

import sys
import wave
from pathlib import Path

import numpy as np
import pyopenjtalk

from omoide.audio import resample
from omoide.types import AudioClip

UTTERANCES = {
    "speech1.wav": "来週の土曜日に友達と箱根に行くんだ。",
    "speech2.wav": "週末の予定覚えてる？",
    "speech3.wav": "今何時？",
    "speech4.wav": "昨日は駅前の新しいラーメン屋に行ってきたよ。",
}
"""A plan told, the plan asked back in other words, a question about the world, a remark."""


def write(path: Path, text: str) -> None:
    samples, rate = pyopenjtalk.tts(text)
    clip = resample(AudioClip((np.asarray(samples) / 32768).astype(np.float32), rate), 16000)
    pcm = (np.clip(clip.samples, -1, 1) * 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(pcm.tobytes())


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    for name, text in UTTERANCES.items():
        write(out / name, text)
        print(out / name, text)


if __name__ == "__main__":
    main()
