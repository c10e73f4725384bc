"""A heuristic's decision: the Python policy against its compiled twin (agents/fast_planner.py).

    .venv/bin/python bench/bench_heuristics.py                  # planner, burako 2p, 3,000 positions
    .venv/bin/python bench/bench_heuristics.py --style greedy --rules burako --players 4

Positions come from hands played by the policy (4 moves in 5, else a random legal one),
every decision with more than one legal action. Timed over the same positions, each
figure the median of ``--rounds`` passes, microseconds a decision:

| path             | what a decision costs                                                        |
|------------------|------------------------------------------------------------------------------|
| python+view      | ``state.determinize`` (what ``view.public_state()`` does) and ``choose``     |
| python           | ``PlannerPolicy.choose`` on a ready determinization                          |
| compiled         | ``fast_planner.choose_game`` called from Python on a ``FastGame``            |
| compiled batch   | ``fast_planner.choose_rows`` over all positions in one call (the rollout's)  |

The compiled paths are checked to choose the Python policy's actions before timing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents import fast_planner
from agents.heuristic import GreedyPolicy, PlannerPolicy
from burako_env.engine import GameState
from burako_env.fast import FastGame
from burako_env.rules import load_rules


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--style", choices=fast_planner.COMPILED_AGENTS, default="planner")
    parser.add_argument("--rules", default="burako")
    parser.add_argument("--players", type=int, default=2)
    parser.add_argument("--positions", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rules = load_rules(args.rules)
    policy = PlannerPolicy() if args.style == "planner" else GreedyPolicy()
    tables = fast_planner.tables_for(rules, args.players, None, args.style).kernel_args
    rng = np.random.default_rng(0)
    states: list[GameState] = []
    views: list[GameState] = []
    games: list[FastGame] = []
    deal = 0
    while len(states) < args.positions:
        state = GameState.new_game(np.random.default_rng([1, deal]), rules, args.players)
        deal += 1
        while not state.hand_over and len(states) < args.positions:
            legal = np.flatnonzero(state.legal_mask()).tolist()
            view = state.determinize(state.current, rng)
            action = policy.choose(view, legal)
            if len(legal) > 1:
                states.append(state.clone())
                views.append(view)
                games.append(FastGame.from_game_state(state))
            state.apply(action if rng.random() < 0.8 else int(rng.choice(legal)))
    legal_lists = [np.flatnonzero(s.legal_mask()).tolist() for s in states]
    masks = np.stack([g.legal_mask() for g in games])
    flat = np.stack([g.st for g in games])
    core = games[0].args
    expected = [policy.choose(v, legal) for v, legal in zip(views, legal_lists, strict=True)]
    out = np.zeros(len(games), dtype=np.int64)
    fast_planner.choose_rows(flat, masks, np.arange(len(games)), core, tables, out)
    assert out.tolist() == expected, "the compiled heuristic chose otherwise"
    assert [fast_planner.choose_game(g, tables) for g in games] == expected

    def timed(run: object) -> float:
        samples = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            run()  # type: ignore[operator]
            samples.append((time.perf_counter() - start) / len(states) * 1e6)
        return statistics.median(samples)

    view_rng = np.random.default_rng(2)
    figures = {
        "python+view": timed(
            lambda: [
                policy.choose(s.determinize(s.current, view_rng), legal)
                for s, legal in zip(states, legal_lists, strict=True)
            ]
        ),
        "python": timed(lambda: [policy.choose(v, legal) for v, legal in zip(views, legal_lists, strict=True)]),
        "compiled": timed(lambda: [fast_planner.choose_game(g, tables) for g in games]),
        "compiled batch": timed(
            lambda: fast_planner.choose_rows(flat, masks, np.arange(len(games)), core, tables, out)
        ),
    }
    print(f"{args.style} on {args.rules} {args.players}p, {len(states):,} positions, load {os.getloadavg()[0]:.2f}")
    base = figures["python+view"]
    for name, micros in figures.items():
        print(f"  {name:15s} {micros:9.1f} µs a decision  ({base / micros:6.1f}x python+view)")


if __name__ == "__main__":
    main()
