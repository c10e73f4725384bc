"""Duplicate matches, shared by ``burako-eval`` and ``burako-tournament``.

One home for what both play and report: how an agent is built per game
(:class:`AgentSpec`), the two seatings of a deal, the seeds of deals and
agents, one game's result from A's point of view (:class:`GameRow`, a row of
a tournament's ``results.csv`` and an evaluation's outcome), and the figures
over deal pairs (:class:`MatchFigures`: win rate and mean score difference
with 95% intervals). :mod:`training.evaluate`'s docstring explains the
method: every deal played twice with the sides swapped, the deal pair as the
independent unit.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agents.registry import agent_files, make_agent
from burako_env.stats import mean_ci, rate_ci
from training.files import file_digest


# ---------------------------------------------------------------------- agents, seats and seeds
@dataclass(frozen=True)
class AgentSpec:
    """How to build one agent for each game: a registry name and options, or
    (for tests and custom agents) a ``factory(seed, **options)``, which must be
    picklable (a module-level callable) when games run in worker processes."""

    name: str
    options: tuple[tuple[str, Any], ...] = ()
    factory: Callable[..., Any] | None = None

    @classmethod
    def of(
        cls, name: str, options: dict[str, Any] | None = None, factory: Callable[..., Any] | None = None
    ) -> AgentSpec:
        return cls(name, tuple(sorted((options or {}).items())), factory)

    def __post_init__(self) -> None:
        if any(key == "seed" for key, _value in self.options):  # build() passes each game's seed: a bare TypeError
            raise ValueError(
                f"{self.name}: 'seed' is not an agent option; each game seeds its agents from the run's seed"
            )

    @property
    def label(self) -> str:
        """The name as written in records and reports: ``planner(simulations=200)``."""
        if not self.options:
            return self.name
        return f"{self.name}({', '.join(f'{k}={v!r}' for k, v in self.options)})"

    def files(self) -> dict[str, str | None]:
        """The SHA-256 of each file the agent reads (a policy's checkpoint; None: unreadable), by
        path: what a resumed evaluation or tournament checks, since a file replaced under the same
        path (a new shipped bot) changes the games but not the name and options."""
        return {path: file_digest(path) for path in agent_files(self.name, dict(self.options), self.factory)}

    def build(self, seed: int) -> Any:
        if self.factory is not None:
            return self.factory(seed=seed, **dict(self.options))
        return make_agent(self.name, seed=seed, **dict(self.options))


def changed_agent_files(current: Mapping[str, Mapping[str, Any]], stored: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The owners (participants, sides) whose agents' files (:meth:`AgentSpec.files`, by owner) have other
    SHA-256 in ``current`` than in ``stored``. Only the digests count, not the paths: the shipped bot read
    from another copy of the project (an absolute path) is the same file."""

    def digests(files: Mapping[str, Mapping[str, Any]], owner: str) -> list[str]:
        return sorted(map(str, files.get(owner, {}).values()))

    owners = current.keys() | stored.keys()
    return sorted(owner for owner in owners if digests(current, owner) != digests(stored, owner))


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


def a_seats_of(num_players: int, seating: int) -> tuple[int, ...]:
    """The seats of A's side in seating ``seating`` (0: A first, 1: swapped)."""
    return tuple(s for s, who in enumerate(seatings(num_players)[seating]) if who == "A")


def deal_seed(seed: int, deal: int) -> int:
    """The seed of deal ``deal`` of an evaluation run with ``seed``."""
    return int(np.random.SeedSequence([seed, deal]).generate_state(1, dtype=np.uint32)[0])


def agent_seed(seed: int, deal: int, seat: int) -> int:
    """The seed of the agent in ``seat`` of deal ``deal``; the same in both games of the pair."""
    return int(np.random.SeedSequence([seed, deal, seat + 1]).generate_state(1, dtype=np.uint32)[0])


# ---------------------------------------------------------------------- one game
def points_of(score_diff: int) -> float:
    """A's points for a game: 1 win, 0.5 tie (void and truncated hands included), 0 loss."""
    return 1.0 if score_diff > 0 else 0.0 if score_diff < 0 else 0.5


@dataclass
class GameRow:
    """One game of a duplicate match, from A's point of view (a row of a
    tournament's results.csv; an evaluation's outcome). ``a_score`` and
    ``b_score`` are the sides' hand totals, None for a void, truncated or
    forfeited hand (score difference 0). ``score_diff`` is A's margin, positive
    when A did better: A's total minus B's in Burako (the higher total wins),
    B's minus A's in Rummy (the lower wins, R10)."""

    pairing: int
    a: str
    b: str
    deal: int
    seating: int
    deal_seed: int
    a_seats: tuple[int, ...]
    a_score: int | None
    b_score: int | None
    score_diff: int
    a_points: float
    end_reason: str
    turns: int
    actions: int
    #: the participant that forfeited the game (tournaments), and its error
    forfeit: str = ""
    error: str = ""
    #: the game's record (burako_env.records), when kept
    record: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    COLUMNS = (
        "pairing",
        "a",
        "b",
        "deal",
        "seating",
        "deal_seed",
        "a_seats",
        "a_score",
        "b_score",
        "score_diff",
        "a_points",
        "end_reason",
        "turns",
        "actions",
        "forfeit",
        "error",
    )

    @property
    def diff(self) -> int:
        """A's total minus B's (0 without a score): ``score_diff``, burako-eval's name."""
        return self.score_diff

    @property
    def points(self) -> float:
        """1 win, 0.5 tie, 0 loss for A: ``a_points``, burako-eval's name."""
        return self.a_points

    def as_csv(self) -> list[Any]:
        values = []
        for column in self.COLUMNS:
            value = getattr(self, column)
            if column == "a_seats" and not isinstance(value, str):
                value = " ".join(map(str, value))
            values.append("" if value is None else value)
        return values


def scored_row(
    *,
    pairing: int,
    a: str,
    b: str,
    deal: int,
    seating: int,
    deal_seed: int,
    a_seats: Sequence[int],
    sides: Sequence[int],
    side_totals: Sequence[int] | None,
    end_reason: str,
    turns: int,
    actions: int,
    record: dict[str, Any] | None = None,
    lower_wins: bool = False,
) -> GameRow:
    """The row of a game played to its end: A's and B's side totals (``sides``
    maps a seat to its side; no totals for void and truncated hands), A's margin
    (``lower_wins``: the lower total wins, as in Rummy) and A's points.
    Evaluations and tournaments (fresh or resumed) all go through it."""
    a_score = b_score = None
    diff = 0
    if side_totals is not None:
        a_side = sides[a_seats[0]]
        a_score, b_score = int(side_totals[a_side]), int(side_totals[1 - a_side])
        diff = b_score - a_score if lower_wins else a_score - b_score
    return GameRow(
        pairing=pairing,
        a=a,
        b=b,
        deal=deal,
        seating=seating,
        deal_seed=deal_seed,
        a_seats=tuple(a_seats),
        a_score=a_score,
        b_score=b_score,
        score_diff=diff,
        a_points=points_of(diff),
        end_reason=end_reason,
        turns=turns,
        actions=actions,
        record=record,
    )


# ---------------------------------------------------------------------- figures over deal pairs
@dataclass
class MatchFigures:
    """One side against the other over their games; the intervals (95%) are
    over deal pairs: each deal counts the mean of its games. Win rate: Wilson
    score interval (:func:`burako_env.stats.rate_ci`); score difference:
    normal approximation (:func:`burako_env.stats.mean_ci`)."""

    games: int
    deals: int
    wins: int
    draws: int
    losses: int
    win_rate: float
    win_rate_ci: tuple[float, float]
    mean_diff: float
    mean_diff_ci: tuple[float, float]

    def figures(self) -> dict[str, Any]:
        """These fields alone, to build a subclass from: ``Summary(**figures.figures(), ...)``."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(MatchFigures)}

    def curve_point(self) -> dict[str, float | int]:
        """One opponent's point of a learning curve (``training.curves``): win rate and score
        difference with their intervals, and the games behind them."""
        return {
            "win_rate": self.win_rate,
            "low": self.win_rate_ci[0],
            "high": self.win_rate_ci[1],
            "score": self.mean_diff,
            "score_low": self.mean_diff_ci[0],
            "score_high": self.mean_diff_ci[1],
            "games": self.games,
        }


def deal_chunks(n_deals: int, chunk_size: int) -> list[tuple[int, ...]]:
    """Deals ``0..n_deals-1`` in worker tasks of ``chunk_size`` deals."""
    return [tuple(range(i, min(i + chunk_size, n_deals))) for i in range(0, n_deals, chunk_size)]


def match_figures(games: Iterable[tuple[int, float, float]]) -> MatchFigures:
    """The figures of ``(deal, points, score difference)`` games, one side's view."""
    by_deal: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for deal, points, diff in games:
        by_deal[deal].append((points, diff))
    played = [g for d in by_deal.values() for g in d]
    win_rate, win_ci = rate_ci([sum(p for p, _ in d) / len(d) for d in by_deal.values()], games=len(played))
    mean_diff, diff_ci = mean_ci([sum(x for _, x in d) / len(d) for d in by_deal.values()])
    return MatchFigures(
        games=len(played),
        deals=len(by_deal),
        wins=sum(p == 1.0 for p, _ in played),
        draws=sum(p == 0.5 for p, _ in played),
        losses=sum(p == 0.0 for p, _ in played),
        win_rate=win_rate,
        win_rate_ci=win_ci,
        mean_diff=mean_diff,
        mean_diff_ci=diff_ci,
    )
