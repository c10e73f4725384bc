"""The 95% intervals used everywhere (evaluations, tournaments, analysis).

- :func:`mean_ci`: a mean and its normal-approximation interval (score
  differences and other unbounded figures).
- :func:`rate_ci`: a rate in [0, 1] (win rates) with a Wilson score interval,
  which stays inside [0, 1] and never collapses to a point on small samples
  (20 wins of 20 games: [0.839, 1.000], where the normal approximation says
  [1.000, 1.000]; 2 duplicate deals both split: [0.150, 0.850], not [0.5, 0.5]).
"""

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


def wilson_interval(rate: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion ``rate`` observed on
    ``n`` trials (``n`` may be fractional: an effective sample size)."""
    if n <= 0:
        return math.nan, math.nan
    z2 = z * z
    centre = (rate + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(rate * (1 - rate) / n + z2 / (4 * n * n))
    # at an observed 0 or 1 that end is exactly 0 or 1 (rounding gave 0.9999999999999999)
    low = 0.0 if rate <= 0.0 else max(0.0, centre - half)
    high = 1.0 if rate >= 1.0 else min(1.0, centre + half)
    return low, high


def rate_ci(values: Sequence[float], games: int | None = None) -> tuple[float, tuple[float, float]]:
    """Mean of outcomes in [0, 1] (1 win, 0.5 tie, 0 loss, or the mean of a
    duplicate pair's games) and its 95% Wilson interval. ``games``: how many
    games the ``n`` values stand for (a duplicate deal's pair mean: 2; default
    ``n``, one game a value).

    With 0/1 outcomes this is the textbook Wilson interval on ``n`` games.
    With pair means the spread can be smaller than a coin's (a deal's luck
    cancels between its seatings), so the interval uses the effective sample
    size ``n * p(1-p) / s^2`` (Kish's design effect), between ``n`` (a [0, 1]
    outcome's variance is at most p(1-p)) and ``games``: never more than the
    games played. Without that ceiling a small sample whose deals happened to
    split alike claimed a huge sample (2 deals both split: the point [0.5,
    0.5]; 9 split and 1 swept: [0.457, 0.640] where Wilson on its 20 games
    says [0.342, 0.742]). A sample without spread at 0 or 1 (every game won)
    is a coin's extreme: plain Wilson on ``n``. NaN bounds below 2 values."""
    n = len(values)
    if n == 0:
        return math.nan, (math.nan, math.nan)
    games = n if games is None else games
    if games < n:
        raise ValueError(f"rate_ci: {n} values cannot stand for fewer games ({games})")
    arr = np.asarray(values, dtype=np.float64)
    if not np.isfinite(arr).all():  # NaN passed the range check and came back as the interval [0, 1]
        bad = int((~np.isfinite(arr)).sum())
        raise ValueError(f"rate_ci: outcomes must be numbers in [0, 1], got {bad} NaN or inf")
    if arr.min() < 0.0 or arr.max() > 1.0:
        raise ValueError(f"rate_ci: outcomes must lie in [0, 1], got values in [{arr.min()}, {arr.max()}]")
    rate = float(arr.mean())
    if n < 2:
        return rate, (math.nan, math.nan)
    coin_variance = rate * (1.0 - rate)
    variance = float(arr.var(ddof=1)) * (n - 1) / n  # the maximum-likelihood spread, as Wilson's p(1-p)
    if coin_variance == 0.0:
        return rate, wilson_interval(rate, n)
    if variance == 0.0:  # every value alike inside (0, 1): as much as the games can say
        return rate, wilson_interval(rate, games)
    effective_n = min(n * coin_variance / min(variance, coin_variance), games)
    return rate, wilson_interval(rate, effective_n)
