"""A tournament's reports: ``results.csv``, ``leaderboard.csv``,
``crosstable.csv``, ``leaderboard.md`` (nothing machine-dependent, so
identical for every back end) and ``ratings.png``."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from training.duplicate import GameRow
from training.tournament.config import TournamentConfig
from training.tournament.ratings import PairStats, Standing
from training.tournament.schedule import make_pairings

#: how each game's reports word the score difference (A's margin, training.duplicate.GameRow.score_diff)
#: and which end reasons its pairing table counts
_GAME_WORDS: dict[str, dict[str, Any]] = {
    "burako": {
        "crosstable_diff": "the mean score difference (row − column)",
        "pairing_diff": "mean diff A − B",
        "end_reasons": ("void", "truncated"),
        "scoring": "",
    },
    "rummy": {
        "crosstable_diff": "the mean margin in hand totals (column's total − row's: positive when the row did better)",
        "pairing_diff": "mean margin B − A",
        "end_reasons": ("closed", "blocked"),
        "scoring": "; each for himself, the lower hand total wins (R10): the margin is the opponent's total "
        "minus one's own",
    },
}


def rules_label(config: TournamentConfig) -> str:
    """The rules as the reports name them: the preset's name, with the game when it is not Burako."""
    name = config.game_rules().name
    return name if config.game == "burako" else f"{config.game} ({name})"


def _f(x: float, spec: str) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def _csv_text(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue()


def results_csv(rows: Sequence[GameRow]) -> str:
    return _csv_text(GameRow.COLUMNS, [r.as_csv() for r in rows])


def leaderboard_csv(table: Sequence[Standing]) -> str:
    header = list(Standing.__dataclass_fields__)
    return _csv_text(
        header,
        [[_f(v, ".6g") if isinstance(v := getattr(s, c), float) else v for c in header] for s in table],
    )


def crosstable_csv(pairs: Sequence[PairStats]) -> str:
    header = [
        "row",
        "col",
        "games",
        "deals",
        "wins",
        "draws",
        "losses",
        "win_rate",
        "win_rate_low",
        "win_rate_high",
        "mean_diff",
        "mean_diff_low",
        "mean_diff_high",
        "forfeits_row",
        "forfeits_col",
        "pairing_seed",
    ]
    out = []
    for s in pairs:
        out.append(
            [
                s.row,
                s.col,
                s.games,
                s.deals,
                s.wins,
                s.draws,
                s.losses,
                _f(s.win_rate, ".6g"),
                _f(s.win_rate_ci[0], ".6g"),
                _f(s.win_rate_ci[1], ".6g"),
                _f(s.mean_diff, ".6g"),
                _f(s.mean_diff_ci[0], ".6g"),
                _f(s.mean_diff_ci[1], ".6g"),
                s.forfeits_row,
                s.forfeits_col,
                "" if s.pairing_seed is None else s.pairing_seed,
            ]
        )
    return _csv_text(header, out)


def leaderboard_md(
    config: TournamentConfig,
    table: Sequence[Standing],
    pairs: Sequence[PairStats],
    rows: Sequence[GameRow],
    total_games: int,
) -> str:
    """The human report. Nothing machine-dependent (no timings), so it is
    identical for every back end."""
    words = _GAME_WORDS[config.game]
    done = len(rows)
    # the anchor is 0 only once it is rated: before its first game (a partial run) the fit centres the mean
    rated = {s.name for s in table if math.isfinite(s.elo)}
    if not config.anchor:
        anchor = "mean = 0"
    elif config.anchor in rated:
        anchor = f"{config.anchor} = 0"
    else:
        anchor = f"mean = 0: the anchor {config.anchor} is not rated yet"
    lines = [
        f"# Tournament {config.name}",
        "",
        (f"- game **{config.game}**, " if config.game != "burako" else "- ")
        + f"rules **{config.game_rules().name}**, {config.players} players{words['scoring']}; "
        f"format **{config.format}**"
        + (f" (challengers: {', '.join(config.challengers)})" if config.format == "gauntlet" else ""),
        f"- {config.games_per_pairing} games per pairing ({config.games_per_pairing // 2} duplicate deal pairs: "
        "every deal played twice with the sides swapped); seed "
        f"{config.seed}",
        f"- games played: {done} of {total_games}" + ("" if done == total_games else " (**incomplete**)"),
        f"- forfeits: {sum(1 for r in rows if r.forfeit)}",
        "",
        "## Ratings",
        "",
        f"Bradley–Terry on the Elo scale ({anchor}), fitted on every game (draws = half a win, "
        f"{config.prior_draws:g} virtual draw(s) per pairing); 95% interval from {config.bootstrap} bootstrap "
        "resamples of the deal pairs. OpenSkill: Plackett–Luce mu ± sigma, ordinal = mu − 3·sigma, "
        "updated game by game.",
        "",
        "| # | participant | agent | Elo | 95% CI | OpenSkill mu ± sigma | ordinal | games | W / D / L "
        "| score | mean diff | forfeits |",
        "|---|---|---|---:|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    for s in table:
        lines.append(
            f"| {s.rank} | {s.name} | `{s.agent}` | {_f(s.elo, '+.0f')} "
            f"| [{_f(s.elo_low, '+.0f')}, {_f(s.elo_high, '+.0f')}] | {s.os_mu:.2f} ± {s.os_sigma:.2f} "
            f"| {s.os_ordinal:.2f} | {s.games} | {s.wins} / {s.draws} / "
            f"{s.losses} | {_f(s.score, '.3f')} | {_f(s.mean_diff, '+.1f')} | {s.forfeits} |"
        )
    order = [s.name for s in table]
    by_pair = {(p.row, p.col): p for p in pairs}
    lines += [
        "",
        "## Crosstable",
        "",
        "Win rate of the row against the column (draws half), 95% CI over deal pairs; "
        f"below it {words['crosstable_diff']}.",
        "",
        "| | " + " | ".join(order) + " |",
        "|---|" + "---|" * len(order),
    ]
    for r in order:
        cells = []
        for c in order:
            p = by_pair.get((r, c))
            if r == c:
                cells.append("—")
            elif p is None or p.games == 0:
                cells.append("")
            else:
                cells.append(
                    f"{p.win_rate:.3f} [{_f(p.win_rate_ci[0], '.3f')}, {_f(p.win_rate_ci[1], '.3f')}]"
                    f"<br>{p.mean_diff:+.1f} [{_f(p.mean_diff_ci[0], '+.1f')}, {_f(p.mean_diff_ci[1], '+.1f')}]"
                )
        lines.append(f"| **{r}** | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Pairings",
        "",
        f"| A | B | games | deals | A W / D / L | A win rate | {words['pairing_diff']} | A win rate by seating "
        f"| {' | '.join(words['end_reasons'])} | forfeits (A / B) | pairing seed |",
        "|---|---|---:|---:|---|---|---|---|---:|---:|---|---:|",
    ]
    for p in make_pairings(config):
        s = by_pair[(p.a.name, p.b.name)]
        mine = [r for r in rows if r.a == p.a.name and r.b == p.b.name]
        by_seat = []
        for k in range(2):
            pts = [r.a_points for r in mine if r.seating == k]
            by_seat.append(_f(sum(pts) / len(pts), ".3f") if pts else "n/a")
        lines.append(
            f"| {p.a.name} | {p.b.name} | {s.games} | {s.deals} | {s.wins} / {s.draws} / {s.losses} "
            f"| {_f(s.win_rate, '.3f')} [{_f(s.win_rate_ci[0], '.3f')}, {_f(s.win_rate_ci[1], '.3f')}] "
            f"| {_f(s.mean_diff, '+.1f')} [{_f(s.mean_diff_ci[0], '+.1f')}, {_f(s.mean_diff_ci[1], '+.1f')}] "
            f"| {' / '.join(by_seat)} | "
            + " | ".join(str(sum(r.end_reason == reason for r in mine)) for reason in words["end_reasons"])
            + f" | {s.forfeits_row} / {s.forfeits_col} | {p.seed} |"
        )
    forfeits = [r for r in rows if r.forfeit]
    lines += ["", "## Forfeits", ""]
    if not forfeits:
        lines.append("None.")
    else:
        lines += ["| A | B | deal | seating | forfeited by | error |", "|---|---|---:|---:|---|---|"]
        for r in forfeits[:200]:
            lines.append(
                f"| {r.a} | {r.b} | {r.deal} | {r.seating} | {r.forfeit} | {r.error.replace('|', '/')[:300]} |"
            )
        if len(forfeits) > 200:
            lines.append(f"\n… and {len(forfeits) - 200} more (results.csv lists them all).")
    return "\n".join(lines) + "\n"


def plot_ratings(table: Sequence[Standing], path: Path, title: str) -> None:
    """Elo with 95% intervals, best on top. A bare Figure (no pyplot): needs no
    display and leaves the caller's backend alone (notebooks keep inline plots)."""
    from matplotlib.figure import Figure

    ordered = [s for s in reversed(table) if not math.isnan(s.elo)]
    y = np.arange(len(ordered))
    elo = np.array([s.elo for s in ordered])
    low = np.array([s.elo_low for s in ordered])
    high = np.array([s.elo_high for s in ordered])
    fig = Figure(figsize=(7.0, 1.0 + 0.55 * len(ordered)), dpi=110)
    ax = fig.subplots()
    if np.isfinite(low).all() and np.isfinite(high).all():
        err = np.vstack([np.maximum(elo - low, 0.0), np.maximum(high - elo, 0.0)])
        ax.errorbar(elo, y, xerr=err, fmt="o", color="tab:blue", ecolor="tab:gray", capsize=4)
    else:
        ax.plot(elo, y, "o", color="tab:blue")
    for yi, s in zip(y, ordered, strict=True):
        ax.annotate(f"{s.elo:+.0f}", (s.elo, yi), textcoords="offset points", xytext=(0, 7), ha="center", fontsize=8)
    ax.set_yticks(y, [s.name for s in ordered])
    ax.set_xlabel("Bradley–Terry Elo (95% bootstrap interval over deal pairs)")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    ax.set_ylim(-0.6, len(ordered) - 0.4)
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
