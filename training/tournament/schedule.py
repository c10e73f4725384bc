"""A tournament's schedule: its pairings and their seeds, every game as a
job, tasks of jobs for the back ends, and how one game is played (an agent
fault becomes a forfeit entry, not an exception)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.runner import AgentFault
from training.duplicate import a_seats_of, agent_seed, deal_seed, seatings
from training.game_pool import watched_build
from training.games import play_recorded_game
from training.tournament.config import Participant, TournamentConfig


@dataclass(frozen=True)
class Pairing:
    """A and B of one duplicate match, and the seed its deals derive from."""

    index: int
    a: Participant
    b: Participant
    seed: int


def pairing_seed(seed: int, a: str, b: str) -> int:
    """The seed of the pairing of A and B (display names) in a tournament with ``seed``."""
    digest = hashlib.sha256(f"{a}\x00{b}".encode()).digest()
    words = [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]
    return int(np.random.SeedSequence([seed, *words]).generate_state(1, dtype=np.uint32)[0])


def make_pairings(config: TournamentConfig) -> list[Pairing]:
    """Round robin: every pair, in participant order; gauntlet: each challenger
    (as A) against every participant that is not a challenger."""
    ps = config.participants
    if config.format == "round_robin":
        pairs = [(ps[i], ps[j]) for i in range(len(ps)) for j in range(i + 1, len(ps))]
    else:
        challengers = [p for p in ps if p.name in config.challengers]
        field_ = [p for p in ps if p.name not in config.challengers]
        pairs = [(c, f) for c in challengers for f in field_]
    return [Pairing(k, a, b, pairing_seed(config.seed, a.name, b.name)) for k, (a, b) in enumerate(pairs)]


@dataclass(frozen=True)
class GameJob:
    """One game to play: a pairing's deal in one seating."""

    pairing: Pairing
    deal: int
    seating: int

    @property
    def key(self) -> tuple[str, str, int, int]:
        return (self.pairing.a.name, self.pairing.b.name, self.deal, self.seating)


def schedule(config: TournamentConfig, pairings: Sequence[Pairing]) -> list[GameJob]:
    """Every game, deal by deal across the pairings (so a partial run covers
    all pairings and slow pairings are spread over the tasks)."""
    deals = config.games_per_pairing // 2
    return [GameJob(p, d, k) for d in range(deals) for p in pairings for k in range(2)]


@dataclass(frozen=True)
class GameTask:
    """A chunk of games for one worker of :mod:`training.game_pool` (rules
    travel as the game's rules object: it pickles, and workers need not look up
    a preset file)."""

    rules: Any
    num_players: int
    tournament_seed: int
    jobs: tuple[GameJob, ...]
    move_time_limit: float | None = None
    game: str = "burako"

    def play(self, index: int, status: Any = None) -> GameOutput:
        return play_job(
            self.jobs[index],
            self.rules,
            self.num_players,
            self.tournament_seed,
            self.move_time_limit,
            status,
            game=self.game,
        )


@dataclass
class GameOutput:
    """What a worker sends back for one game: the JSON line (a record, or a
    forfeit entry) and the seconds it took."""

    key: tuple[str, str, int, int]
    forfeit: bool
    entry: dict[str, Any]
    seconds: float


def _job_meta(job: GameJob, num_players: int, tournament_seed: int) -> dict[str, Any]:
    pairing = job.pairing
    return {
        "tournament": {
            "seed": tournament_seed,
            "a": pairing.a.name,
            "b": pairing.b.name,
            "a_agent": pairing.a.label,
            "b_agent": pairing.b.label,
            "pairing_seed": pairing.seed,
            "deal": job.deal,
            "seating": job.seating,
            "a_seats": list(a_seats_of(num_players, job.seating)),
        }
    }


def seat_names(job: GameJob, num_players: int) -> list[str]:
    """The agent name in each seat of a game, from its pairing and seating."""
    return [job.pairing.a.name if s == "A" else job.pairing.b.name for s in seatings(num_players)[job.seating]]


def forfeit_output(
    job: GameJob,
    rules: Any,
    num_players: int,
    tournament_seed: int,
    fault: AgentFault,
    seconds: float,
    game: str = "burako",
) -> GameOutput:
    """The forfeit entry of a game an agent lost by ``fault`` (its seat's participant loses)."""
    names = seat_names(job, num_players)
    meta = _job_meta(job, num_players, tournament_seed)
    meta["forfeit"] = {
        "participant": names[fault.seat],
        "kind": fault.kind,
        "seat": fault.seat,
        "side": fault.side,
        "action": fault.action,
        "step": fault.step,
        "turn": fault.turn,
        "phase": fault.phase,
        "message": str(fault),
        "cause": fault.cause,
        "traceback": fault.cause_traceback,
    }
    entry = {
        "game": game,
        "rules": rules.to_dict(),
        "num_players": num_players,
        "deal_seed": deal_seed(job.pairing.seed, job.deal),
        "agents": names,
        "meta": meta,
    }
    return GameOutput(job.key, True, entry, seconds)


def play_job(
    job: GameJob,
    rules: Any,
    num_players: int,
    tournament_seed: int,
    move_time_limit: float | None = None,
    status: Any = None,
    *,
    game: str = "burako",
) -> GameOutput:
    """Play one game; an agent fault becomes a forfeit entry, not an exception.
    ``status`` (a pool worker's shared array) is kept up to date with the seat
    whose code runs."""
    pairing = job.pairing
    dseed = deal_seed(pairing.seed, job.deal)
    who = [pairing.a if s == "A" else pairing.b for s in seatings(num_players)[job.seating]]
    names = [p.name for p in who]
    meta = _job_meta(job, num_players, tournament_seed)
    start = time.perf_counter()
    steps = [0]
    try:
        agents = []
        for seat, p in enumerate(who):
            try:
                seed = agent_seed(pairing.seed, job.deal, seat)
                # building runs the participant's code too (its module is imported here)
                agents.append(watched_build(lambda p=p, seed=seed: p.spec().build(seed), seat, status, steps))
            except (Exception, SystemExit) as exc:
                raise AgentFault(
                    f"agent {p.name!r} in seat {seat} could not be built for deal {dseed}: {type(exc).__name__}: {exc}",
                    kind="exception",
                    agent=p.name,
                    seat=seat,
                    side=seat % 2,
                    step=0,
                    turn=0,
                    phase="build",
                    deal_seed=dseed,
                    cause=f"{type(exc).__name__}: {exc}",
                ) from exc
        record = play_recorded_game(
            game, agents, rules, num_players, dseed, agent_names=names, meta=meta, move_time_limit=move_time_limit
        )
        return GameOutput(job.key, False, record, time.perf_counter() - start)
    except AgentFault as fault:
        return forfeit_output(job, rules, num_players, tournament_seed, fault, time.perf_counter() - start, game)
