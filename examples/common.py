"""What the examples share: a trained policy, wrapped as an agent, against
registered agents on duplicate games (``training.evaluate``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def evaluate_against(name: str, make: Callable[[], Any], opponent: str, games: int, seed: int) -> dict[str, Any]:
    """``games`` duplicate games (each deal twice, seats swapped) of the agent
    ``make()`` builds against the registered ``opponent``, in this process;
    the figures the examples print and save."""
    from training.evaluate import AgentSpec, evaluate

    spec = AgentSpec.of(name, factory=lambda seed=None: make())
    s = evaluate(spec, AgentSpec.of(opponent), games=games, seed=seed, workers=1).summary
    return {
        "opponent": opponent,
        "games": s.games,
        "win_rate": round(s.win_rate, 4),
        "win_rate_ci": [round(x, 4) for x in s.win_rate_ci],
        "wins": s.wins,
        "draws": s.draws,
        "losses": s.losses,
        "mean_diff": round(s.mean_diff, 1),
    }
