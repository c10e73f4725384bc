"""The random agent: uniform over the legal actions of its observation's mask."""

from __future__ import annotations

from typing import Any

import numpy as np


class RandomAgent:
    """Picks uniformly among legal actions; reproducible from its seed."""

    name = "random"

    def __init__(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)
        self.seat = -1

    def reset(self, seat: int, rules: Any = None, num_players: int = 2) -> None:
        """Called at the start of each hand with the agent's seat and the rules."""
        self.seat = seat

    def act(self, observation: dict[str, np.ndarray], view: Any = None) -> int:
        legal = np.flatnonzero(observation["action_mask"])
        if legal.size == 0:
            raise ValueError("RandomAgent.act: the action mask has no legal action")
        return int(legal[self.rng.integers(legal.size)])
