"""The main job: play one full hand between agents and print it.

    burako-play --seed 0 --players 2
    burako-play --agents planner,random            # one name per seat, or one for every seat
    burako-play --agents my_bots:Cautious          # any class with the agent protocol

Every action is printed with its description; the table is shown at the
start and the end; the hand ends with the score breakdown per side. Agents
are named as everywhere (``agents/registry.py``: a built-in name, an
installed plug-in, or ``module:Class``); each gets the observation and a
:class:`~burako_env.views.SeatView` of what its seat may know (lazy: an
agent that never reads it pays nothing).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from agents.registry import agent_names, check_agent_game, make_agent
from burako_env.env import raw_env
from burako_env.render import render_table, score_text
from burako_env.views import LazySeatView


def seat_agents(names: Sequence[str], num_players: int, seed: int) -> list[Any]:
    """One agent per seat from one name (every seat) or one name per seat."""
    names = [name.strip() for name in names]
    if len(names) == 1:
        names = names * num_players
    if len(names) != num_players:
        raise ValueError(f"--agents: give one name, or one per seat ({num_players}); got {len(names)}")
    if "human" in names:
        raise ValueError("--agents: burako-play prints a hand between agents; play one yourself with burako-human")
    for name in names:
        check_agent_game(name, "burako")
    return [make_agent(name, seed=seed * 100 + seat) for seat, name in enumerate(names)]


def play_hand(seed: int, num_players: int, rules: str, out: Any = None, agents: Sequence[str] = ("random",)) -> dict:
    """Play one hand between the named agents; print it (to ``out``, default
    stdout); return the final info dict."""
    out = sys.stdout if out is None else out
    env = raw_env(num_players=num_players, rules=rules)
    env.reset(seed=seed)
    players = dict(zip(env.possible_agents, seat_agents(agents, num_players, seed), strict=True))
    for i, agent in enumerate(players.values()):
        agent.reset(i, env.rules, num_players)
    view_rng = np.random.default_rng([seed, 1])  # the agents' determinizations, apart from the deal
    print(f"Burako ({env.rules.name}), {num_players} players, seed {seed}", file=out)
    print(render_table(env.game, viewer=env.game.current), file=out)
    print("-" * 72, file=out)
    step = 0
    info: dict = {}
    for agent_id in env.agent_iter():
        obs, _reward, term, trunc, info = env.last()
        if term or trunc:
            env.step(None)
            continue
        seat = env.agent_name_mapping[agent_id]
        view = LazySeatView(env.game, seat, view_rng)  # determinized only if the agent reads it
        try:
            action = players[agent_id].act(obs, view)
        finally:
            view.expire()
        text = env.describe_action(action)
        turn = env.game.turn
        env.step(action)
        step += 1
        print(f"{step:4d} t{turn:3d} {agent_id}: {text}", file=out)
    state = env.game
    print("-" * 72, file=out)
    print(render_table(state, viewer=0), file=out)
    print("-" * 72, file=out)
    print(f"hand over after {state.turn} turns, {step} actions: {state.end_reason}", file=out)
    print(score_text(state), file=out)
    return info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="burako-play", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    parser.add_argument("--rules", default="burako", help="preset name or YAML path")
    parser.add_argument(
        "--agents",
        default="random",
        help=f"comma-separated agent names, one for every seat or one per seat "
        f"({', '.join(n for n in agent_names() if n != 'human')}, or module:Class); default random",
    )
    args = parser.parse_args(argv)
    try:
        play_hand(args.seed, args.players, args.rules, agents=args.agents.split(","))
    except ValueError as exc:  # bad rules, unknown agent, wrong count of names, unusable checkpoint
        print(f"burako-play: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
