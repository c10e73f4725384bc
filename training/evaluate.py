"""Duplicate evaluation of agent A against agent B.

    burako-eval --a planner --b random --games 1000 --seed 0 --workers 2 \\
        --rules burako --players 2 --record games.jsonl

Why duplicate: a hand's luck (the deal) and the seat (who is mano, who
draws first) dwarf the skill difference between agents over a few hundred
games. So every deal is played twice with the seats swapped, as in duplicate
bridge: with 2 players A sits in seat 0 then in seat 1; with 4 players A's
partnership sits in seats 0+2 then in seats 1+3. Each side gets each hand of
tiles once, and the pair's mean outcome is free of both deal and seat luck.

Seeds (all derived from ``--seed``, so a run is reproducible and independent
of ``--workers``):

- deal ``i`` is dealt from ``deal_seed(seed, i)`` = the first 32-bit word of
  ``SeedSequence([seed, i])``;
- the agent in seat ``s`` of deal ``i`` is built with
  ``agent_seed(seed, i, s)`` in *both* games of the pair, and each seat's view
  resamples from its own generator seeded by the deal seed and the seat
  (``agents.runner``). So the only thing the swap changes is who sits where:
  when A and B are the same agent the two games are the same game, the pair
  cancels exactly and the win rate is exactly 0.5 (a built-in sanity check).

Outcome of a game for A: the side with the higher hand score wins (1), a tie
is 0.5, a loss 0. Void and truncated hands have no score: they count as ties
(score difference 0) and are reported separately. The score difference is
A's side total minus B's side total.

Confidence intervals (95%) are computed on the *paired deals*: each deal
contributes the mean of its two games. The score difference's interval is
the normal approximation mean ± 1.96 · s / sqrt(deals), with s the sample
standard deviation of the deal means (ddof=1); the win rate's is a Wilson
score interval (``burako_env.stats.rate_ci``), which stays in [0, 1] and
does not collapse on small samples (20 of 20: [0.839, 1.000]). Pairs are independent by construction
(different deals), the games within a pair are not, which is why the pair is
the unit.

Games run in worker processes (``--workers``, spawn start method) by chunks
of deals; results are put back in deal order, so the table and the record
file are byte-identical whatever the worker count.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import math
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from agents.registry import agent_names, make_agent, parse_options
from agents.runner import AgentFault, play_game
from burako_env.engine import TRUNCATED, VOID
from burako_env.records import RecordWriter
from burako_env.rules import Rules, RulesError, load_rules
from burako_env.stats import mean_ci, rate_ci
from training.locks import file_lock


# ---------------------------------------------------------------------- agents and seats
@dataclass(frozen=True)
class AgentSpec:
    """How to build one agent for each game: a registry name and options, or
    (for tests and custom agents) a ``factory(seed, **options)``, which must be
    picklable (a module-level callable) when ``workers > 1``."""

    name: str
    options: tuple[tuple[str, Any], ...] = ()
    factory: Callable[..., Any] | None = None

    @classmethod
    def of(
        cls, name: str, options: dict[str, Any] | None = None, factory: Callable[..., Any] | None = None
    ) -> AgentSpec:
        return cls(name, tuple(sorted((options or {}).items())), factory)

    @property
    def label(self) -> str:
        """The name as written in records and reports: ``planner(simulations=200)``."""
        if not self.options:
            return self.name
        return f"{self.name}({', '.join(f'{k}={v!r}' for k, v in self.options)})"

    def build(self, seed: int) -> Any:
        if self.factory is not None:
            return self.factory(seed=seed, **dict(self.options))
        return make_agent(self.name, seed=seed, **dict(self.options))


def seatings(num_players: int) -> list[tuple[str, ...]]:
    """The two seatings of a deal, as "A"/"B" per seat: A's side (seats 0+2
    with 4 players) first, then the sides swapped."""
    if num_players == 2:
        return [("A", "B"), ("B", "A")]
    if num_players == 4:
        return [("A", "B", "A", "B"), ("B", "A", "B", "A")]
    raise ValueError(
        f"duplicate evaluation needs two sides: 2 players, or 4 in partnerships; got {num_players} players"
    )


def deal_seed(seed: int, deal: int) -> int:
    """The seed of deal ``deal`` of an evaluation run with ``seed``."""
    return int(np.random.SeedSequence([seed, deal]).generate_state(1, dtype=np.uint32)[0])


def agent_seed(seed: int, deal: int, seat: int) -> int:
    """The seed of the agent in ``seat`` of deal ``deal``; the same in both games of the pair."""
    return int(np.random.SeedSequence([seed, deal, seat + 1]).generate_state(1, dtype=np.uint32)[0])


# ---------------------------------------------------------------------- one game
@dataclass
class GameOutcome:
    """One game of the evaluation, from A's point of view."""

    deal: int
    seating: int
    deal_seed: int
    a_seats: tuple[int, ...]
    #: hand totals of A's and B's sides; None for a void or truncated hand
    a_score: int | None
    b_score: int | None
    end_reason: str
    turns: int
    num_actions: int
    record: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def diff(self) -> int:
        """A's total minus B's (0 without a score)."""
        if self.a_score is None or self.b_score is None:
            return 0
        return self.a_score - self.b_score

    @property
    def points(self) -> float:
        """1 win, 0.5 tie (void and truncated hands included), 0 loss."""
        d = self.diff
        return 1.0 if d > 0 else 0.0 if d < 0 else 0.5


@dataclass(frozen=True)
class _Task:
    a: AgentSpec
    b: AgentSpec
    rules: Rules
    num_players: int
    seed: int
    deals: tuple[int, ...]
    record: bool


def play_deal_pair(
    a: AgentSpec, b: AgentSpec, rules: Rules, num_players: int, seed: int, deal: int, record: bool
) -> list[GameOutcome]:
    """Both games of one deal (A's side first, then the sides swapped)."""
    dseed = deal_seed(seed, deal)
    out = []
    for k, seating in enumerate(seatings(num_players)):
        specs = [a if who == "A" else b for who in seating]
        agents = [spec.build(agent_seed(seed, deal, seat)) for seat, spec in enumerate(specs)]
        names = [f"{who}:{spec.label}" for who, spec in zip(seating, specs, strict=True)]
        a_seats = tuple(s for s, who in enumerate(seating) if who == "A")
        meta = {
            "evaluation": {
                "seed": seed,
                "deal": deal,
                "seating": k,
                "a": a.label,
                "b": b.label,
                "a_seats": list(a_seats),
            }
        }
        try:
            result = play_game(agents, rules, num_players, dseed, record=record, agent_names=names, meta=meta)
        except AgentFault as fault:
            fault.args = (f"{fault.args[0]} [evaluation deal {deal}, seating {k}]",)
            raise
        a_side = result.side_of[a_seats[0]]
        totals = result.side_totals
        out.append(
            GameOutcome(
                deal=deal,
                seating=k,
                deal_seed=dseed,
                a_seats=a_seats,
                a_score=None if totals is None else totals[a_side],
                b_score=None if totals is None else totals[1 - a_side],
                end_reason=result.end_reason,
                turns=result.turns,
                num_actions=result.num_actions,
                record=result.record,
            )
        )
    return out


def _run_task(task: _Task) -> list[GameOutcome]:
    """Worker entry point: a chunk of deals, in order."""
    out: list[GameOutcome] = []
    for deal in task.deals:
        out.extend(play_deal_pair(task.a, task.b, task.rules, task.num_players, task.seed, deal, task.record))
    return out


# ---------------------------------------------------------------------- summary
@dataclass
class Summary:
    """The evaluation's figures; CIs are on paired deals (normal approximation)."""

    a: str
    b: str
    rules: str
    num_players: int
    seed: int
    deals: int
    games: int
    wins: int
    draws: int
    losses: int
    void: int
    truncated: int
    win_rate: float
    win_rate_ci: tuple[float, float]
    mean_diff: float
    mean_diff_ci: tuple[float, float]
    #: A's win rate in each seating (0: A's side in seat 0, 1: swapped): shows the seat bias the pairing cancels
    win_rate_by_seating: tuple[float, ...]
    mean_turns: float
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarize(outcomes: Sequence[GameOutcome], a: str, b: str, rules: str, num_players: int, seed: int) -> Summary:
    """Figures over games; intervals over deals (the mean of each deal's games)."""
    by_deal: dict[int, list[GameOutcome]] = {}
    for o in outcomes:
        by_deal.setdefault(o.deal, []).append(o)
    pair_points = [sum(o.points for o in games) / len(games) for games in by_deal.values()]
    pair_diffs = [sum(o.diff for o in games) / len(games) for games in by_deal.values()]
    win_rate, win_ci = rate_ci(pair_points)  # Wilson: inside [0, 1], never a point on a small sample
    mean_diff, diff_ci = mean_ci(pair_diffs)
    seating_count = max((o.seating for o in outcomes), default=-1) + 1
    by_seating = []
    for k in range(seating_count):
        pts = [o.points for o in outcomes if o.seating == k]
        by_seating.append(sum(pts) / len(pts) if pts else math.nan)
    return Summary(
        a=a,
        b=b,
        rules=rules,
        num_players=num_players,
        seed=seed,
        deals=len(by_deal),
        games=len(outcomes),
        wins=sum(o.points == 1.0 for o in outcomes),
        draws=sum(o.points == 0.5 for o in outcomes),
        losses=sum(o.points == 0.0 for o in outcomes),
        void=sum(o.end_reason == VOID for o in outcomes),
        truncated=sum(o.end_reason == TRUNCATED for o in outcomes),
        win_rate=win_rate,
        win_rate_ci=win_ci,
        mean_diff=mean_diff,
        mean_diff_ci=diff_ci,
        win_rate_by_seating=tuple(by_seating),
        mean_turns=float(np.mean([o.turns for o in outcomes])) if outcomes else math.nan,
    )


# ---------------------------------------------------------------------- the run
@dataclass
class Evaluation:
    summary: Summary
    outcomes: list[GameOutcome]


def _chunks(n_deals: int, chunk_size: int) -> list[tuple[int, ...]]:
    return [tuple(range(i, min(i + chunk_size, n_deals))) for i in range(0, n_deals, chunk_size)]


def one_thread_per_worker() -> None:
    """Worker processes already use every core together: a policy agent's torch
    must not start a thread per core in each of them (oversubscribed threads
    spin and slow every worker down many times over). Set before torch loads."""
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["MKL_NUM_THREADS"] = "1"


def _ordered_results(tasks: list[_Task], workers: int) -> Iterator[list[GameOutcome]]:
    """Each task's outcomes, in task order, whatever order the workers finish in."""
    if workers <= 1:
        for task in tasks:
            yield _run_task(task)
        return
    # spawn: no fork of a process that may hold threads (tqdm's monitor), and
    # the same behaviour on every platform
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=one_thread_per_worker) as pool:
        futures = [pool.submit(_run_task, task) for task in tasks]
        try:
            for task, future in zip(tasks, futures, strict=True):
                try:
                    yield future.result()
                except BrokenProcessPool as exc:
                    deals = f"{task.deals[0]}..{task.deals[-1]}" if task.deals else "none"
                    raise AgentFault(
                        f"a worker process died while playing deals {deals} of {task.a.label} vs {task.b.label} "
                        "(an agent ended its process: os._exit, a crash or the out-of-memory killer); "
                        "burako-tournament records such games as forfeits",
                        kind="crash",
                    ) from exc
        finally:
            for future in futures:
                future.cancel()


def evaluate(
    a: AgentSpec,
    b: AgentSpec,
    *,
    games: int,
    seed: int = 0,
    rules: Rules | str = "burako",
    num_players: int = 2,
    workers: int = 1,
    record_path: str | Path | None = None,
    keep_records: bool = False,
    chunk_size: int | None = None,
    progress: bool = False,
) -> Evaluation:
    """Play ``games`` games (``games / 2`` deals, each with both seatings) and
    summarize. Records go to ``record_path`` (JSON lines, game order) and are
    kept on the outcomes with ``keep_records``. Raises :class:`AgentFault` if
    an agent fails."""
    if games <= 0 or games % 2:
        raise ValueError(f"games must be a positive even number (each deal is played twice), got {games}")
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    rules_obj = load_rules(rules)
    rules_obj.check_players(num_players)
    seatings(num_players)  # two sides, or a clear error now rather than in a worker
    n_deals = games // 2
    if chunk_size is None:
        chunk_size = max(1, min(25, math.ceil(n_deals / (4 * workers))))
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size (deals per worker task) must be an integer >= 1, got {chunk_size!r}")
    want_records = record_path is not None or keep_records
    tasks = [_Task(a, b, rules_obj, num_players, seed, deals, want_records) for deals in _chunks(n_deals, chunk_size)]
    outcomes: list[GameOutcome] = []
    writer = None
    lock = None
    if record_path is not None:
        record_path = Path(record_path)
        if record_path.is_dir():
            raise ValueError(f"record path {str(record_path)!r} is a folder; name a file in it")
        if not record_path.parent.is_dir():
            raise ValueError(f"record path {str(record_path)!r}: the folder {str(record_path.parent)!r} does not exist")
        # a second run writing the same file is refused (two writers would interleave their lines)
        lock = file_lock(record_path, "the record file")
        writer = RecordWriter(record_path)
    start = time.perf_counter()
    try:
        with tqdm(
            total=games, unit="game", desc=f"{a.label} vs {b.label}", disable=not progress, file=sys.stderr
        ) as bar:
            for chunk in _ordered_results(tasks, workers):
                for o in chunk:
                    if writer is not None and o.record is not None:
                        writer.write(o.record)
                    if not keep_records:
                        o.record = None
                outcomes.extend(chunk)
                bar.update(len(chunk))
    finally:
        if writer is not None:
            writer.close()
        if lock is not None:
            lock.release()
    summary = summarize(outcomes, a.label, b.label, rules_obj.name, num_players, seed)
    summary.seconds = time.perf_counter() - start
    return Evaluation(summary, outcomes)


# ---------------------------------------------------------------------- command line
def _fmt_ci(ci: tuple[float, float], spec: str) -> str:
    if any(math.isnan(x) for x in ci):
        return "n/a"
    return f"[{ci[0]:{spec}}, {ci[1]:{spec}}]"


def format_table(s: Summary) -> str:
    """The report printed by the command line (no timing: it must not depend on the machine)."""
    seat_names = ("seats 0+2", "seats 1+3") if s.num_players == 4 else ("seat 0", "seat 1")
    rows = [
        ("games", f"{s.games}", f"{s.deals} deals x 2 seatings"),
        ("A wins / draws / losses", f"{s.wins} / {s.draws} / {s.losses}", "void and truncated hands are draws"),
        ("void hands", f"{s.void}", "stock exhausted, no canasta: no score"),
        ("truncated hands", f"{s.truncated}", "max_turns reached: no score"),
        ("A win rate", f"{s.win_rate:.3f}", f"95% CI {_fmt_ci(s.win_rate_ci, '.3f')}"),
        ("mean score A - B", f"{s.mean_diff:+.1f}", f"95% CI {_fmt_ci(s.mean_diff_ci, '+.1f')}"),
    ]
    for k, rate in enumerate(s.win_rate_by_seating):
        rows.append((f"A win rate, A in {seat_names[k]}", f"{rate:.3f}", "one seating only: seat bias included"))
    rows.append(("mean turns per hand", f"{s.mean_turns:.1f}", ""))
    width = max(len(r[0]) for r in rows)
    vwidth = max(len(r[1]) for r in rows)
    lines = [
        f"A = {s.a}   B = {s.b}   rules {s.rules}, {s.num_players} players, seed {s.seed}",
        "duplicate: every deal played twice with the sides swapped; CIs over deals (normal approximation)",
        "-" * (width + vwidth + 50),
    ]
    lines += [f"{name:<{width}}  {value:>{vwidth}}  {note}".rstrip() for name, value, note in rows]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="burako-eval", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--a", required=True, help=f"agent A: a name ({', '.join(agent_names())}) or module:Class")
    parser.add_argument("--b", required=True, help="agent B: a name or module:Class")
    parser.add_argument("--a-opt", action="append", metavar="KEY=VALUE", help="option for agent A (repeatable)")
    parser.add_argument("--b-opt", action="append", metavar="KEY=VALUE", help="option for agent B (repeatable)")
    parser.add_argument("--games", type=int, default=1000, help="games to play, an even number (2 per deal)")
    parser.add_argument("--seed", type=int, default=0, help="run seed: every deal and agent seed derives from it")
    parser.add_argument("--workers", type=int, default=1, help="worker processes")
    parser.add_argument("--rules", default="burako", help="rules preset name or YAML path")
    parser.add_argument("--players", type=int, default=2, choices=(2, 4))
    parser.add_argument("--record", metavar="PATH", help="write every game as a JSON line (burako_env.records)")
    parser.add_argument("--json", metavar="PATH", help="also write the summary as JSON")
    parser.add_argument("--chunk-size", type=int, default=None, help="deals per worker task")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        a = AgentSpec.of(args.a, parse_options(args.a_opt, "--a-opt"))
        b = AgentSpec.of(args.b, parse_options(args.b_opt, "--b-opt"))
        for spec in (a, b):
            try:
                spec.build(0)  # unknown names and bad options fail here, before any worker starts
            except ImportError as exc:
                raise ValueError(f"agent {spec.name!r} cannot be loaded: {exc}") from exc
        result = evaluate(
            a,
            b,
            games=args.games,
            seed=args.seed,
            rules=args.rules,
            num_players=args.players,
            workers=args.workers,
            record_path=args.record,
            chunk_size=args.chunk_size,
            progress=not args.no_progress,
        )
    except AgentFault as fault:
        print(f"burako-eval: {fault}", file=sys.stderr)
        return 2
    except (ValueError, TypeError, RulesError) as exc:
        parser.error(str(exc))
    print(format_table(result.summary))
    seconds = result.summary.seconds
    # timing on stderr: stdout is identical whatever the worker count
    print(f"{seconds:.1f} s, {result.summary.games / max(seconds, 1e-9):.1f} games/s", file=sys.stderr)
    if args.record:
        print(f"records: {args.record}")
    if args.json:
        Path(args.json).write_text(json.dumps(result.summary.to_dict(), indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
