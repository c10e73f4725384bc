"""Agents by name, for the command lines, evaluations and tournaments.

``make_agent("planner", seed=0)``; options are passed to the constructor
(``make_agent("ismcts", seed=1, simulations=200)``). Besides the built-in
names below, every command line (``burako-eval``, ``burako-tournament``,
``burako-human``, ``burako-play``, ``burako-train``'s league) takes

- ``"module:Class"``: any class with the agent protocol (``agents/base.py``),
  imported by name (``make_agent("my_bots:Cautious", seed=0)``);
- the name of an installed plug-in: an entry point of the group
  ``burako_env.agents`` declared by another package.

The resolution lives in ``burako_env/plugins.py`` so the Gymnasium env can
build opponents by name without importing this package. pyproject.toml
declares the same built-in names as ``burako_env.agents`` entry points (for
the env); ``tests/test_layers.py`` checks that both lists agree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from burako_env import plugins

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
    "rummy-ismcts": "agents.rummy_search:RummyISMCTS",
    "rummy-policy": "agents.rummy_policy:RummyPolicyAgent",
}

#: the games each built-in agent plays: every command refuses a pairing that
#: cannot be played before any game (:func:`check_agent_game`)
AGENT_GAMES: dict[str, tuple[str, ...]] = {
    "random": ("burako", "rummy"),
    **dict.fromkeys(("greedy", "planner", "ismcts", "fast_ismcts", "neural_ismcts", "human", "policy"), ("burako",)),
    **dict.fromkeys(("rummy-heuristic", "rummy-greedy", "rummy-ismcts", "rummy-policy"), ("rummy",)),
}


def agent_games(name: str) -> tuple[str, ...] | None:
    """The games a built-in agent plays (:data:`AGENT_GAMES`). ``None`` for what the
    registry does not name (``module:Class``, plug-ins): they are tried as given."""
    return AGENT_GAMES.get(name)


def check_agent_game(name: str, game: str) -> None:
    """A ``ValueError`` naming the agent, the games it plays and the agents of ``game``, if it cannot play it."""
    games = agent_games(name)
    if games is not None and game not in games:
        fits = sorted(n for n in AGENTS if game in (agent_games(n) or ()))
        raise ValueError(
            f"agent {name!r} plays {' and '.join(games)} only, not {game}; {game} agents: {', '.join(fits)}"
        )


def agent_names() -> list[str]:
    """The built-in names and those of installed plug-ins (``module:Class`` works too)."""
    return sorted(set(AGENTS) | set(plugins.installed_agents()))


def agent_class(name: str) -> Callable[..., Any]:
    """The class (or factory) a name stands for; an unknown name, a module that
    does not import or a missing class is a ``ValueError`` that says which."""
    return plugins.agent_factory(name, AGENTS)


def is_agent(name: str) -> bool:
    """Whether ``name`` resolves to an agent (a config check, before any game)."""
    try:
        agent_class(name)
    except ValueError:
        return False
    return True


def agent_files(name: str, options: Mapping[str, Any], factory: Callable[..., Any] | None = None) -> list[str]:
    """The files an agent built from ``name`` (or ``factory``) and ``options`` reads, such as a
    policy's checkpoint: what its class's ``files_read(options)`` names, none without one. A
    tournament fingerprints their contents, so a file replaced under the same path (a new
    shipped bot) never passes for the one an earlier game was played with."""
    target = factory if factory is not None else agent_class(name)
    files_read = getattr(target, "files_read", None)
    return [str(path) for path in files_read(dict(options))] if callable(files_read) else []


def make_agent(name: str, seed: int | None = None, **options: Any) -> Any:
    """Build an agent by name (module docstring); an unknown name is a clear error."""
    return agent_class(name)(seed=seed, **options)
