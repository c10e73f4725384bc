"""The one home of hand outcomes (burako_env/outcomes.py): winners, reward
modes and training's blended reward, with exact values (E5)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from burako_env.engine import SideScore
from burako_env.outcomes import (
    blended_reward,
    hand_rewards,
    hand_winner,
    winner_of,
    zero_sum_from_totals,
    zero_sum_rewards,
)


def _state(totals: list[int] | None, match_winner: int = -1) -> SimpleNamespace:
    scores = None if totals is None else [SideScore(melded=t) if t >= 0 else SideScore(hand_penalty=-t) for t in totals]
    return SimpleNamespace(
        num_sides=3 if totals and len(totals) == 3 else 2, hand_scores=scores, match_winner=match_winner
    )


def test_e5_zero_sum_from_totals_two_and_three_sides() -> None:
    assert zero_sum_from_totals([300, -100]) == [400.0, -400.0]
    assert zero_sum_from_totals([300, 0, -60]) == [330.0, -120.0, -210.0]
    assert sum(zero_sum_from_totals([300, 0, -60])) == 0.0
    assert zero_sum_rewards(None, 3) == [0.0, 0.0, 0.0]


def test_winner_of_needs_a_unique_top() -> None:
    assert winner_of([120, 300, 5]) == 1
    assert winner_of([300, 300, 5]) is None
    assert hand_winner(_state(None)) is None
    assert hand_winner(_state([250, -40])) == 0


@pytest.mark.parametrize(
    ("totals", "mode", "match", "match_winner", "expected"),
    [
        ([250, -40], "score", False, -1, [0.29, -0.29]),
        ([250, -40], "win", False, -1, [1.0, -1.0]),
        ([100, 100], "win", False, -1, [0.0, 0.0]),
        (None, "win", False, -1, [0.0, 0.0]),
        ([250, -40], "win", True, -1, [0.0, 0.0]),  # match not over yet
        ([250, -40], "win", True, 1, [-1.0, 1.0]),  # the match winner, not the hand's
        ([300, 0, -60], "win", False, -1, [1.0, -0.5, -0.5]),
    ],
)
def test_e5_hand_rewards_modes(
    totals: list[int] | None, mode: str, match: bool, match_winner: int, expected: list[float]
) -> None:
    assert hand_rewards(_state(totals, match_winner), mode, 1000.0, match) == pytest.approx(expected)


def test_blended_reward_is_training_mix() -> None:
    assert blended_reward(400.0, 1.0, 1.0, 1000.0) == pytest.approx(1.4)
    assert blended_reward(-400.0, 0.5, 0.0, 1000.0) == -0.5
    assert blended_reward(0.0, 1.0, 1.0, 1000.0) == 0.0
