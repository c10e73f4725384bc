"""Outcomes of a hand: who won it and what each side is rewarded (E5).

One home for these facts, read by both engines, the AEC, parallel and
Gymnasium envs, records, the game runner, evaluations and training:

- :func:`zero_sum_from_totals`: per side, its total minus the mean of the
  others' (with 2 sides, the difference);
- :func:`zero_sum_rewards`: the same from ``SideScore`` breakdowns; zeros
  for a hand without score;
- :func:`winner_of`: the side with the unique highest total, or None (a tie);
- :func:`hand_winner`: :func:`winner_of` a state's hand; None for a void or
  truncated hand;
- :func:`hand_rewards`: the env's ``reward`` modes, ``"score"`` (zero-sum /
  ``reward_scale``) or ``"win"`` (+1 / -1 shared / 0);
- :func:`blended_reward`: training's mix,
  ``win_weight * sign(d) + score_weight * d / scale``;
- :func:`side_reward`: the same for a finished hand, a truncated one worth
  ``truncated_reward`` (training's rollouts, cloning's value targets and
  the neural search's terminal values);
- :func:`table_totals`: per side, what it has on the table as the hand
  stands (melded tiles + canasta bonuses - the muerto penalty while its
  muerto counts as untaken): public, no hand penalty, no closing bonus;
  training's ``score_potential`` reads its zero-sum margin.

The batched kernel ``burako_env.vector._finish_hand`` restates
:func:`hand_rewards` in numba (a kernel cannot call Python);
``tests/test_fast.py`` holds it to these functions; ``burako_env.fast.table_total``
restates :func:`table_totals` (``tests/test_score_potential.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from burako_env.safe_yaml import short_repr

if TYPE_CHECKING:
    from burako_env.engine import SideScore

REWARD_MODES = ("score", "win")
#: the env's default ``reward_scale``: a hand's zero-sum score difference / 1000
DEFAULT_REWARD_SCALE = 1000.0


def zero_sum_from_totals(totals: Sequence[float]) -> list[float]:
    """E5: each side's total minus the mean of the other sides' totals."""
    sides = len(totals)
    total = sum(totals)
    return [float(v - (total - v) / (sides - 1)) for v in totals]


def table_totals(scores: Sequence[SideScore]) -> list[int]:
    """Per side, what it has on the table as the hand stands (``GameState.score_sides``' parts): melded
    tiles + canasta bonuses - the muerto penalty while its muerto counts as untaken. Everything in it
    is public; the hand penalty (hidden tiles) and the closing bonus (only at the end) are not in it."""
    return [s.melded + s.canasta_bonus - s.muerto_penalty for s in scores]


def table_margin(state: Any, seat: int) -> float:
    """E5's zero-sum margin of ``seat``'s side over :func:`table_totals` of a ``GameState`` (what
    ``BurakoVectorEnv.table_margins`` computes on the compiled core)."""
    return zero_sum_from_totals(table_totals(state.score_sides()))[state.side_of[seat]]


def zero_sum_rewards(scores: Sequence[SideScore] | None, num_sides: int) -> list[float]:
    """E5 from a hand's score breakdowns; zeros for a hand without score
    (void, truncated)."""
    if scores is None:
        return [0.0] * num_sides
    return zero_sum_from_totals([s.total for s in scores])


def winner_of(totals: Sequence[float]) -> int | None:
    """The side with the unique highest total; None for a tie at the top."""
    best = max(totals)
    return list(totals).index(best) if list(totals).count(best) == 1 else None


def hand_winner(state: Any) -> int | None:
    """The side that won the hand as it ended (a ``GameState`` or
    ``FastGame``); None for a tie, a void or a truncated hand."""
    scores = state.hand_scores
    return None if scores is None else winner_of([s.total for s in scores])


def hand_rewards(state: Any, reward: str, reward_scale: float, match: bool) -> list[float]:
    """Each side's reward when a hand ends. ``"score"``: :func:`zero_sum_rewards`
    / ``reward_scale``; ``"win"``: +1 to the winner of the hand (or, with
    ``match``, of the match once it is over), -1 shared among the others, 0
    for everyone without a winner."""
    sides = state.num_sides
    if reward == "score":
        return [r / reward_scale for r in zero_sum_rewards(state.hand_scores, sides)]
    winner = hand_winner(state) if not match else (state.match_winner if state.match_winner >= 0 else None)
    if winner is None:
        return [0.0] * sides
    return [1.0 if s == winner else -1.0 / (sides - 1) for s in range(sides)]


def blended_reward(diff: float, win_weight: float, score_weight: float, scale: float) -> float:
    """Training's reward for a side whose zero-sum hand result is ``diff``:
    a win/loss term plus a scaled score term (``configs/ppo_*.yaml``)."""
    sign = float((diff > 0) - (diff < 0))
    return win_weight * sign + score_term(diff, score_weight, scale)


def score_term(diff: Any, score_weight: float, scale: float) -> Any:
    """The score part of training's reward for a zero-sum margin ``diff`` (a number or an array): also
    the potential of ``score_potential``, where ``diff`` is the margin on the table."""
    return score_weight * diff / scale


def side_reward(
    diff: float, truncated: bool, win_weight: float, score_weight: float, scale: float, truncated_reward: float
) -> float:
    """A side's training reward for a finished hand whose zero-sum result is
    ``diff`` (0 for a void hand); a hand cut at ``max_turns`` (unscored, V3a)
    is worth ``truncated_reward`` instead."""
    return truncated_reward if truncated else blended_reward(diff, win_weight, score_weight, scale)


__all__ = [
    "DEFAULT_REWARD_SCALE",
    "REWARD_MODES",
    "blended_reward",
    "check_reward",
    "hand_rewards",
    "hand_winner",
    "side_reward",
    "winner_of",
    "zero_sum_from_totals",
    "zero_sum_rewards",
]


def check_reward(reward: Any, reward_scale: Any) -> None:
    """An env's ``reward`` mode and ``reward_scale`` (both games), refused, never coerced."""
    if not isinstance(reward, str) or reward not in REWARD_MODES:
        raise ValueError(f"reward must be one of {REWARD_MODES}, got {short_repr(reward)}")
    if (
        isinstance(reward_scale, (bool, np.bool_))
        or not isinstance(reward_scale, (int, float, np.integer, np.floating))
        or not math.isfinite(reward_scale)
        or reward_scale <= 0
    ):
        raise ValueError(f"reward_scale must be a positive finite number, got {short_repr(reward_scale)}")
