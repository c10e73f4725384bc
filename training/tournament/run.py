"""Running a tournament: play what the run folder lacks on the chosen back
end, journal each game as it finishes, then rate and write the reports."""

from __future__ import annotations

import csv
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from tqdm import tqdm

from burako_env.records import RecordError, dumps_record, validate_record
from training.duplicate import GameRow
from training.files import write_text_atomic
from training.locks import LockedError, folder_lock
from training.tournament.backends import execute
from training.tournament.config import TournamentConfig, TournamentError, check_participants
from training.tournament.journal import (
    FORFEITS,
    RECORDS,
    check_entry,
    drop_unfinished_line,
    entry_key,
    prepare_folder,
    read_journal,
    rewrite_sorted,
    write_agent_files,
)
from training.tournament.ratings import (
    PairStats,
    Standing,
    bradley_terry_ratings,
    openskill_ratings,
    pair_stats,
    standings,
)
from training.tournament.reports import (
    crosstable_csv,
    leaderboard_csv,
    leaderboard_md,
    plot_ratings,
    results_csv,
    rules_label,
)
from training.tournament.results import row_from_entry
from training.tournament.schedule import GameTask, make_pairings, schedule


@dataclass
class TournamentResult:
    config: TournamentConfig
    out: Path
    rows: list[GameRow]
    standings: list[Standing]
    pairs: list[PairStats]
    total_games: int
    #: games played by this call (the rest came from the run folder)
    played: int
    seconds: float
    complete: bool
    game_seconds: dict[tuple[str, str, int, int], float] = field(default_factory=dict, repr=False)


def write_reports(
    config: TournamentConfig, out: Path, rows: list[GameRow], pairings: Sequence[Any], total_games: int
) -> tuple[list[Any], list[Any]]:
    """The run folder's reports from its games (``results.csv``, the leaderboard, the crosstable and
    the ratings plot): after every run, and alone to refresh a folder's reports when the statistics
    change. The standings and the crosstable's pairs."""
    names = [p.name for p in config.participants]
    bt = bradley_terry_ratings(
        rows, names, bootstrap=config.bootstrap, seed=config.seed, prior_draws=config.prior_draws, anchor=config.anchor
    )
    skill = openskill_ratings(rows, names)
    table = standings(rows, config.participants, bt, skill)
    seeds = {(p.a.name, p.b.name): p.seed for p in pairings}
    pairs = []
    for p in pairings:
        for row_name, col_name in ((p.a.name, p.b.name), (p.b.name, p.a.name)):
            s = pair_stats(rows, row_name, col_name)
            s.pairing_seed = seeds[(p.a.name, p.b.name)]
            pairs.append(s)
    write_text_atomic(out / "results.csv", results_csv(rows))
    write_text_atomic(out / "leaderboard.csv", leaderboard_csv(table))
    write_text_atomic(out / "crosstable.csv", crosstable_csv(pairs))
    write_text_atomic(out / "leaderboard.md", leaderboard_md(config, table, pairs, rows, total_games))
    plot_ratings(table, out / "ratings.png", f"{config.name}: {rules_label(config)}, {config.players}p")
    return table, pairs


def _chunk_size(config: TournamentConfig, pending: int) -> int:
    if config.chunk_size is not None:
        return config.chunk_size
    # about 8 tasks per worker (load balance, progress, little lost to an interruption), at most 16 games
    return max(1, min(16, math.ceil(pending / (8 * config.workers))))


def run_tournament(
    config: TournamentConfig,
    *,
    progress: bool = False,
    max_games: int | None = None,
    fresh: bool = False,
) -> TournamentResult:
    """Play every game of the tournament that the run folder lacks, then write
    the reports. ``max_games`` stops after that many new games (at a task's
    end; reports are written for what is done), which is how an interruption
    is tested. Raises :class:`TournamentError` before any game when a
    participant cannot be built or the folder holds another tournament."""
    config.check()
    if max_games is not None and (isinstance(max_games, bool) or not isinstance(max_games, int) or max_games < 1):
        raise TournamentError(f"max_games must be a whole number >= 1 (or none: every game), got {max_games!r}")
    out = Path(config.out)
    if out.exists() and not out.is_dir():
        raise TournamentError(f"out {str(out)!r} is a file, not a folder; name a folder for the run")
    if config.backend == "ray":
        try:
            import ray  # noqa: F401
        except ImportError as exc:
            raise TournamentError('backend ray needs the ray extra: pip install -e ".[ray]"') from exc
    check_participants(config.participants)
    try:
        out.mkdir(parents=True, exist_ok=True)
        lock = folder_lock(out, "the tournament folder")
    except (OSError, LockedError) as exc:
        raise TournamentError(str(exc)) from exc
    try:
        return _run_locked(config, out, progress=progress, max_games=max_games, fresh=fresh)
    finally:
        lock.release()


def _run_locked(
    config: TournamentConfig, out: Path, *, progress: bool, max_games: int | None, fresh: bool
) -> TournamentResult:
    """:func:`run_tournament` once it holds the folder's lock."""
    files = config.agent_files()  # once: the folder's check and its agent_files.json read the same digests
    prepare_folder(config, out, fresh, files)
    rules = config.game_rules()
    pairings = make_pairings(config)
    jobs = schedule(config, pairings)
    order = {job.key: k for k, job in enumerate(jobs)}
    pairing_of = {(p.a.name, p.b.name): p.index for p in pairings}
    by_names = {(p.a.name, p.b.name): p for p in pairings}

    records = read_journal(out / RECORDS, is_record=True)
    forfeit_entries = read_journal(out / FORFEITS, is_record=False)
    done: dict[tuple[str, str, int, int], dict[str, Any]] = {}
    for name, entries in ((RECORDS, records), (FORFEITS, forfeit_entries)):
        for entry in entries:
            key = entry_key(entry)
            if key not in order:
                raise TournamentError(
                    f"{out} holds game {key} (A, B, deal, seating), which this config does not schedule "
                    "(fewer games per pairing, or another format?); choose another 'out' or pass --fresh"
                )
            check_entry(entry, config, by_names, str(out / name), rules)
            done.setdefault(key, entry)
    # only now, with nothing refused, are torn last lines cut and does the folder take this run's config
    for name in (RECORDS, FORFEITS):
        if (out / name).exists():
            drop_unfinished_line(out / name)
    write_text_atomic(out / "config.yaml", yaml.safe_dump(config.to_dict(), sort_keys=False, allow_unicode=True))
    write_agent_files(files, out)
    pending = [job for job in jobs if job.key not in done]
    size = _chunk_size(config, len(pending))
    tasks = [
        GameTask(rules, config.players, config.seed, tuple(pending[i : i + size]), config.move_time_limit, config.game)
        for i in range(0, len(pending), size)
    ]
    played = 0
    game_seconds: dict[tuple[str, str, int, int], float] = {}
    start = time.perf_counter()
    timings_path = out / "timings.csv"
    # a row an interruption cut short would run into the next run's first row; a file left with no
    # whole line (killed before its header reached the disk) gets the header again
    new_timings = not timings_path.exists() or not drop_unfinished_line(timings_path)
    with (
        (out / RECORDS).open("a", encoding="utf-8", newline="\n") as rec_file,
        (out / FORFEITS).open("a", encoding="utf-8", newline="\n") as forfeit_file,
        timings_path.open("a", encoding="utf-8", newline="\n") as timing_file,
        tqdm(
            total=len(jobs),
            initial=len(done),
            unit="game",
            desc=config.name,
            disable=not progress,
            file=sys.stderr,
            smoothing=0.05,
        ) as bar,
    ):
        timings = csv.writer(timing_file, lineterminator="\n")
        if new_timings:
            timings.writerow(["a", "b", "deal", "seating", "forfeit", "actions", "seconds"])
            timing_file.flush()
        results = execute(config, tasks)
        try:
            for outputs in results:
                for o in outputs:
                    if o.forfeit:
                        forfeit_file.write(dumps_record(o.entry) + "\n")
                    else:
                        try:
                            validate_record(o.entry)
                        except RecordError as exc:  # pragma: no cover - the runner builds valid records
                            raise RuntimeError(f"game {o.key} produced an invalid record: {exc}") from exc
                        rec_file.write(dumps_record(o.entry) + "\n")
                    done[o.key] = o.entry
                    game_seconds[o.key] = o.seconds
                    actions = o.entry["meta"]["forfeit"]["step"] if o.forfeit else len(o.entry["actions"])
                    a, b, deal, seating = o.key
                    timings.writerow([a, b, deal, seating, int(o.forfeit), actions, f"{o.seconds:.4f}"])
                # a finished task is on disk before the next is taken: what an interruption loses is in flight
                rec_file.flush()
                forfeit_file.flush()
                timing_file.flush()
                played += len(outputs)
                bar.update(len(outputs))
                if max_games is not None and played >= max_games:
                    break
        finally:
            close = getattr(results, "close", None)
            if close is not None:
                close()
    seconds = time.perf_counter() - start

    entries = list(done.values())
    rewrite_sorted(out / RECORDS, [e for e in entries if "forfeit" not in e["meta"]], order)
    rewrite_sorted(out / FORFEITS, [e for e in entries if "forfeit" in e["meta"]], order)
    rows = sorted(
        (row_from_entry(e, pairing_of[entry_key(e)[:2]]) for e in entries),
        key=lambda r: (r.pairing, r.deal, r.seating),
    )
    table, pairs = write_reports(config, out, rows, pairings, len(jobs))
    return TournamentResult(
        config=config,
        out=out,
        rows=rows,
        standings=table,
        pairs=pairs,
        total_games=len(jobs),
        played=played,
        seconds=seconds,
        complete=len(rows) == len(jobs),
        game_seconds=game_seconds,
    )
