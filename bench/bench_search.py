"""Search speed: simulations per second of the search agents, side by side.

    .venv/bin/python bench/bench_search.py                 # 3 rounds, 12 decisions, 48 simulations
    .venv/bin/python bench/bench_search.py --repeats 5 --simulations 100 --json bench/results/search.jsonl

The decisions are fixed: positions with 3+ legal moves from hands of
Planners (2-player burako, deal seeds S, S+1, ...; every 7th such
decision), so every agent answers the same questions. Each agent gets the
same budget and tree settings (``--simulations``, and for the two ISMCTS
agents depth 4, 6 root candidates, 3 tree moves, their defaults); a decision
is timed around ``agent.act`` (root ranking, conversion to the flat state
and the search all included) and simulations per second is the sum of
``last_simulations`` over the sum of those times.

Rounds are interleaved (each round runs every agent on every decision, in
a rotating order) so slow phases of a shared machine hit all of them; the
table gives the median of the rounds and the ratio of medians to
``ismcts`` (today's agent). The first decision of each agent in a round is
a warm-up (numba compilation, torch start) and is not timed. The load
average (``os.getloadavg``) is printed before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import SeatView
from agents.heuristic import Planner
from agents.registry import make_agent
from burako_env.engine import GameState, Phase
from burako_env.observation import Observer

AGENTS = ("ismcts", "fast_ismcts", "neural_ismcts")


def decisions(count: int, seed: int) -> list[GameState]:
    """``count`` positions with 3+ legal moves (every 7th one) from hands of Planners."""
    found: list[GameState] = []
    deal = seed
    seen = 0
    while len(found) < count:
        state = GameState.new_game(np.random.default_rng(deal), "burako", 2)
        players = [Planner(seed=p) for p in range(2)]
        for p, agent in enumerate(players):
            agent.reset(p, state.rules, 2)
        view_rng = np.random.default_rng([deal, 1])
        while state.phase != Phase.HAND_OVER and len(found) < count:
            legal = state.legal_actions()
            if len(legal) >= 3:
                seen += 1
                if seen % 7 == 0:
                    found.append(state.clone())
            p = state.current
            state.apply(players[p].act({"action_mask": state.legal_mask().copy()}, SeatView(state, p, view_rng)))
        deal += 1
    return found


def time_agent(name: str, states: list[GameState], options: dict[str, Any], seed: int) -> tuple[int, float]:
    """(simulations, seconds) of one agent over the decisions (after one warm-up)."""
    agent = make_agent(name, seed=seed, **options)
    observer = Observer(2, states[0].rules)
    sims = 0
    seconds = 0.0
    for i, state in enumerate([states[0], *states]):
        p = state.current
        agent.reset(p, state.rules, 2)
        observation = {"observation": observer.encode(state, p), "action_mask": state.legal_mask().copy()}
        view = SeatView(state, p, np.random.default_rng([seed, i]))
        start = time.perf_counter()
        agent.act(observation, view)
        elapsed = time.perf_counter() - start
        if i > 0:
            sims += agent.last_simulations
            seconds += elapsed
    return sims, seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", default=",".join(AGENTS), help="comma-separated registry names")
    parser.add_argument("--simulations", type=int, default=48)
    parser.add_argument("--states", type=int, default=12, help="decisions per round")
    parser.add_argument("--repeats", type=int, default=3, help="rounds (the table gives medians)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="append one JSON line with every round here")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.agents.split(",") if n.strip()]
    load_before = os.getloadavg()
    states = decisions(args.states, args.seed)
    rounds: dict[str, list[float]] = {n: [] for n in names}
    ms_per_sim: dict[str, list[float]] = {n: [] for n in names}
    for r in range(args.repeats):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            sims, seconds = time_agent(name, states, {"simulations": args.simulations}, args.seed + r)
            rounds[name].append(sims / seconds)
            ms_per_sim[name].append(1000.0 * seconds / sims)
            print(f"round {r + 1}/{args.repeats} {name:>14}: {sims} simulations in {seconds:.2f} s", flush=True)
    load_after = os.getloadavg()
    base = statistics.median(rounds["ismcts"]) if "ismcts" in rounds else None
    print()
    print(f"{args.states} decisions, {args.simulations} simulations each, {args.repeats} rounds (medians)")
    print("| agent | simulations/s | ms / simulation | x ismcts |")
    print("|---|---:|---:|---:|")
    for name in names:
        med = statistics.median(rounds[name])
        ratio = f"{med / base:.1f}x" if base else "-"
        print(f"| `{name}` | {med:,.0f} | {statistics.median(ms_per_sim[name]):.2f} | {ratio} |")
    print(
        f"load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, after "
        f"{load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} ({os.cpu_count()} cores)"
    )
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)  # bench/results/ is not in a fresh checkout
        with open(args.json, "a") as fh:
            record = {
                "bench": "search",
                "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "machine": platform.machine(),
                "cores": os.cpu_count(),
                "simulations": args.simulations,
                "states": args.states,
                "sims_per_s": rounds,
                "load_before": load_before,
                "load_after": load_after,
            }
            fh.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
