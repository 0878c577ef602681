"""``omoide bench openai`` runs and reports the endpoint's overhead and its first streamed
token (figures are measured by the benchmark itself, not asserted here)."""

from __future__ import annotations

import json
import subprocess
import sys


def test_bench_openai_reports_overhead_and_first_streamed_token() -> None:
    out = subprocess.run([sys.executable, "-m", "omoide.cli", "bench", "openai", "--turns",
                          "2", "--first-token-ms", "1", "--token-ms", "0", "--json"],
                         capture_output=True, text=True, timeout=180, check=True)
    result = json.loads(out.stdout)
    assert set(result["overhead_ms"]) == {"p50", "p95"}
    assert set(result["first_streamed_token_after_turn_first_token_ms"]) == {"p50", "p95",
                                                                             "max"}
    assert result["chat_completions_ms"]["p50"] > 0 and len(result["load_average"]) == 3
