"""``omoide bench pipeline`` runs and reports the tool round (figures are measured by the
benchmark itself, not asserted here)."""

from __future__ import annotations

import json
import subprocess
import sys


def test_bench_pipeline_reports_a_tool_round() -> None:
    out = subprocess.run([sys.executable, "-m", "omoide.cli", "bench", "pipeline", "--turns",
                          "2", "--asr-ms", "1", "--first-token-ms", "1", "--token-ms", "0",
                          "--tts-ms", "1", "--json"], capture_output=True, text=True,
                         timeout=120, check=True)
    result = json.loads(out.stdout)
    tool = result["tool_round"]
    assert set(tool["framework_ms"]) == {"p50", "p95", "max"}
    assert tool["framework_ms"]["p50"] >= 0
    assert set(tool["first_audio_added_ms"]) == {"p50", "p95"}
