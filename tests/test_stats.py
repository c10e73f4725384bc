"""Win-rate intervals (burako_env.stats): Wilson, never a point on a small sample."""

from __future__ import annotations

import math

import pytest

from burako_env.stats import mean_ci, rate_ci, wilson_interval


def test_twenty_of_twenty_is_not_a_point() -> None:
    rate, (low, high) = rate_ci([1.0] * 20)
    assert rate == 1.0 and high == 1.0
    assert low == pytest.approx(0.8389, abs=1e-4)  # Wilson 20/20
    assert f"[{low:.3f}, {high:.3f}]" == "[0.839, 1.000]"
    _, (low0, high0) = rate_ci([0.0] * 20)
    assert low0 == 0.0 and high0 == pytest.approx(0.1611, abs=1e-4)


def test_binary_outcomes_give_the_textbook_wilson_interval() -> None:
    # 7 of 10: Wilson (z = 1.96) = [0.3968, 0.8922]
    rate, (low, high) = rate_ci([1.0] * 7 + [0.0] * 3)
    assert rate == 0.7
    assert (low, high) == pytest.approx((0.3968, 0.8922), abs=1e-4)
    assert wilson_interval(0.7, 10) == pytest.approx((low, high))


def test_pair_means_never_claim_more_than_their_games() -> None:
    """Duplicate deals that happened to split alike claimed a huge sample: greedy against the planner on
    2 deals, both split, had the point interval [0.5, 0.5]; 9 split deals and 1 sweep [0.457, 0.640].
    The effective sample size is capped at the games played: Wilson on those 4 and 20 games."""
    assert rate_ci([0.5, 0.5], games=4) == (0.5, pytest.approx(wilson_interval(0.5, 4)))
    assert f"{rate_ci([0.5, 0.5], games=4)[1]}" != "(0.5, 0.5)"
    rate, interval = rate_ci([0.5] * 9 + [1.0], games=20)
    assert rate == pytest.approx(0.55) and interval == pytest.approx(wilson_interval(0.55, 20))
    assert interval == pytest.approx((0.342, 0.742), abs=1e-3)
    # the same agent on both sides of every pair (exactly 0.5 each): 0.5 in the middle, as wide as the games
    assert rate_ci([0.5] * 30, games=60) == (0.5, pytest.approx(wilson_interval(0.5, 60)))
    assert rate_ci([0.5] * 30) == (0.5, pytest.approx(wilson_interval(0.5, 30)))  # one game a value
    with pytest.raises(ValueError, match="3 values cannot stand for fewer games"):
        rate_ci([0.5, 1.0, 0.0], games=2)


def test_fractional_outcomes_use_the_effective_sample_size() -> None:
    values = [1.0, 0.5, 1.0, 0.75] * 25  # means of 4 games each
    rate, (low, high) = rate_ci(values, games=4 * len(values))
    _, (nlow, nhigh) = mean_ci(values)
    assert low < rate < high <= 1.0
    # less spread than a coin's: narrower than Wilson on n, close to the normal interval
    wlow, whigh = wilson_interval(rate, len(values))
    assert whigh - wlow > high - low
    assert high - low == pytest.approx(nhigh - nlow, rel=0.1)


def test_rate_ci_bad_input() -> None:
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\]"):
        rate_ci([0.5, 1.5])
    with pytest.raises(ValueError, match="got 1 NaN or inf"):  # it returned (nan, (0.0, 1.0))
        rate_ci([1.0, 0.0, math.nan])
    assert math.isnan(rate_ci([])[0])
    assert math.isnan(rate_ci([1.0])[1][0])


def test_wilson_bounds_are_exactly_0_and_1_at_the_extremes() -> None:
    """All games won (or lost): the interval ends at exactly 1.0 (0.0), never 0.9999999999999999."""
    from burako_env.stats import wilson_interval

    for n in range(1, 2000, 7):
        assert wilson_interval(1.0, n)[1] == 1.0 and wilson_interval(0.0, n)[0] == 0.0
        assert wilson_interval(1.0, n)[0] < 1.0 and wilson_interval(0.0, n)[1] > 0.0
