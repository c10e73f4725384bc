"""Agents by name, for the command lines, evaluations and tournaments.

``make_agent("planner", seed=0)``; options are passed to the constructor
(``make_agent("ismcts", seed=1, simulations=200)``).
"""

from __future__ import annotations

import importlib
from typing import Any

#: name -> "module:Class"
AGENTS: dict[str, str] = {
    "random": "agents.random_agent:RandomAgent",
    "greedy": "agents.heuristic:GreedyMelder",
    "planner": "agents.heuristic:Planner",
    "ismcts": "agents.search:ISMCTSAgent",
    "fast_ismcts": "agents.fast_search:FastISMCTSAgent",
    "neural_ismcts": "agents.neural_search:NeuralISMCTSAgent",
    "human": "agents.human:HumanAgent",
    "policy": "agents.policy:PolicyAgent",
    # Rummy (burako_env.rummy); "random" plays both games
    "rummy-heuristic": "agents.rummy_heuristic:RummyHeuristic",
    "rummy-greedy": "agents.rummy_heuristic:RummyGreedy",
}


def agent_names() -> list[str]:
    return sorted(AGENTS)


def make_agent(name: str, seed: int | None = None, **options: Any) -> Any:
    """Build an agent by registry name; an unknown name is a clear error."""
    if name not in AGENTS:
        raise ValueError(f"unknown agent {name!r}; known agents: {', '.join(agent_names())}")
    module_name, class_name = AGENTS[name].split(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    return cls(seed=seed, **options)
