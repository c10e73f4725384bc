"""The one 95% interval used everywhere (evaluations, tournaments, analysis)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

Z95 = 1.959963984540054


def mean_ci(values: Sequence[float]) -> tuple[float, tuple[float, float]]:
    """Mean and its 95% normal-approximation interval (NaN bounds below 2 values)."""
    n = len(values)
    if n == 0:
        return math.nan, (math.nan, math.nan)
    arr = np.asarray(values, dtype=np.float64)
    mean = float(arr.mean())
    if n < 2:
        return mean, (math.nan, math.nan)
    half = Z95 * float(arr.std(ddof=1)) / math.sqrt(n)
    return mean, (mean - half, mean + half)
