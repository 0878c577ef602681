"""``omoide bench scale`` runs end to end on a tiny store and reports every figure (its
targets are measured by running it at scale, not asserted here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


@pytest.mark.slow
def test_bench_scale_fills_recalls_serves_and_reports(omoide_cli: Any, tmp_path: Path) -> None:
    result = omoide_cli("bench", "scale", "--people", "3", "--memories", "6", "--clients", "2",
                        "--turns", "4", "--sample", "2", "--queries", "4",
                        "--extraction-idle-s", "1", "--extraction-wait-s", "60",
                        "--dir", str(tmp_path), "--json", timeout=600)
    assert result.returncode == 0, result.stderr
    [report] = json.loads(result.stdout)["reports"]
    assert (report["store"], report["people"], report["memories"]) == ("qdrant", 3, 6)
    local = report["in_process"]
    assert local["recall_failed"] == 0 and local["recall_with_memory"] > 0
    assert set(local["recall_without_embedding_ms"]) == {"p50", "p95", "max"}
    assert 0 < local["store_search_ms"]["p50"] <= local["store_search_ms"]["max"]
    together = local["store_together_ms"]
    assert together["people"] == 1 and together["first_page"] > 0 and together["search"] > 0
    server = report["server"]
    assert server["ready_s"] > 0 and server["at_ready"]["open_files"] > 0
    assert [r["name"] for r in server["rounds"]] == ["after ready", "settled"]
    assert all(r["failed"] == 0 for r in server["rounds"])
    assert server["store_calls_over_timeout"] == 0
    assert server["extraction_caught_up_s"] is not None
    assert server["empty_store"]["ready_s"] > 0

    # --dir keeps the filled store for the next run, not the run's own data
    kept = {p.name for p in (tmp_path / "qdrant-3x6").iterdir() if p.is_dir()}
    assert "qdrant" in kept
    assert not {k for k in kept if k.startswith(("in-process-run-", "server-data-",
                                                 "empty-store-"))}
