"""What the examples share: a trained policy, wrapped as an agent, against
registered agents on duplicate games (``training.evaluate``)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any


def add_evaluation_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every example shares: evaluation, seed and output folder."""
    parser.add_argument("--eval-games", type=int, default=400, help="duplicate games against each eval opponent")
    parser.add_argument("--eval-opponents", default="random", help="comma-separated registry names")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="directory for results.json (and the model, where saved)")


def finish(results: dict[str, Any], name: str, make: Callable[[], Any], args: argparse.Namespace) -> Path | None:
    """Add the machine load and the evaluations (``--eval-opponents``) to
    ``results``, print it as JSON and write ``results.json`` under ``--out``
    (returned, created; None without ``--out``)."""
    results["load_average"] = [round(x, 2) for x in os.getloadavg()]
    results["evaluations"] = [
        evaluate_against(name, make, opponent, args.eval_games, seed=args.seed + 1000)
        for opponent in args.eval_opponents.split(",")
        if opponent
    ]
    from training.files import json_report  # NaN (an interval of 2 games) as null: a bare NaN is no JSON

    text = json_report(results)
    print(text, end="")
    if not args.out:
        return None
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(text)
    return out


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
