"""A tournament's ratings: Bradley–Terry on the Elo scale with bootstrap
intervals over deal pairs (``choix``), OpenSkill (Plackett–Luce), the
figures of each ordered pair, and the leaderboard's standings."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from training.duplicate import GameRow, MatchFigures, match_figures
from training.tournament.config import Participant

ELO_PER_NAT = 400.0 / math.log(10.0)
#: the bootstrap's generator is default_rng([seed, BOOTSTRAP_STREAM]): its own stream of the tournament seed
BOOTSTRAP_STREAM = 0xB007


def comparison_matrix(rows: Sequence[GameRow], names: Sequence[str], prior_draws: float = 0.0) -> np.ndarray:
    """``m[i, j]`` = points of ``i`` against ``j`` (wins + draws / 2), plus
    ``prior_draws / 2`` each way for every pair that played."""
    index = {n: i for i, n in enumerate(names)}
    m = np.zeros((len(names), len(names)))
    played = np.zeros_like(m, dtype=bool)
    for r in rows:
        i, j = index[r.a], index[r.b]
        m[i, j] += r.a_points
        m[j, i] += 1.0 - r.a_points
        played[i, j] = played[j, i] = True
    return m + played * (prior_draws / 2.0)


def fit_bradley_terry(comp: np.ndarray) -> np.ndarray:
    """Bradley–Terry log-strengths (mean 0) of a comparison matrix, by
    choix's iterative Luce spectral ranking (the ML estimate). The matrix
    must be connected with every item winning and losing some (``prior_draws``
    makes sure of it)."""
    import choix

    return np.asarray(choix.ilsr_pairwise_dense(comp, alpha=0.0, max_iter=10_000, tol=1e-10))


def _to_elo(theta: np.ndarray, anchor: int | None) -> np.ndarray:
    elo = ELO_PER_NAT * np.asarray(theta, dtype=np.float64)
    return elo - (elo[..., [anchor]] if anchor is not None else elo.mean(axis=-1, keepdims=True))


@dataclass
class BTRatings:
    names: list[str]
    elo: np.ndarray
    low: np.ndarray
    high: np.ndarray
    #: bootstrap Elo samples, resamples x participants (empty without a bootstrap)
    samples: np.ndarray


def bradley_terry_ratings(
    rows: Sequence[GameRow],
    names: Sequence[str],
    *,
    bootstrap: int = 1000,
    seed: int = 0,
    prior_draws: float = 1.0,
    anchor: str | None = None,
) -> BTRatings:
    """Elo-scale Bradley–Terry ratings with percentile intervals from a
    bootstrap over deal pairs, resampled within each pairing (so each
    pairing keeps its number of deals).

    Ratings are only comparable within a connected set of pairings: when the
    games played so far (an interrupted run) leave several, the set holding
    the anchor (else the largest) is rated and the others get NaN."""
    from scipy.sparse.csgraph import connected_components

    names = list(names)
    comp = comparison_matrix(rows, names, prior_draws)
    played = comp > 0
    _, label = connected_components(played, directed=False)
    sizes = np.bincount(label)
    if anchor is not None and played[names.index(anchor)].any():
        chosen = label[names.index(anchor)]
    else:
        chosen = int(np.argmax(np.where(sizes > 1, sizes, 0)))
    keep = np.flatnonzero((label == chosen) & played.any(axis=1))
    sub_anchor = names.index(anchor) if anchor is not None else None
    anchor_i = int(np.flatnonzero(keep == sub_anchor)[0]) if sub_anchor in keep else None
    elo = np.full(len(names), math.nan)
    low = np.full(len(names), math.nan)
    high = np.full(len(names), math.nan)
    samples = np.full((bootstrap, len(names)), math.nan)
    if len(keep) < 2:
        return BTRatings(names, elo, low, high, samples)
    elo[keep] = _to_elo(fit_bradley_terry(comp[np.ix_(keep, keep)]), anchor_i)
    position = {names[k]: i for i, k in enumerate(keep)}
    # per pairing within the rated set: A's points and the number of games in each deal pair
    deals: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0]))
    for r in rows:
        if r.a in position and r.b in position:
            cell = deals[(r.a, r.b)][r.deal]
            cell[0] += r.a_points
            cell[1] += 1.0
    groups = [
        (position[a], position[b], np.array([v[0] for v in d.values()]), np.array([v[1] for v in d.values()]))
        for (a, b), d in sorted(deals.items())
    ]
    rng = np.random.default_rng([seed, BOOTSTRAP_STREAM])
    for k in range(bootstrap):
        m = np.zeros((len(keep), len(keep)))
        for i, j, points, games in groups:
            pick = rng.integers(0, len(points), len(points))
            pts, n = points[pick].sum(), games[pick].sum()
            m[i, j] += pts + prior_draws / 2.0
            m[j, i] += n - pts + prior_draws / 2.0
        samples[k, keep] = _to_elo(fit_bradley_terry(m), anchor_i)
    if bootstrap:
        low[keep], high[keep] = np.percentile(samples[:, keep], [2.5, 97.5], axis=0)
    return BTRatings(names, elo, low, high, samples)


@dataclass
class SkillRating:
    mu: float
    sigma: float

    @property
    def ordinal(self) -> float:
        return self.mu - 3.0 * self.sigma


def openskill_ratings(rows: Sequence[GameRow], names: Sequence[str]) -> dict[str, SkillRating]:
    """Plackett–Luce (openskill) ratings, updated game by game in the order
    (deal, seating, pairing): the interleaving a live ladder would see, and
    fixed, so the ratings are reproducible. A partnership rates as one
    player (both seats are the same participant)."""
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    ratings = {n: model.rating(name=n) for n in names}
    for r in sorted(rows, key=lambda r: (r.deal, r.seating, r.pairing)):
        ranks = [1, 1] if r.a_points == 0.5 else [1, 2] if r.a_points == 1.0 else [2, 1]
        [[ratings[r.a]], [ratings[r.b]]] = model.rate([[ratings[r.a]], [ratings[r.b]]], ranks=ranks)
    return {n: SkillRating(float(ratings[n].mu), float(ratings[n].sigma)) for n in names}


@dataclass
class PairStats(MatchFigures):
    """Row participant against column participant, over their games."""

    row: str
    col: str
    forfeits_row: int
    forfeits_col: int
    pairing_seed: int | None = None


def pair_stats(rows: Sequence[GameRow], row: str, col: str) -> PairStats:
    """Win rate and mean score difference of ``row`` against ``col`` with the
    intervals of burako-eval: over deal pairs."""
    games = []
    forfeits = {row: 0, col: 0}
    for r in rows:
        if {r.a, r.b} != {row, col}:
            continue
        flip = r.a != row
        games.append((r.deal, 1.0 - r.a_points if flip else r.a_points, -r.score_diff if flip else r.score_diff))
        if r.forfeit:
            forfeits[r.forfeit] += 1
    return PairStats(
        **match_figures(games).figures(),
        row=row,
        col=col,
        forfeits_row=forfeits[row],
        forfeits_col=forfeits[col],
    )


@dataclass
class Standing:
    """One line of the leaderboard."""

    rank: int
    name: str
    agent: str
    elo: float
    elo_low: float
    elo_high: float
    os_mu: float
    os_sigma: float
    os_ordinal: float
    games: int
    wins: int
    draws: int
    losses: int
    score: float
    mean_diff: float
    forfeits: int


def standings(
    rows: Sequence[GameRow], participants: Sequence[Participant], bt: BTRatings, skill: Mapping[str, SkillRating]
) -> list[Standing]:
    out = []
    for k, p in enumerate(participants):
        pts: list[float] = []
        diffs: list[int] = []
        for r in rows:
            if p.name in (r.a, r.b):
                mine = r.a == p.name
                pts.append(r.a_points if mine else 1.0 - r.a_points)
                diffs.append(r.score_diff if mine else -r.score_diff)
        out.append(
            Standing(
                rank=0,
                name=p.name,
                agent=p.label,
                elo=float(bt.elo[k]),
                elo_low=float(bt.low[k]),
                elo_high=float(bt.high[k]),
                os_mu=skill[p.name].mu,
                os_sigma=skill[p.name].sigma,
                os_ordinal=skill[p.name].ordinal,
                games=len(pts),
                wins=sum(x == 1.0 for x in pts),
                draws=sum(x == 0.5 for x in pts),
                losses=sum(x == 0.0 for x in pts),
                score=sum(pts) / len(pts) if pts else math.nan,
                mean_diff=float(np.mean(diffs)) if diffs else math.nan,
                forfeits=sum(r.forfeit == p.name for r in rows),
            )
        )
    out.sort(key=lambda s: (math.isnan(s.elo), -s.elo if not math.isnan(s.elo) else 0.0, s.name))
    for rank, s in enumerate(out, start=1):
        s.rank = rank
    return out
