"""The shipping rule of issue 15: the held-out evaluations of a trained policy and the verdict.

A trained network replaces ``agents/checkpoints/burako_ppo.pt`` only if, over held-out duplicate
2-player Burako games (``burako-eval``):

| table | opponent | games | seed | passes when |
|---|---|---|---|---|
| planner_seed2026 | planner | 1,000 | 2026 | the two planner win rates' mean >= 0.70, each 95% lower bound > 0.5 |
| planner_seed2027 | planner | 1,000 | 2027 | (with the row above) |
| ismcts30_seed2026 | ismcts(simulations=30) | 400 | 2026 | win rate >= 0.55, its 95% lower bound > 0.5 |

    python -m training.ship_check <policy.pt> [--games N] [--search-games N] [--workers N] [--out DIR]
    python -m training.ship_check <folder>    # the verdict on tables already written

The first form plays the three evaluations (``burako-eval`` in a child process each; the tables, records
and printed outputs go to ``--out``, by default ``ship_check/`` beside the policy), then prints one line
per check and the verdict. A killed check continues where it stopped when run again: an evaluation whose
record file exists resumes from it. Exit status 0 when it ships, 1 when not, 2 on bad input.
``scripts/ship_check.sh`` is the same with environment overrides.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Evaluation:
    """One held-out evaluation of the rule: its table's name, the deals' seed and the opponent."""

    name: str
    seed: int
    opponent: str
    options: tuple[str, ...] = ()

    @property
    def against_search(self) -> bool:
        return self.opponent != "planner"


#: the evaluations the rule reads, in the order they are played
EVALUATIONS = (
    Evaluation("planner_seed2026", 2026, "planner"),
    Evaluation("planner_seed2027", 2027, "planner"),
    Evaluation("ismcts30_seed2026", 2026, "ismcts", ("simulations=30",)),
)
TABLES = tuple(e.name for e in EVALUATIONS)
PLANNER_GAMES = 1000
SEARCH_GAMES = 400
PLANNER_MEAN = 0.70
SEARCH_RATE = 0.55
LOWER_BOUND = 0.5


def lower_bound(table: dict[str, Any]) -> float:
    """The win rate's 95% lower bound; none (a single deal has no interval) is NaN, which fails."""
    bound = table["win_rate_ci"][0]
    return float("nan") if bound is None else float(bound)


def checks(tables: dict[str, dict[str, Any]]) -> list[tuple[str, bool]]:
    """Each check of the rule as (what it says, whether it passes)."""
    planner = [tables[e.name] for e in EVALUATIONS if not e.against_search]
    (search,) = (tables[e.name] for e in EVALUATIONS if e.against_search)
    mean = sum(float(t["win_rate"]) for t in planner) / len(planner)
    result = [(f"planner mean win rate {mean:.3f} >= {PLANNER_MEAN:.2f}", mean >= PLANNER_MEAN)]
    for table in planner:
        low = lower_bound(table)
        result.append((f"planner seed {table['seed']}: lower bound {low:.3f} > {LOWER_BOUND}", low > LOWER_BOUND))
    rate, low = float(search["win_rate"]), lower_bound(search)
    result.append((f"ismcts(30) win rate {rate:.3f} >= {SEARCH_RATE:.2f}", rate >= SEARCH_RATE))
    result.append((f"ismcts(30) lower bound {low:.3f} > {LOWER_BOUND}", low > LOWER_BOUND))
    return result


def evaluation_command(
    evaluation: Evaluation, policy: Path, out: Path, games: int, workers: int, python: str = sys.executable
) -> list[str]:
    """The ``burako-eval`` command line of one evaluation; it resumes when its record file is there."""
    record = out / f"{evaluation.name}.jsonl.gz"
    command = [python, "-m", "training.evaluate", "--a", "policy", "--a-opt", f"checkpoint={policy}"]
    command += ["--b", evaluation.opponent]
    for option in evaluation.options:
        command += ["--b-opt", option]
    command += ["--games", str(games), "--seed", str(evaluation.seed), "--workers", str(workers)]
    command += ["--record", str(record), "--json", str(out / f"{evaluation.name}.json"), "--no-progress"]
    if record.is_file() and record.stat().st_size > 0:
        command.append("--resume")
    return command


def play(policy: Path, out: Path, planner_games: int, search_games: int, workers: int) -> int:
    """Play the rule's evaluations of ``policy`` into ``out``, each output also kept as ``<table>.txt``;
    returns the first failing exit status, or 0."""
    out.mkdir(parents=True, exist_ok=True)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average: {load}", flush=True)
    for evaluation in EVALUATIONS:
        games = search_games if evaluation.against_search else planner_games
        against = " ".join((evaluation.opponent, *evaluation.options))
        print(f"== policy vs {against} ({games} games, seed {evaluation.seed}) ==", flush=True)
        command = evaluation_command(evaluation, policy, out, games, workers)
        with (out / f"{evaluation.name}.txt").open("w", encoding="utf-8") as text:
            child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
            assert child.stdout is not None
            for line in child.stdout:
                sys.stdout.write(line)
                text.write(line)
            status = child.wait()
        if status != 0:
            print(f"ship_check: the evaluation {evaluation.name} stopped with status {status}", file=sys.stderr)
            return status
    return 0


def verdict(folder: Path) -> int:
    """Print each check of the rule on ``folder``'s tables and the verdict; 0 ships, 1 not, 2 missing."""
    missing = [name for name in TABLES if not (folder / f"{name}.json").is_file()]
    if missing:
        print(f"ship_check: {folder} lacks {', '.join(f'{name}.json' for name in missing)}", file=sys.stderr)
        return 2
    tables = {name: json.loads((folder / f"{name}.json").read_text()) for name in TABLES}
    result = checks(tables)
    for text, ok in result:
        print(("pass  " if ok else "FAIL  ") + text)
    passed = all(ok for _, ok in result)
    print("verdict:", "ships" if passed else "does not ship")
    return 0 if passed else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.ship_check", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("path", type=Path, help="a policy.pt to evaluate, or a folder of tables already written")
    parser.add_argument("--games", type=int, default=PLANNER_GAMES, help="games per planner seed")
    parser.add_argument("--search-games", type=int, default=SEARCH_GAMES, help="games against ismcts(30)")
    parser.add_argument("--workers", type=int, default=2, help="burako-eval worker processes")
    parser.add_argument("--out", type=Path, default=None, help="folder of the tables (default: ship_check/ beside it)")
    args = parser.parse_args(argv)
    if args.path.is_dir():
        return verdict(args.path)
    if not args.path.is_file():
        parser.error(f"no such policy file or folder: {args.path}")
    policy = args.path.resolve()
    out = args.out if args.out is not None else policy.parent / "ship_check"
    status = play(policy, out, args.games, args.search_games, args.workers)
    return status if status != 0 else verdict(out)


if __name__ == "__main__":
    sys.exit(main())
