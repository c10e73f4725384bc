"""Duplicate evaluation of Rummy agent A against agent B.

    python -m training.rummy_evaluate --a rummy-heuristic --b random --deals 500 --seed 0 --workers 2

(``burako-eval --game rummy`` with ``--deals N`` for ``--games 2N``: one set of checks and errors.)

Duplicate evaluation (2 players, each for himself): every deal is played
twice, A in seat 0 then in seat 1, with the deal and agent seeds of
``training.evaluate`` (``deal_seed``, ``agent_seed``), so deal and seat luck
cancel in the pair. A game is one hand; A wins it when his hand total is
lower than B's (R10: the closer has 0), a tie counts 0.5. The win rate and
its 95% Wilson interval are over the deals' pair means
(:func:`burako_env.stats.rate_ci`), the score difference (B's total minus
A's: positive when A does better) with a normal interval.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.registry import agent_names
from agents.rummy_runner import play_rummy_hand
from burako_env.records import RecordWriter
from burako_env.rummy.rules import RummyRules, load_rummy_rules
from training.duplicate import AgentSpec, MatchFigures, agent_seed, deal_chunks, deal_seed, match_figures, scored_row
from training.evaluate import deal_ordered_results
from training.games import LOWER_TOTAL_WINS


@dataclass
class RummySummary(MatchFigures):
    """The evaluation's figures (:class:`~training.duplicate.MatchFigures`, intervals over deal pairs;
    ``mean_diff`` is B's hand total minus A's: positive when A does better) and what else the report shows."""

    a: str
    b: str
    rules: str
    seed: int
    closed: int
    blocked: int
    win_rate_by_seat: tuple[float, float]
    mean_turns: float
    seconds: float = 0.0


def _play_pairs(
    a: AgentSpec, b: AgentSpec, rules: RummyRules, seed: int, deals: Sequence[int], record: bool
) -> list[dict]:
    """Both games of each deal (A in seat 0, then in seat 1); one dict per game."""
    out = []
    for deal in deals:
        dseed = deal_seed(seed, deal)
        for a_seat in (0, 1):
            specs = [a, b] if a_seat == 0 else [b, a]
            agents = [spec.build(agent_seed(seed, deal, seat)) for seat, spec in enumerate(specs)]
            labels = [f"{'A' if seat == a_seat else 'B'}:{spec.label}" for seat, spec in enumerate(specs)]
            meta = {"evaluation": {"seed": seed, "deal": deal, "a_seat": a_seat, "a": a.label, "b": b.label}}
            result = play_rummy_hand(agents, rules, 2, dseed, record=record, agent_names=labels, meta=meta)
            # A's points and margin as every duplicate tool scores them (the lower total wins, R10)
            row = scored_row(
                pairing=0,
                a=a.label,
                b=b.label,
                deal=deal,
                seating=a_seat,
                deal_seed=dseed,
                a_seats=(a_seat,),
                sides=(0, 1),
                side_totals=result.hand_scores,
                end_reason="closed" if result.closer is not None else "blocked",
                turns=result.turns,
                actions=result.num_actions,
                lower_wins=LOWER_TOTAL_WINS["rummy"],
            )
            out.append(
                {
                    "deal": deal,
                    "a_seat": a_seat,
                    "points": row.a_points,
                    "diff": row.score_diff,
                    "closed": result.closer is not None,
                    "turns": result.turns,
                    "record": result.record,
                }
            )
    return out


@dataclass(frozen=True)
class _RummyTask:
    """A chunk of deals for one worker of :mod:`training.game_pool` (its faults, signals and dead
    workers are handled there, as for Burako)."""

    a: AgentSpec
    b: AgentSpec
    rules: RummyRules
    seed: int
    jobs: tuple[int, ...]
    record: bool
    move_time_limit: float | None = None

    def play(self, index: int, status: Any = None) -> list[dict]:
        """Both games of deal ``jobs[index]``."""
        return _play_pairs(self.a, self.b, self.rules, self.seed, (self.jobs[index],), self.record)


def evaluate_rummy(
    a: str | AgentSpec,
    b: str | AgentSpec,
    deals: int,
    seed: int = 0,
    rules: RummyRules | str = "rummy",
    workers: int = 1,
    record_path: str | None = None,
    progress: bool = False,
    chunk_size: int = 10,
) -> RummySummary:
    """Duplicate evaluation of ``a`` against ``b`` (registry names, or
    :class:`~training.duplicate.AgentSpec` with options) over ``deals`` deals
    (2 games each), ``chunk_size`` deals per worker task."""
    a = a if isinstance(a, AgentSpec) else AgentSpec.of(a)
    b = b if isinstance(b, AgentSpec) else AgentSpec.of(b)
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size (deals per worker task) must be an integer >= 1, got {chunk_size!r}")
    rules = load_rummy_rules(rules)
    start = time.perf_counter()
    chunks = deal_chunks(deals, chunk_size)
    games: list[dict] = []
    writer = RecordWriter(record_path) if record_path else None
    # the pool of burako-eval: an agent's fault stops every worker at once, a dead worker is a clear
    # error, and an interruption (Ctrl-C, SIGTERM) leaves no worker behind (a bare ProcessPoolExecutor
    # played on, left its workers running after a kill, and printed a BrokenProcessPool traceback)
    tasks = [_RummyTask(a, b, rules, seed, tuple(chunk), writer is not None) for chunk in chunks]
    try:
        for deal_games in deal_ordered_results(tasks, workers, deal_of=lambda game: game["deal"]):
            for game in deal_games:
                if writer is not None:
                    writer.write(game.pop("record"))
                games.append(game)
            if progress:
                print(f"\r{len(games) // 2}/{deals} deals", end="", file=sys.stderr, flush=True)
    finally:
        if writer is not None:
            writer.close()
    if progress:
        print(file=sys.stderr)
    figures = match_figures((g["deal"], g["points"], g["diff"]) for g in games)
    by_seat = tuple(float(np.mean([g["points"] for g in games if g["a_seat"] == s])) for s in (0, 1))
    return RummySummary(
        **figures.figures(),
        a=a.label,
        b=b.label,
        rules=rules.name,
        seed=seed,
        closed=sum(g["closed"] for g in games),
        blocked=sum(not g["closed"] for g in games),
        win_rate_by_seat=by_seat,  # type: ignore[arg-type]
        mean_turns=float(np.mean([g["turns"] for g in games])),
        seconds=time.perf_counter() - start,
    )


def main(argv: list[str] | None = None) -> int:
    """``burako-eval --game rummy`` (one set of checks and errors), with ``--deals N`` for ``--games 2N``
    and ``--json`` printing the summary as one JSON line instead of the table. It ran its own loop, which
    offered Burako agents and ended bad input (a negative seed, a missing folder) in tracebacks."""
    from training.evaluate import main as evaluate_main

    parser = argparse.ArgumentParser(description="Rummy duplicate evaluation of agent A against agent B (2 players)")
    parser.add_argument("--a", default="rummy-heuristic", help=f"one of {', '.join(agent_names())} or module:Class")
    parser.add_argument("--b", default="random")
    parser.add_argument("--deals", type=int, default=500, help="deals; each is played twice (seats swapped)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rules", default="rummy", help="Rummy preset name or YAML path")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--record", default=None, help="write every game's record (JSON lines) here")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON line")
    args = parser.parse_args(argv)
    if args.deals < 1:
        parser.error("--deals must be at least 1")
    forwarded = ["--game", "rummy", "--a", args.a, "--b", args.b, "--games", str(2 * args.deals)]
    forwarded += ["--seed", str(args.seed), "--rules", args.rules, "--workers", str(args.workers)]
    forwarded += [] if args.record is None else ["--record", args.record]
    if not args.json:
        return evaluate_main(forwarded)
    with tempfile.TemporaryDirectory() as folder:
        summary = Path(folder) / "summary.json"
        with contextlib.redirect_stdout(io.StringIO()):  # the table; the JSON line is the output
            status = evaluate_main([*forwarded, "--json", str(summary), "--no-progress"])
        if status == 0:
            print(json.dumps(json.loads(summary.read_text(encoding="utf-8"))))
    return status


if __name__ == "__main__":
    raise SystemExit(main())
