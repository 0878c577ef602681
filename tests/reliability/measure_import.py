"""Time ``omoide memory import`` of N memories into a fresh data dir (not a test).

    .venv/bin/python tests/reliability/measure_import.py [--count N] [--embed e5|fake]
        [--fill]

Writes N distinct memories as JSON lines and a config for a fresh data dir — the
offline config's embedder (e5; ``fake``: the hashing double, to time everything but the
embedding) and Qdrant local store, test doubles for the stages an import never starts —
and times the command twice: the first import (every memory new) and the same file
again (every memory skipped: imports are idempotent). Prints the wall and CPU time of
each (CPU time says what the import costs when other work shares the cores). A large
import stores first and embeds afterwards; ``--fill`` also times ``omoide memory
vectors --fill``, which embeds what the import left waiting (a server does it in the
background).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

PLACES = ["箱根", "札幌", "京都", "大阪", "沖縄", "横浜", "金沢", "仙台", "福岡", "名古屋"]
THINGS = ["ラーメン", "ギター", "カレー", "散歩", "映画", "読書", "将棋", "写真", "料理", "水泳"]


def memories(count: int) -> list[dict[str, object]]:
    out = []
    for i in range(count):
        place, thing = PLACES[i % 10], THINGS[(i // 10) % 10]
        out.append({"id": f"m{i}", "text": f"{place}で{thing}をした思い出その{i}番",
                    "kind": "episodic", "created_at": "2026-01-01T09:00:00+09:00"})
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--embed", choices=("e5", "fake"), default="e5")
    parser.add_argument("--fill", action="store_true",
                        help="also time embedding the memories the import left waiting")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="omoide-import-"))
    config = {"server": {"data_dir": str(work / "data")},
              "asr": {"use": "fake"}, "chat": {"use": "fake"}, "tts": {"use": "fake"},
              "embed": {"use": "e5"} if args.embed == "e5" else {"use": "fake", "dims": 384},
              "store": {"use": "qdrant", "path": str(work / "data" / "qdrant")}}
    config_path = work / "config.yaml"
    config_path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    source = work / "memories.jsonl"
    source.write_text("".join(json.dumps(m, ensure_ascii=False) + "\n"
                              for m in memories(args.count)), encoding="utf-8")
    command = ["memory", "import", "--config", str(config_path), "--user", "alice",
               str(source)]
    runs = [("first import", command), ("same file again", command)]
    if args.fill:
        runs.append(("vectors --fill", ["memory", "vectors", "--config", str(config_path),
                                        "--fill"]))
    for label, arguments in runs:
        cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "omoide.cli", *arguments],
                              capture_output=True, text=True)
        took = time.monotonic() - started
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        busy = used.ru_utime + used.ru_stime - cpu.ru_utime - cpu.ru_stime
        print(f"{label}: {took:.1f} s wall, {busy:.1f} s CPU (exit {done.returncode}) "
              f"{done.stdout.strip()[-200:]} {done.stderr.strip()[-300:]}")
    print(f"data dir: {work}")


if __name__ == "__main__":
    main()
