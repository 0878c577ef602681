"""Small statistics helpers shared by the benchmarks."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def percentiles(values: Sequence[float], digits: int = 2) -> dict[str, float]:
    """p50 and p95 (and max) of ``values``, rounded to ``digits`` decimals."""
    if not values:
        return {"p50": float("nan"), "p95": float("nan"), "max": float("nan")}
    arr = np.asarray(values, dtype=np.float64)
    return {"p50": round(float(np.percentile(arr, 50)), digits),
            "p95": round(float(np.percentile(arr, 95)), digits),
            "max": round(float(arr.max()), digits)}


def _status_kb(field: str) -> int:
    """A ``VmRSS``-style field of this process's /proc status in kB (0 where there is none)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_bytes() -> int:
    """This process's resident set size now, in bytes (0 where /proc is missing)."""
    return _status_kb("VmRSS") * 1024


def rss_mb() -> dict[str, float]:
    """This process's resident set size now and at its peak, in MB."""
    return {"now": round(_status_kb("VmRSS") / 1024, 1),
            "peak": round(_status_kb("VmHWM") / 1024, 1)}
