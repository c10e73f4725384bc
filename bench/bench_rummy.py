"""Rummy random play: the AEC loop (``burako_env.rummy_env``) and the bare engine (``RummyState``).

Same CLI and RESULT line as bench_burako.py and the anchors (``--games``,
``--seed``, ``--warmup``, ``--tag``). One game = one hand (``match=False``),
dealt from seed S+i; actions uniform over the legal ones with
``random.Random(S)``; the mask (and in ``aec`` mode the observation) is built
every step.

    .venv/bin/python bench/bench_rummy.py --mode aec --players 2 --games 100
    .venv/bin/python bench/bench_rummy.py --mode engine --players 4 --games 100
    .venv/bin/python bench/bench_rummy.py --mode ismcts --games 3

``--mode ismcts``: ``rummy-ismcts`` (default settings, seat 0) against random
through the AEC loop; the RESULT line adds its simulations per second of
search (``sims_per_s``).
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_burako import Timer, make_parser, report

import burako_env
from burako_env.rummy.engine import Phase, RummyState
from burako_env.rummy.rules import RummyRules


def play_aec(env, seed: int, choose: Callable[[str, dict], int]) -> int:
    """One hand through the AEC loop; ``choose(agent_name, observation)`` picks each action."""
    env.reset(seed=seed)
    steps = 0
    for name in env.agent_iter():
        obs, _rew, term, trunc, _info = env.last()
        if term or trunc:
            env.step(None)
            continue
        env.step(choose(name, obs))
        steps += 1
    return steps


def uniform_choice(rng: random.Random) -> Callable[[str, dict], int]:
    """Uniform over the legal actions, from ``rng``."""

    def choose(_name: str, obs: dict) -> int:
        legal = np.flatnonzero(obs["action_mask"])
        return int(legal[rng.randrange(len(legal))])

    return choose


def play_engine(rules: RummyRules, num_players: int, rng: random.Random, seed: int) -> int:
    state = RummyState.new_game(np.random.default_rng(seed), rules, num_players)
    steps = 0
    while state.phase == Phase.PLAY:
        legal = np.flatnonzero(state.legal_mask())
        state.step(int(legal[rng.randrange(len(legal))]))
        steps += 1
    return steps


def play_ismcts(env, seed: int, totals: dict[str, float]) -> int:
    """One hand of rummy-ismcts (seat 0) against random; its search time and simulations go to ``totals``."""
    from agents.registry import make_agent

    agents = [make_agent("rummy-ismcts", seed=seed), make_agent("random", seed=seed)]
    for seat, agent in enumerate(agents):
        agent.reset(seat, env.unwrapped.rules, 2)

    def choose(name: str, obs: dict) -> int:
        seat = env.unwrapped.agent_name_mapping[name]
        action = agents[seat].act(obs)
        if seat == 0:
            totals["simulations"] += agents[0].last_simulations
            totals["search_s"] += agents[0].last_seconds
        return action

    return play_aec(env, seed, choose)


def main() -> None:
    parser = make_parser("Rummy random play", 100)
    parser.add_argument("--mode", choices=("aec", "engine", "ismcts"), default="aec")
    parser.add_argument("--players", type=int, choices=(2, 3, 4), default=2)
    args = parser.parse_args()
    env = burako_env.rummy_env(num_players=args.players)
    totals = {"simulations": 0.0, "search_s": 0.0}
    if args.mode == "ismcts":
        if args.players != 2:
            parser.error("--mode ismcts plays 2 players")

        def play(rng: random.Random, seed: int) -> int:
            return play_ismcts(env, seed, totals)

    elif args.mode == "aec":

        def play(rng: random.Random, seed: int) -> int:
            return play_aec(env, seed, uniform_choice(rng))

    else:

        def play(rng: random.Random, seed: int) -> int:
            return play_engine(env.unwrapped.rules, args.players, rng, seed)

    warm = random.Random(10**6)
    for i in range(args.warmup):
        play(warm, 10**6 + i)
    rng = random.Random(args.seed)
    totals.update(simulations=0.0, search_s=0.0)
    steps = 0
    with Timer() as timer:
        for i in range(args.games):
            steps += play(rng, args.seed + i)
    extra: dict[str, float] = {"players": args.players}
    if args.mode == "ismcts":
        extra["simulations"] = totals["simulations"]
        extra["sims_per_s"] = round(totals["simulations"] / max(totals["search_s"], 1e-9), 1)
    report(f"rummy_{args.mode}_{args.players}p", args, timer, args.games, steps, extra)


if __name__ == "__main__":
    main()
