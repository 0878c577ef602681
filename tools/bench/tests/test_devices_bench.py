"""``omoide bench devices`` runs and reports (its timing targets are measured, not
asserted here)."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("omoide_device_stackchan")


@pytest.mark.slow
def test_bench_devices_reports_overhead_jitter_and_frames(omoide_cli: Any) -> None:
    result = omoide_cli("bench", "devices", "--devices", "2", "--turns", "1", "--json",
                        timeout=300)
    assert result.returncode == 0, result.stderr
    [run] = json.loads(result.stdout)
    assert run["devices"] == 2 and run["turns"] == 2
    assert run["failed_turns"] == 0
    assert run["dropped_frames"] == 0
    assert set(run["overhead_ms"]) == {"p50", "p95", "max"}
    assert "first_sentence_audio" in run["server_stages_ms"]
