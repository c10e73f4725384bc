"""``burako-tournament`` (and ``python -m training.tournament``)."""

from __future__ import annotations

import argparse
import sys

from training.games import GAMES
from training.signals import sigterm_as_interrupt
from training.tournament.config import TournamentError, load_config
from training.tournament.reports import leaderboard_md
from training.tournament.run import run_tournament


def build_parser() -> argparse.ArgumentParser:
    import training.tournament as package  # its docstring is the manual (and it imports this module)

    parser = argparse.ArgumentParser(
        prog="burako-tournament", description=package.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", required=True, help="tournament YAML file")
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help="override a config key"
    )
    parser.add_argument(
        "--game",
        choices=GAMES,
        default=None,
        help="the game (--set game=...); a Rummy preset in the config's rules already means rummy",
    )
    parser.add_argument(
        "--max-games",
        type=int,
        default=None,
        help="stop after about this many new games (resumable; the task in play ends first)",
    )
    parser.add_argument("--fresh", action="store_true", help="delete the run folder's previous games first")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # `kill` (SIGTERM) stops a background run as Ctrl-C does: workers are
    # stopped, finished games are on disk, and the same command resumes
    try:
        with sigterm_as_interrupt():
            overrides = [*args.overrides, *([f"game={args.game}"] if args.game else [])]
            config = load_config(args.config, overrides)
            result = run_tournament(config, progress=not args.no_progress, max_games=args.max_games, fresh=args.fresh)
    except TournamentError as exc:
        print(f"burako-tournament: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("burako-tournament: interrupted; run the same command again to resume", file=sys.stderr)
        return 130
    print(f"{result.out}/leaderboard.md:\n")
    print(leaderboard_md(config, result.standings, result.pairs, result.rows, result.total_games))
    rate = result.played / max(result.seconds, 1e-9)
    print(
        f"{result.played} games played in {result.seconds:.1f} s ({rate:.1f} games/s); "
        f"{len(result.rows)} of {result.total_games} done",
        file=sys.stderr,
    )
    return 0 if result.complete or args.max_games is not None else 1


if __name__ == "__main__":
    raise SystemExit(main())
