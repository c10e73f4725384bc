"""Duplicate evaluation of agent A against agent B.

    burako-eval --a planner --b random --games 1000 --seed 0 --workers 2 \\
        --rules burako --players 2 --record games.jsonl

Why duplicate: a hand's luck (the deal) and the seat (who is mano, who
draws first) dwarf the skill difference between agents over a few hundred
games. So every deal is played twice with the seats swapped, as in duplicate
bridge: with 2 players A sits in seat 0 then in seat 1; with 4 players A's
partnership sits in seats 0+2 then in seats 1+3. Each side gets each hand of
tiles once, and the pair's mean outcome is free of both deal and seat luck.

A long evaluation killed part way continues with the same command plus
``--resume`` (Burako, with ``--record``): the whole deals in the record file
are counted as they are, the rest are played, and the table and the file are
those of an uninterrupted run (:func:`recorded_games`). A finished run resumed
with a larger ``--games`` (same seed) is extended: deal ``i`` depends only on
the seed and ``i``, so its first games are the longer run's. Ctrl-C or
``kill`` (SIGTERM) stops a run cleanly (exit status 130): the record file is
closed whole, a compressed one with its gzip end, ready for ``--resume``.

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
does not collapse on small samples (20 of 20: [0.839, 1.000]), with an
effective sample size from the deal means' spread, at most the games played.
Pairs are independent by construction
(different deals), the games within a pair are not, which is why the pair is
the unit.

Games run in worker processes (``--workers``: :mod:`training.game_pool`,
the pool tournaments use too) by chunks of deals; results are put back in
deal order, so the table and the record file are byte-identical whatever the
worker count. An agent that raises in a worker stops the run with its
:class:`~agents.runner.AgentFault` as in process; one that ends its worker
process is reported as such (``burako-tournament`` records both as forfeits).
Seats, seeds and the result row (:class:`~training.duplicate.GameRow`) come
from :mod:`training.duplicate`.

Rummy (``--game rummy``, or a Rummy preset: ``--rules rummy``) runs
:func:`training.rummy_evaluate.evaluate_rummy`: 2 players, each for himself,
the same deal and agent seeds, the lower hand total wins (R10); same table,
``--json`` and ``--record`` options:

    burako-eval --game rummy --a rummy-heuristic --b random --games 1000 --seed 0 --workers 2
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm import tqdm

from agents.options import parse_options, parse_value
from agents.registry import agent_names
from agents.runner import AgentFault, play_game
from burako_env.engine import TRUNCATED, VOID
from burako_env.records import (
    GAMES,
    RecordError,
    RecordWriter,
    is_gzip,
    iter_records,
    record_bytes,
    rules_of,
    write_records,
)
from burako_env.rules import Rules, RulesError, load_rules
from training.duplicate import (
    AgentSpec,
    GameRow,
    MatchFigures,
    a_seats_of,
    agent_seed,
    changed_agent_files,
    deal_chunks,
    deal_seed,
    match_figures,
    scored_row,
    seatings,
)
from training.files import check_output_file, json_report, write_text_atomic
from training.game_pool import WorkerDeath, one_thread_per_worker, play_in_pool, play_in_process
from training.games import agent_games, check_agent_game, game_and_rules, rules_differences
from training.locks import file_lock
from training.signals import sigterm_as_interrupt

if TYPE_CHECKING:
    from training.rummy_evaluate import RummySummary

__all__ = [
    "AgentSpec",
    "Evaluation",
    "GameOutcome",
    "Summary",
    "agent_games",
    "agent_seed",
    "check_agent_game",
    "deal_seed",
    "evaluate",
    "format_rummy_table",
    "format_table",
    "game_and_rules",
    "main",
    "one_thread_per_worker",
    "parse_options",
    "parse_value",
    "play_deal_pair",
    "seatings",
    "summarize",
]

#: one game from A's point of view: the row type tournaments share
GameOutcome = GameRow


# ---------------------------------------------------------------------- one game
@dataclass(frozen=True)
class _Task:
    """A chunk of deals for one worker of :mod:`training.game_pool`."""

    a: AgentSpec
    b: AgentSpec
    rules: Rules
    num_players: int
    seed: int
    jobs: tuple[int, ...]
    record: bool
    move_time_limit: float | None = None
    #: the files the agents read, by side (:func:`agent_files_meta`): recorded with each game
    files: dict[str, dict[str, str | None]] | None = None

    def play(self, index: int, status: Any = None) -> list[GameRow]:
        """Both games of deal ``jobs[index]``."""
        return play_deal_pair(
            self.a, self.b, self.rules, self.num_players, self.seed, self.jobs[index], self.record, self.files
        )


def agent_files_meta(a: AgentSpec, b: AgentSpec) -> dict[str, dict[str, str | None]] | None:
    """What each side's agent reads, file by file with its SHA-256 (``meta.evaluation.files`` of a
    record), or None when neither reads a file: ``--resume`` refuses records of another checkpoint."""
    files = {"a": a.files(), "b": b.files()}
    return files if files["a"] or files["b"] else None


def play_deal_pair(
    a: AgentSpec,
    b: AgentSpec,
    rules: Rules,
    num_players: int,
    seed: int,
    deal: int,
    record: bool,
    files: dict[str, dict[str, str | None]] | None = None,
) -> list[GameOutcome]:
    """Both games of one deal (A's side first, then the sides swapped)."""
    dseed = deal_seed(seed, deal)
    out = []
    for k, seating in enumerate(seatings(num_players)):
        specs = [a if who == "A" else b for who in seating]
        agents = [spec.build(agent_seed(seed, deal, seat)) for seat, spec in enumerate(specs)]
        names = [f"{who}:{spec.label}" for who, spec in zip(seating, specs, strict=True)]
        a_seats = a_seats_of(num_players, k)
        meta = {
            "evaluation": {
                "seed": seed,
                "deal": deal,
                "seating": k,
                "a": a.label,
                "b": b.label,
                "a_seats": list(a_seats),
                **({"files": files} if files else {}),
            }
        }
        try:
            result = play_game(agents, rules, num_players, dseed, record=record, agent_names=names, meta=meta)
        except AgentFault as fault:
            fault.args = (f"{fault.args[0]} [evaluation deal {deal}, seating {k}]",)
            raise
        out.append(
            scored_row(
                pairing=0,
                a=a.label,
                b=b.label,
                deal=deal,
                seating=k,
                deal_seed=dseed,
                a_seats=a_seats,
                sides=result.side_of,
                side_totals=result.side_totals,
                end_reason=result.end_reason,
                turns=result.turns,
                actions=result.num_actions,
                record=result.record,
            )
        )
    return out


def _row_of_record(record: dict[str, Any], a: str, b: str, keep: bool) -> GameRow:
    """The result row of a game an earlier run recorded (what :func:`play_deal_pair` returned for it)."""
    meta = record["meta"]["evaluation"]
    scores = record["hand_scores"]
    return scored_row(
        pairing=0,
        a=a,
        b=b,
        deal=int(meta["deal"]),
        seating=int(meta["seating"]),
        deal_seed=int(record["deal_seed"]),
        a_seats=tuple(int(s) for s in meta["a_seats"]),
        sides=record["sides"],
        side_totals=None if scores is None else [int(s["total"]) for s in scores],
        end_reason=str(record["end_reason"]),
        turns=int(record["turns"]),
        actions=len(record["actions"]),
        record=record if keep else None,
    )


def recorded_games(
    path: Path,
    a: AgentSpec,
    b: AgentSpec,
    rules: Rules,
    num_players: int,
    seed: int,
    games: int,
    files: dict[str, dict[str, str | None]] | None,
) -> tuple[list[dict[str, Any]], str]:
    """The records of the whole deals an earlier run of *this* evaluation wrote
    to ``path`` (``--resume``), and a note on what was dropped.

    Records are written in deal order, so a killed run leaves whole deals, maybe
    one deal with only its first game, and maybe a torn last line: those two are
    dropped (played again). Anything else that does not fit (another agent,
    seed, rules or player count, a gap, a corrupt line before the end, a
    checkpoint whose bytes changed under the same path) is a :class:`ValueError`
    naming the line or record, and the file is left as it is. ``files``: :func:`agent_files_meta`
    of ``a`` and ``b``, read once by the caller."""
    per_deal = len(seatings(num_players))
    records: list[dict[str, Any]] = []
    dropped = ""
    try:
        for record in iter_records(path):
            records.append(record)
    except RecordError as exc:
        try:
            lines = record_bytes(path).split(b"\n")
        except RecordError as corrupt:
            raise ValueError(f"{path}: not a game record this run can resume from ({corrupt})") from corrupt
        # a kill cuts the last record short: text after the last newline. A bad line that ends in a
        # newline was written whole, so the file is not (only) this evaluation's records: refused, kept.
        # A compressed file killed between two records ends after a whole line, without gzip's end
        if exc.line is None or exc.line != len(lines):
            raise ValueError(f"{path}: not a game record this run can resume from ({exc})") from exc
        if lines[-1].strip():
            dropped = f"a torn last line (line {exc.line})"  # the last line, cut short by the kill
        elif exc.cut_short:  # rewritten whole: a gzip member appended after an unfinished one is unreadable
            dropped = "the compressed stream's missing end"
        else:
            raise ValueError(f"{path}: not a game record this run can resume from ({exc})") from exc
    for index, record in enumerate(records):
        deal, seating = divmod(index, per_deal)
        number = index + 1  # the record's place in the file (blank lines aside)
        want = {"seed": seed, "deal": deal, "seating": seating, "a": a.label, "b": b.label}
        meta = record.get("meta", {}).get("evaluation") if isinstance(record.get("meta"), dict) else None
        got = {k: meta.get(k) for k in want} if isinstance(meta, dict) else None
        if got != want:
            raise ValueError(
                f"{path}, record {number}: the record file holds another evaluation, or a gap: expected {want}, "
                f"found {got}; use another --record path, or the run's own options"
            )
        recorded = meta.get("files")
        if files and recorded is None:
            raise ValueError(
                f"{path}, record {number}: written before records named the SHA-256 of the files their agents "
                "read (meta.evaluation.files), so which checkpoint played it cannot be checked; use another "
                "--record path"
            )
        changed = changed_agent_files(files or {}, recorded if isinstance(recorded, dict) else {})
        if changed:
            raise ValueError(
                f"{path}, record {number}: played with other agent files than this run's: the SHA-256 of what "
                f"side(s) {', '.join(changed)} read differ (recorded {recorded}, now {files}; a checkpoint replaced "
                "under the same path plays other games); use another --record path"
            )
        if record["num_players"] != num_players or rules_differences(rules_of(record), rules):
            raise ValueError(
                f"{path}, record {number}: recorded with other rules or player count "
                f"({record['rules'].get('name')!r}, {record['num_players']} players)"
            )
        if record["deal_seed"] != deal_seed(seed, deal):
            raise ValueError(f"{path}, record {number}: deal {deal}'s seed is not this run's (a tampered record?)")
    whole = len(records) - len(records) % per_deal
    if whole < len(records):
        dropped = ", ".join(filter(None, [dropped, f"the first game of deal {whole // per_deal} without its pair"]))
    if whole > games:
        raise ValueError(f"{path} holds {whole} games of this evaluation, more than --games {games}")
    return records[:whole], dropped


# ---------------------------------------------------------------------- summary
@dataclass
class Summary(MatchFigures):
    """The evaluation's figures (:class:`~training.duplicate.MatchFigures`,
    intervals over deal pairs), and what else the report shows."""

    a: str
    b: str
    rules: str
    num_players: int
    seed: int
    void: int
    truncated: int
    #: A's win rate in each seating (0: A's side in seat 0, 1: swapped): shows the seat bias the pairing cancels
    win_rate_by_seating: tuple[float, ...]
    mean_turns: float
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The summary as JSON data, what was played first (a, b, rules, players, seed)."""
        data = asdict(self)
        return {**{k: data.pop(k) for k in ("a", "b", "rules", "num_players", "seed")}, **data}


def summarize(outcomes: Sequence[GameRow], a: str, b: str, rules: str, num_players: int, seed: int) -> Summary:
    """Figures over games; intervals over deals (the mean of each deal's games)."""
    figures = match_figures((o.deal, o.a_points, o.score_diff) for o in outcomes)
    seating_count = max((o.seating for o in outcomes), default=-1) + 1
    by_seating = []
    for k in range(seating_count):
        pts = [o.a_points for o in outcomes if o.seating == k]
        by_seating.append(sum(pts) / len(pts) if pts else math.nan)
    return Summary(
        **figures.figures(),
        a=a,
        b=b,
        rules=rules,
        num_players=num_players,
        seed=seed,
        void=sum(o.end_reason == VOID for o in outcomes),
        truncated=sum(o.end_reason == TRUNCATED for o in outcomes),
        win_rate_by_seating=tuple(by_seating),
        mean_turns=float(np.mean([o.turns for o in outcomes])) if outcomes else math.nan,
    )


# ---------------------------------------------------------------------- the run
@dataclass
class Evaluation:
    summary: Summary
    outcomes: list[GameRow]
    #: games taken from the record file of an earlier run (``resume``), not played by this one
    resumed_games: int = 0


def _worker_died(death: WorkerDeath) -> list[GameRow]:
    """An evaluation has no forfeits: a dead worker stops it with a clear error."""
    task: _Task = death.task
    raise AgentFault(
        f"a worker process died while playing deals {task.jobs[death.index]}..{task.jobs[-1]} of {task.a.label} "
        f"vs {task.b.label} (an agent ended its process: os._exit, a crash or the out-of-memory killer); "
        "burako-tournament records such games as forfeits",
        kind="crash",
    )


def deal_ordered_results(
    tasks: Sequence[Any],
    workers: int,
    played: Callable[[int], object] = lambda n: None,
    deal_of: Callable[[Any], int] = lambda game: game.deal,
) -> Iterator[list[Any]]:
    """The games deal by deal, in deal order, whatever order the workers finish in.
    ``played(n)`` hears of every deal's ``n`` games as soon as they finish, before
    their turn in that order comes (the progress bar: with 2 workers a deal can
    wait for a slow earlier one, and a bar that moved only in order sat still, then jumped).
    ``deal_of``: a game's deal (a Rummy game is a dict, :mod:`training.rummy_evaluate`)."""
    if workers <= 1:
        for deals in play_in_process(tasks):
            games = [game for deal in deals for game in deal]
            played(len(games))
            yield games
        return
    waiting: dict[int, list[GameRow]] = {}
    order = iter([deal for task in tasks for deal in task.jobs])
    next_deal = next(order, None)
    for games in play_in_pool(tasks, workers, _worker_died):
        played(len(games))
        waiting[deal_of(games[0])] = games
        while next_deal in waiting:
            yield waiting.pop(next_deal)
            next_deal = next(order, None)


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
    resume: bool = False,
) -> Evaluation:
    """Play ``games`` games (``games / 2`` deals, each with both seatings) and
    summarize. Records go to ``record_path`` (JSON lines, game order) and are
    kept on the outcomes with ``keep_records``. With ``resume``, the whole
    deals already in ``record_path`` (:func:`recorded_games`) are counted, not
    played again, and the run plays the rest. Raises :class:`AgentFault` if
    an agent fails."""
    if games <= 0 or games % 2:
        raise ValueError(f"games must be a positive even number (each deal is played twice), got {games}")
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    rules_obj = load_rules(rules)
    rules_obj.check_players(num_players)
    per_deal = len(seatings(num_players))  # two sides, or a clear error now rather than in a worker
    n_deals = games // 2
    if chunk_size is None:
        chunk_size = max(1, min(25, math.ceil(n_deals / (4 * workers))))
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size (deals per worker task) must be an integer >= 1, got {chunk_size!r}")
    if resume and record_path is None:
        raise ValueError("resume needs the record file of the run to continue (--record PATH)")
    want_records = record_path is not None or keep_records
    #: what the agents read, hashed once: checked against a resumed file's records, written with the new ones
    files = agent_files_meta(a, b) if want_records else None
    outcomes: list[GameOutcome] = []
    writer = None
    lock = None
    done_deals = 0
    if record_path is not None:
        record_path = check_output_file(record_path, "record path")
        # a second run writing the same file is refused (two writers would interleave their lines)
        lock = file_lock(record_path, "the record file")
        try:
            if resume and record_path.is_file():
                kept, dropped = recorded_games(record_path, a, b, rules_obj, num_players, seed, games, files)
                if dropped:  # rewrite the file as the whole deals, then append
                    tmp = record_path.with_name(record_path.name + ".resume-tmp")
                    write_records(tmp, kept, compress=is_gzip(record_path))
                    tmp.replace(record_path)
                    print(f"resume: dropped {dropped}; the file is rewritten as its whole deals", file=sys.stderr)
                outcomes = [_row_of_record(r, a.label, b.label, keep_records) for r in kept]
                done_deals = len(kept) // per_deal
            writer = RecordWriter(record_path, mode="a" if resume else "w")
        except BaseException:
            lock.release()
            raise
    chunks = [tuple(d for d in deals if d >= done_deals) for deals in deal_chunks(n_deals, chunk_size)]
    tasks = [_Task(a, b, rules_obj, num_players, seed, deals, want_records, files=files) for deals in chunks if deals]
    start = time.perf_counter()
    try:
        with tqdm(
            total=games,
            initial=len(outcomes),
            unit="game",
            desc=f"{a.label} vs {b.label}",
            disable=not progress,
            file=sys.stderr,
        ) as bar:
            for chunk in deal_ordered_results(tasks, workers, bar.update) if tasks else ():
                for o in chunk:
                    if writer is not None and o.record is not None:
                        writer.write(o.record)
                    if not keep_records:
                        o.record = None
                outcomes.extend(chunk)
    finally:
        if writer is not None:
            writer.close()
        if lock is not None:
            lock.release()
    summary = summarize(outcomes, a.label, b.label, rules_obj.name, num_players, seed)
    summary.seconds = time.perf_counter() - start
    return Evaluation(summary, outcomes, resumed_games=done_deals * per_deal)


# ---------------------------------------------------------------------- command line
#: how the tables' 95% intervals are computed (training.duplicate.MatchFigures): one wording for both games
CI_NOTE = "95% CIs over deals: win rate Wilson score, score difference normal approximation"


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
    return _report(
        f"A = {s.a}   B = {s.b}   rules {s.rules}, {s.num_players} players, seed {s.seed}",
        f"duplicate: every deal played twice with the sides swapped; {CI_NOTE}",
        rows,
    )


def _report(title: str, subtitle: str, rows: Sequence[tuple[str, str, str]]) -> str:
    """Two header lines, a rule, then the rows as aligned name / value / note columns."""
    width = max(len(r[0]) for r in rows)
    vwidth = max(len(r[1]) for r in rows)
    lines = [title, subtitle, "-" * (width + vwidth + 50)]
    lines += [f"{name:<{width}}  {value:>{vwidth}}  {note}".rstrip() for name, value, note in rows]
    return "\n".join(lines)


# ---------------------------------------------------------------------- Rummy
def format_rummy_table(s: RummySummary) -> str:
    """:func:`format_table` for a Rummy evaluation (no timing either)."""
    rows = [
        ("games", f"{s.games}", f"{s.deals} deals x 2 seatings"),
        ("A wins / draws / losses", f"{s.wins} / {s.draws} / {s.losses}", "the lower hand total wins (R10)"),
        ("closed hands", f"{s.closed}", "a player went out with the closing tile (R8)"),
        ("blocked hands", f"{s.blocked}", "stock out, nobody could play (R9): lowest total wins"),
        ("A win rate", f"{s.win_rate:.3f}", f"95% CI {_fmt_ci(s.win_rate_ci, '.3f')}"),
        ("mean total B - A", f"{s.mean_diff:+.1f}", f"95% CI {_fmt_ci(s.mean_diff_ci, '+.1f')} (positive: A better)"),
    ]
    for seat, rate in enumerate(s.win_rate_by_seat):
        rows.append((f"A win rate, A in seat {seat}", f"{rate:.3f}", "one seating only: seat bias included"))
    rows.append(("mean turns per hand", f"{s.mean_turns:.1f}", ""))
    return _report(
        f"A = {s.a}   B = {s.b}   game rummy, rules {s.rules}, 2 players, seed {s.seed}",
        f"duplicate: every deal played twice with the seats swapped; {CI_NOTE}",
        rows,
    )


def _rummy_summary_dict(s: RummySummary) -> dict[str, Any]:
    data = asdict(s)
    first = {
        "game": "rummy",
        **{k: data.pop(k) for k in ("a", "b", "rules")},
        "num_players": 2,
        "seed": data.pop("seed"),
    }
    return {**first, **data}


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
    parser.add_argument(
        "--game", choices=GAMES, default=None, help="the game (default burako; a Rummy preset in --rules means rummy)"
    )
    parser.add_argument("--rules", default=None, help="rules preset name or YAML path (default: the game's own preset)")
    parser.add_argument("--players", type=int, default=2, choices=(2, 4), help="Rummy: 2 only")
    parser.add_argument("--record", metavar="PATH", help="write every game as a JSON line (burako_env.records)")
    parser.add_argument("--json", metavar="PATH", help="also write the summary as JSON")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="Burako: continue a killed run from its --record file (same options; its whole deals are not replayed)",
    )
    parser.add_argument("--chunk-size", type=int, default=None, help="deals per worker task")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    game = args.game
    try:
        if args.json is not None:  # before any game: a typo must not cost the evaluation
            check_output_file(args.json, "--json")
            if args.record is not None and Path(args.json).resolve() == Path(args.record).resolve():
                raise ValueError(
                    f"--json and --record name the same file {args.json!r}: the summary would replace the games"
                )
        game, rules = game_and_rules(args.game, args.rules)
        a = AgentSpec.of(args.a, parse_options(args.a_opt, "--a-opt"))
        b = AgentSpec.of(args.b, parse_options(args.b_opt, "--b-opt"))
        for spec in (a, b):
            check_agent_game(spec.name, game)
            try:
                spec.build(0)  # unknown names and bad options fail here, before any worker starts
            except ImportError as exc:
                raise ValueError(f"agent {spec.name!r} cannot be loaded: {exc}") from exc
        # `kill` (SIGTERM) stops a background run as Ctrl-C does: the record file is
        # closed whole (a gzip file gets its end), the workers are stopped, and --resume continues it
        with sigterm_as_interrupt():
            if game == "rummy":
                return _main_rummy(args, a, b, rules)
            result = evaluate(
                a,
                b,
                games=args.games,
                seed=args.seed,
                rules=rules,
                num_players=args.players,
                workers=args.workers,
                record_path=args.record,
                chunk_size=args.chunk_size,
                progress=not args.no_progress,
                resume=args.resume,
            )
    except KeyboardInterrupt:
        if game == "rummy":
            again = "a Rummy evaluation starts again (no --resume)"
        elif args.record:
            again = "the same command with --resume continues it"
        else:
            again = "no --record file: nothing was kept"
        print(f"burako-eval: interrupted; {again}", file=sys.stderr)
        return 130
    except AgentFault as fault:
        print(f"burako-eval: {fault}", file=sys.stderr)
        return 2
    except (ValueError, TypeError, RulesError) as exc:
        parser.error(str(exc))
    print(format_table(result.summary))
    seconds = result.summary.seconds
    played = result.summary.games - result.resumed_games
    # timing on stderr: stdout is identical whatever the worker count
    resumed = f" ({result.resumed_games} games from the record file)" if result.resumed_games else ""
    print(f"{seconds:.1f} s, {played / max(seconds, 1e-9):.1f} games/s{resumed}", file=sys.stderr)
    if args.record:
        print(f"records: {args.record}")
    return _write_summary(args.json, result.summary.to_dict())


def _main_rummy(args: argparse.Namespace, a: AgentSpec, b: AgentSpec, rules: str) -> int:
    """The Rummy run of :func:`main` (its errors are :func:`main`'s)."""
    from training.rummy_evaluate import evaluate_rummy  # Rummy's modules load when a Rummy run asks for them

    if args.resume:
        raise ValueError("--resume is for Burako evaluations; a Rummy evaluation starts again (it is minutes long)")
    if args.players != 2:
        raise ValueError(
            f"Rummy's duplicate evaluation is for 2 players (each for himself), got --players {args.players}"
        )
    if args.games <= 0 or args.games % 2:
        raise ValueError(f"games must be a positive even number (each deal is played twice), got {args.games}")
    if args.seed < 0:
        raise ValueError(f"seed must be >= 0, got {args.seed}")
    if args.workers < 1:
        raise ValueError(f"workers must be >= 1, got {args.workers}")
    lock = None
    if args.record is not None:
        record_path = check_output_file(args.record, "record path")
        # as for Burako: a second run writing the same file is refused (two writers would interleave their lines)
        lock = file_lock(record_path, "the record file")
    try:
        summary = evaluate_rummy(
            a,
            b,
            args.games // 2,
            seed=args.seed,
            rules=rules,
            workers=args.workers,
            record_path=args.record,
            progress=not args.no_progress,
            chunk_size=10 if args.chunk_size is None else args.chunk_size,
        )
    finally:
        if lock is not None:
            lock.release()
    print(format_rummy_table(summary))
    print(f"{summary.seconds:.1f} s, {summary.games / max(summary.seconds, 1e-9):.1f} games/s", file=sys.stderr)
    if args.record:
        print(f"records: {args.record}")
    return _write_summary(args.json, _rummy_summary_dict(summary))


def _write_summary(path: str | None, summary: dict[str, Any]) -> int:
    """``--json``: the summary, written whole; a failure (disk full, the folder gone since the
    start) is said by name, the table above is still on the screen. The exit status."""
    if path is None:
        return 0
    try:
        write_text_atomic(path, json_report(summary))
    except OSError as exc:
        print(f"burako-eval: cannot write --json {path}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
