"""``omoide bench scale --workers`` (``omoide bench workers``) runs end to end with tiny figures (1 and 2 workers on a
throwaway PostgreSQL and a Chroma server) and reports every figure; its targets (p95 of
a memory written on one worker recalled on another ≤ 1 s) are measured by running it,
not asserted here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


@pytest.mark.slow
def test_bench_workers_serves_with_one_and_two_workers_and_reports(omoide_cli: Any,
                                                                   tmp_path: Path) -> None:
    result = omoide_cli("bench", "scale", "--workers", "1,2", "--people", "3",
                        "--memories", "6", "--clients", "2", "--turns", "6", "--writes", "3",
                        "--dir", str(tmp_path), "--json", timeout=900)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    one, two = report["runs"]
    assert (one["workers"], two["workers"]) == (1, 2)
    for run in (one, two):
        assert run["round"]["turns"] == 6 and run["round"]["failed"] == 0
        assert set(run["round"]["turn_ms"]) == {"p50", "p95", "max"}
        assert set(run["cpu_s"]) == {"workers", "chroma", "postgresql", "bench_clients"}
        caught_up = run["extraction"]
        assert caught_up["left"] == 0 and caught_up["failed_requests"] == 0
        assert caught_up["caught_up_s"] >= 0 and caught_up["waiting_at_end"] >= 0
    assert "cross_worker" not in one  # one worker has no other to ask
    crossed = two["cross_worker"]
    assert crossed["writes"] == 3 and crossed["not_found_in_30_s"] == 0
    assert report["in_process"]["not_found_in_30_s"] == 0
    assert report["turns_per_s_ratio"] > 0
