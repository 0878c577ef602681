"""``omoide bench memory_read`` runs end to end on a small store and reports the recall a
turn makes once the index is ready, the index's size per memory and the process's RSS
(its targets are measured by running it at scale, not asserted here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from omoide.memory.config import MemoryConfig
from omoide_bench.benches.memory_read import _memory_settings


def test_the_bench_reads_with_the_configs_memory_settings_and_no_time_limit() -> None:
    config = MemoryConfig.model_validate({"index": {"budget_mb": 64}, "max_results": 2})
    settings = _memory_settings(config, None)
    assert settings.time_budget_ms == 60_000
    assert (settings.index.budget_mb, settings.max_results) == (64, 2)
    assert _memory_settings(config, 2048).index.budget_mb == 2048


@pytest.mark.slow
def test_bench_memory_read_reports_the_ready_index_and_its_size(omoide_cli: Any,
                                                                 tmp_path: Path) -> None:
    result = omoide_cli("bench", "memory_read", "--memories", "300", "--queries", "6",
                        "--tmp", str(tmp_path), "--json", timeout=600)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    index = report["index"]
    assert index["ready"] and index["budget_mb"] == MemoryConfig().index.budget_mb
    assert 0 < index["estimated_bytes_per_memory"] <= 2048
    assert report["rss_mb"]["peak"] >= report["rss_mb"]["now"] > 0
    for engine in ("baseline", "robust"):
        for figure in ("without_embedding_ms", "read_cpu_ms"):
            assert set(report["engines"][engine][figure]) == {"p50", "p95", "max"}
    assert not any(tmp_path.iterdir())  # the temporary store is gone
