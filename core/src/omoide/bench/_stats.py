"""Small statistics helpers shared by the benchmarks."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def percentiles(values: Sequence[float]) -> dict[str, float]:
    """p50 and p95 (and max) of ``values``, rounded to 0.01."""
    if not values:
        return {"p50": float("nan"), "p95": float("nan"), "max": float("nan")}
    arr = np.asarray(values, dtype=np.float64)
    return {"p50": round(float(np.percentile(arr, 50)), 2),
            "p95": round(float(np.percentile(arr, 95)), 2),
            "max": round(float(arr.max()), 2)}
