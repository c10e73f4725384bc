"""The main job: play one full hand between built-in agents and print it.

    burako-play --seed 0 --players 2

Every action is printed with its description; the table is shown at the
start and the end; the hand ends with the score breakdown per side.
"""

from __future__ import annotations

import argparse
import sys

from agents import RandomAgent
from burako_env.env import raw_env
from burako_env.render import render_table, score_text


def play_hand(seed: int, num_players: int, rules: str, out: object = sys.stdout) -> dict:
    """Play one hand with random agents; print it; return the final info dict."""
    env = raw_env(num_players=num_players, rules=rules)
    env.reset(seed=seed)
    agents = {a: RandomAgent(seed=seed * 100 + i) for i, a in enumerate(env.possible_agents)}
    for i, agent in enumerate(agents.values()):
        agent.reset(i, env.rules, num_players)
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
        action = agents[agent_id].act(obs)
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
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    parser.add_argument("--rules", default="burako", help="preset name or YAML path")
    args = parser.parse_args(argv)
    play_hand(args.seed, args.players, args.rules)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
