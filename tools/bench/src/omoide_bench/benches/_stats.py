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
