"""The heuristic agents of the registry (``greedy``, ``planner``): each asks
its policy about its seat's view (``view.public_state()``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from agents.base import SeatView
from agents.heuristic.policies import GreedyPolicy, HeuristicPolicy, PlannerPolicy
from agents.heuristic.weights import HeuristicWeights
from burako_env.rules import Rules


class _HeuristicAgent:
    """An agent that asks a :class:`HeuristicPolicy` about its seat's view.

    ``weights``: a :class:`HeuristicWeights`, or a mapping of changes to the
    policy's preset (``make_agent("planner", weights={"feed_base": 30})``).
    """

    name = "heuristic"
    policy_class: type[HeuristicPolicy] = HeuristicPolicy

    def __init__(self, seed: int | None = None, weights: HeuristicWeights | Mapping[str, Any] | None = None) -> None:
        self.seed = seed  # decisions are deterministic; kept for the registry's uniform signature
        self.policy = self.policy_class(weights)
        self.seat = -1
        self.rules: Rules | None = None
        self.num_players = 2

    @property
    def weights(self) -> HeuristicWeights:
        return self.policy.weights

    def reset(self, seat: int, rules: Any = None, num_players: int = 2) -> None:
        """Called at the start of each hand."""
        self.seat = seat
        self.rules = rules
        self.num_players = num_players

    def act(self, observation: dict[str, np.ndarray], view: SeatView) -> int:
        mask = observation.get("action_mask") if observation is not None else None
        legal = np.flatnonzero(mask).tolist() if mask is not None else view.legal_actions()
        if not legal:
            raise ValueError(f"{type(self).__name__}.act: no legal action in the mask")
        if len(legal) == 1:
            return legal[0]
        return self.policy.choose(view.public_state(), legal)


class GreedyMelder(_HeuristicAgent):
    """Melds everything at once, takes the pile only for an immediate meld
    (package docstring)."""

    name = "greedy"
    policy_class = GreedyPolicy


class Planner(_HeuristicAgent):
    """Builds canastas, races for the muerto, values the pile, avoids feeding
    opponents, closes when ahead (package docstring)."""

    name = "planner"
    policy_class = PlannerPolicy


__all__ = ["GreedyMelder", "Planner"]
