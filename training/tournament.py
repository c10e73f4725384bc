"""Tournaments between agents: duplicate deals, ratings with confidence, resumable runs.

    burako-tournament --config configs/tournament.yaml
    burako-tournament --config configs/tournament.yaml --set games_per_pairing=40 --set backend=inprocess

Every pairing is a duplicate match, exactly as in ``burako-eval``
(:mod:`training.evaluate`, whose seeding and seating this module imports):
each deal is played twice with the sides swapped (2 players: A in seat 0,
then in seat 1; 4 players: A's partnership in seats 0+2, then in 1+3), with
the same agent seed per seat in both games, so deal luck and seat luck cancel
within a deal pair.

Why a tournament rather than a table of ``burako-eval`` runs: one rating
scale for many agents (Bradley–Terry fitted on every game at once, so A vs C
informs A vs B), intervals on that scale, one resumable run folder, and a
choice of execution back end.

The YAML file (every key but ``participants`` has a default; ``--set
key=value`` overrides any key, dotted for nested ones, with list indices:
``--set participants.3.options.simulations=20``; values are parsed as YAML;
``--set participants.3=null`` drops a participant)::

    name: main                    # a label for the reports
    rules: burako                 # rules preset name, YAML path, or a mapping
    players: 2                    # 2, or 4 (partnerships)
    participants:                 # unique display names; at least two
      - {name: random, agent: random}
      - {name: planner, agent: planner}
      - {name: search, agent: ismcts, options: {simulations: 100}}
      - {name: bot, agent: policy, options: {checkpoint: runs/ppo/best.pt}}
      # agent: a registry name (agents/registry.py), or "module:Class" for a
      # class outside the registry; it is built as Class(seed=..., **options)
    format: round_robin           # round_robin: every pair; gauntlet: each
                                  # challenger against every other participant
    challengers: []               # gauntlet only: the challengers' names
    games_per_pairing: 400        # even: deals per pairing x 2 seatings
    seed: 0                       # every deal, agent and bootstrap seed derives from it
    workers: 2                    # processes (pool) or local CPUs (ray)
    backend: pool                 # inprocess | pool | ray
    chunk_size: null              # games per task; null: chosen from the work left
    move_time_limit: null         # seconds an agent may take per move (null: no limit); see Outcomes
    out: runs/tournament          # the run folder
    ray:
      address: null               # null: a local instance; "auto" or ray://host:port: a cluster
      runtime_env: null           # passed to ray.init (e.g. {working_dir: .} for a cluster)
    ratings:
      bootstrap: 1000             # bootstrap resamples of the deal pairs, for the intervals
      prior_draws: 1.0            # virtual draws added to every pairing that played (see below)
      anchor: null                # a participant pinned at Elo 0; null: the mean is 0

Seeds. The pairing of A and B (A is the earlier participant in round robin,
the challenger in a gauntlet) has the seed
``pairing_seed(seed, A, B)`` (from the tournament seed and both display
names), and its deal ``i`` is dealt from ``deal_seed(pairing_seed, i)`` with
agent seeds ``agent_seed(pairing_seed, i, seat)`` — the functions of
:mod:`training.evaluate`, so a pairing replays exactly as
``burako-eval --seed <pairing seed>``. Names rather than positions make the
deals of a pairing independent of the order and number of participants.
Each game is a pure function of the config, so results are identical
whatever the back end, the worker count or the chunking.

Outcomes. A game is a win (1), draw (0.5) or loss (0) for A by hand total;
void and truncated hands are draws with score difference 0. An agent that
raises, calls ``sys.exit`` or returns an illegal action
(:class:`~agents.runner.AgentFault`) loses that game by forfeit (score
difference 0, ``end_reason`` forfeit), the error is kept, and the tournament
goes on. So does an agent that answers after ``move_time_limit`` seconds
(kind ``timeout``). With the ``pool`` back end, an agent whose worker
process dies (``os._exit``, a crash, the out-of-memory killer: kind
``crash``) or that never answers (the worker is stopped
``HANG_GRACE_SECONDS`` after the limit: kind ``timeout``) forfeits the game
in flight; the worker is replaced and the rest of its task goes on. Each
worker keeps a shared note of whose code it runs, so the fault is the right
agent's. (In process, ``os._exit`` ends everything and an agent that never
answers is never stopped: use ``pool`` for untrusted agents.) Timeouts depend
on the machine, so a run with a limit is reproducible only while no agent
comes near it. A participant that cannot be built at all stops the run
before any game.

Ratings.

- Bradley–Terry on the Elo scale, fitted on all games with ``choix``
  (``ilsr_pairwise_dense``, the ML estimate of a comparison matrix; draws
  count half a win each way). Every pairing that played gets ``prior_draws``
  virtual draws, so a 400–0 sweep has a large but finite gap (the ML estimate
  alone would be infinite). ``Elo = 400 · log10(e) · θ``: a 100-point gap is
  a 64% expected score. The 95% interval is the 2.5–97.5 percentile of a
  bootstrap that resamples the deal pairs of each pairing with replacement
  (the pair is the independent unit; its two games are not independent).
- OpenSkill (Plackett–Luce, ``openskill``), updated game by game in a fixed
  order (deal, seating, pairing), as an online rating would be: mu, sigma
  and the conservative ordinal mu − 3·sigma.
- The crosstable: each ordered pair's win rate and mean score difference,
  with 95% intervals over deal pairs (the normal approximation of
  ``burako-eval``), games, deals and forfeits.

The run folder (``out``)::

    config.yaml       the config used (games are only reused from a folder whose
                      game-defining config, i.e. rules, players, seed and
                      participants, is the same)
    records.jsonl     every finished game, burako_env.records format; meta.tournament
                      holds the pairing, deal and seating
    forfeits.jsonl    every forfeited game: the same meta plus meta.forfeit with the
                      fault (a forfeited hand is not over, so it has no valid record)
    results.csv       one row per game
    leaderboard.md    ratings, crosstable, pairings, forfeits
    leaderboard.csv   one row per participant
    crosstable.csv    one row per ordered pair
    ratings.png       Bradley–Terry Elo with 95% intervals
    timings.csv       seconds per game (machine-dependent, so kept out of the results)

Resuming. Games are appended to the two JSON-lines files as they finish, so
an interrupted tournament (Ctrl-C, a killed job) started again with the same
config plays only the games that are missing; a half-written last line is
dropped and that game played again. Every game found must be one this run
schedules, with this run's tournament seed, pairing seed, deal seed and agent
labels; anything else is refused (never published as this run's games). At
the end both files are rewritten in schedule order, so a run's files do not
depend on the order games finished in. ``--fresh`` deletes the previous run's
files first.

Sharing a folder. A run holds a lock on its folder (``out/.lock``, a
``filelock`` lock released when the process ends, even when killed), so a
second run in the same ``out`` is refused at once. ``config.yaml`` is written
only once the folder has been accepted: a refused run changes nothing. Empty
journals (a run that failed before its first game) block nothing.

Back ends: ``inprocess`` (one process; for debugging), ``pool`` (a local
process pool, spawn start method) and ``ray`` (the same tasks as Ray tasks;
``pip install -e ".[ray]"``). Agents are built per game, from the seeds
above; an agent that loads something heavy (a checkpoint) should cache it
per process.
"""

from __future__ import annotations

import argparse
import copy
import csv
import dataclasses
import hashlib
import importlib
import io
import json
import math
import multiprocessing
import multiprocessing.connection as mp_connection
import os
import signal
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from tqdm import tqdm

from agents.runner import AgentFault, play_game
from burako_env.records import RecordError, dumps_record, validate_record
from burako_env.rules import Rules, RulesError, load_rules
from burako_env.safe_yaml import YamlInputError, load_yaml, read_text_file, short_repr
from burako_env.stats import mean_ci, rate_ci
from training.config_fields import FieldError, as_float, as_int, as_str
from training.evaluate import AgentSpec, agent_seed, deal_seed, seatings
from training.locks import LockedError, folder_lock

FORMATS = ("round_robin", "gauntlet")
BACKENDS = ("inprocess", "pool", "ray")
ELO_PER_NAT = 400.0 / math.log(10.0)
#: the bootstrap's generator is default_rng([seed, BOOTSTRAP_STREAM]): its own stream of the tournament seed
BOOTSTRAP_STREAM = 0xB007
RECORDS = "records.jsonl"
FORFEITS = "forfeits.jsonl"
RUN_FILES = (
    RECORDS,
    FORFEITS,
    "results.csv",
    "leaderboard.md",
    "leaderboard.csv",
    "crosstable.csv",
    "ratings.png",
    "timings.csv",
    "config.yaml",
)
DEFAULTS: dict[str, Any] = {
    "name": "tournament",
    "rules": "burako",
    "players": 2,
    "format": "round_robin",
    "challengers": [],
    "games_per_pairing": 400,
    "seed": 0,
    "workers": 2,
    "backend": "pool",
    "chunk_size": None,
    "move_time_limit": None,
    "out": "runs/tournament",
    "ray": {"address": None, "runtime_env": None},
    "ratings": {"bootstrap": 1000, "prior_draws": 1.0, "anchor": None},
}


class TournamentError(ValueError):
    """A config or run-folder problem, or a participant that cannot be built:
    raised before any game is played."""


# ---------------------------------------------------------------------- config
@dataclass(frozen=True)
class Participant:
    """One entrant: a display name, and how to build its agent for each game.

    ``agent`` is a registry name, or ``module:Class``; ``factory`` (for tests
    and programmatic use) replaces both and must be a module-level callable
    when games run in other processes."""

    name: str
    agent: str
    options: tuple[tuple[str, Any], ...] = ()
    factory: Callable[..., Any] | None = None

    @classmethod
    def of(
        cls, name: str, agent: str, options: Mapping[str, Any] | None = None, factory: Callable[..., Any] | None = None
    ) -> Participant:
        return cls(str(name), str(agent), tuple(sorted((options or {}).items())), factory)

    @classmethod
    def from_dict(cls, data: Any, index: int) -> Participant:
        if isinstance(data, str):
            data = {"agent": data}
        if not isinstance(data, Mapping):
            raise TournamentError(f"participants.{index}: expected a mapping {{name, agent, options}}, got {data!r}")
        unknown = sorted(set(data) - {"name", "agent", "options"})
        if unknown:
            raise TournamentError(f"participants.{index}: unknown key(s) {unknown}; allowed: name, agent, options")
        if not data.get("agent"):
            raise TournamentError(f"participants.{index}: 'agent' (a registry name or module:Class) is required")
        options = data.get("options") or {}
        if not isinstance(options, Mapping):
            raise TournamentError(f"participants.{index}.options: expected a mapping, got {options!r}")
        return cls.of(data.get("name") or data["agent"], data["agent"], options)

    @property
    def label(self) -> str:
        """The agent and its options, as in burako-eval: ``ismcts(simulations=100)``."""
        return AgentSpec(self.agent, self.options).label

    def spec(self) -> AgentSpec:
        """The evaluation's AgentSpec: ``module:Class`` agents become a factory
        (a class pickles by reference, so workers import it themselves)."""
        factory = self.factory
        if factory is None and ":" in self.agent:
            module_name, _, class_name = self.agent.partition(":")
            factory = getattr(importlib.import_module(module_name), class_name)
        return AgentSpec(self.agent, self.options, factory)

    def to_dict(self) -> dict[str, Any]:
        agent = self.agent
        if self.factory is not None:
            agent = f"{self.factory.__module__}:{self.factory.__qualname__}"
        return {"name": self.name, "agent": agent, "options": dict(self.options)}


@dataclass(frozen=True)
class TournamentConfig:
    """A validated tournament config (see the module docstring for the YAML)."""

    participants: tuple[Participant, ...]
    name: str = "tournament"
    rules: Any = "burako"
    players: int = 2
    format: str = "round_robin"
    challengers: tuple[str, ...] = ()
    games_per_pairing: int = 400
    seed: int = 0
    workers: int = 2
    backend: str = "pool"
    chunk_size: int | None = None
    out: str = "runs/tournament"
    ray_address: str | None = None
    ray_runtime_env: Mapping[str, Any] | None = None
    bootstrap: int = 1000
    prior_draws: float = 1.0
    anchor: str | None = None
    move_time_limit: float | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TournamentConfig:
        merged = _deep_merge(DEFAULTS, data)
        unknown = sorted(set(merged) - set(DEFAULTS) - {"participants"})
        if unknown:
            raise TournamentError(f"unknown config key(s) {unknown}; known: participants, {', '.join(DEFAULTS)}")
        for group in ("ray", "ratings"):
            if not isinstance(merged[group], Mapping):
                raise TournamentError(f"{group}: expected a mapping, got {merged[group]!r}")
            extra = sorted(set(merged[group]) - set(DEFAULTS[group]))
            if extra:
                raise TournamentError(f"{group}: unknown key(s) {extra}; known: {', '.join(DEFAULTS[group])}")
        raw = merged.get("participants")
        if not isinstance(raw, Sequence) or isinstance(raw, str):
            raise TournamentError("participants: expected a list of {name, agent, options}")
        participants = tuple(
            p if isinstance(p, Participant) else Participant.from_dict(p, i) for i, p in enumerate(raw) if p is not None
        )
        challengers = merged["challengers"] or []
        if isinstance(challengers, str):
            challengers = [challengers]
        if not isinstance(challengers, (list, tuple)):
            raise TournamentError(f"challengers: expected a list of names, got {short_repr(challengers)}")
        try:
            ray_group, ratings = merged["ray"], merged["ratings"]
            config = cls(
                participants=participants,
                name=as_str("name", merged["name"]),
                rules=_rules_value(merged["rules"]),
                players=as_int("players", merged["players"]),
                format=as_str("format", merged["format"]),
                challengers=tuple(as_str(f"challengers[{i}]", c) for i, c in enumerate(challengers)),
                games_per_pairing=as_int("games_per_pairing", merged["games_per_pairing"]),
                seed=as_int("seed", merged["seed"]),
                workers=as_int("workers", merged["workers"]),
                backend=as_str("backend", merged["backend"]),
                chunk_size=None if merged["chunk_size"] is None else as_int("chunk_size", merged["chunk_size"]),
                out=as_str("out", merged["out"]),
                ray_address=None if ray_group["address"] is None else as_str("ray.address", ray_group["address"]),
                ray_runtime_env=ray_group["runtime_env"],
                bootstrap=as_int("ratings.bootstrap", ratings["bootstrap"]),
                prior_draws=as_float("ratings.prior_draws", ratings["prior_draws"]),
                anchor=None if ratings["anchor"] is None else as_str("ratings.anchor", ratings["anchor"]),
                move_time_limit=None
                if merged["move_time_limit"] is None
                else as_float("move_time_limit", merged["move_time_limit"]),
            )
        except FieldError as exc:
            raise TournamentError(str(exc)) from exc
        config.check()
        return config

    def check(self) -> None:
        """Every config error, found before anything runs."""
        names = [p.name for p in self.participants]
        if len(names) < 2:
            raise TournamentError(f"a tournament needs at least two participants, got {len(names)}")
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise TournamentError(f"participant names must be unique; repeated: {dupes}")
        if self.format not in FORMATS:
            raise TournamentError(f"format must be one of {list(FORMATS)}, got {self.format!r}")
        if self.format == "gauntlet":
            if not self.challengers:
                raise TournamentError("format gauntlet needs 'challengers' (names of participants)")
            missing = sorted(set(self.challengers) - set(names))
            if missing:
                raise TournamentError(f"challengers {missing} are not participants ({names})")
            if set(self.challengers) == set(names):
                raise TournamentError("a gauntlet needs a field: at least one participant that is not a challenger")
        elif self.challengers:
            raise TournamentError("'challengers' is only for format gauntlet")
        if self.games_per_pairing <= 0 or self.games_per_pairing % 2:
            raise TournamentError(
                f"games_per_pairing must be a positive even number (each deal is played twice), "
                f"got {self.games_per_pairing}"
            )
        if self.seed < 0:
            raise TournamentError(f"seed must be >= 0, got {self.seed}")
        if self.workers < 1:
            raise TournamentError(f"workers must be >= 1, got {self.workers}")
        if self.backend not in BACKENDS:
            raise TournamentError(f"backend must be one of {list(BACKENDS)}, got {self.backend!r}")
        if self.chunk_size is not None and self.chunk_size < 1:
            raise TournamentError(f"chunk_size must be >= 1 or null, got {self.chunk_size}")
        if self.move_time_limit is not None and not self.move_time_limit > 0:
            raise TournamentError(f"move_time_limit must be > 0 seconds or null, got {self.move_time_limit}")
        if not self.out:
            raise TournamentError("out must name a folder")
        if self.bootstrap < 0:
            raise TournamentError(f"ratings.bootstrap must be >= 0, got {self.bootstrap}")
        if not self.prior_draws > 0:
            raise TournamentError(f"ratings.prior_draws must be > 0 (it keeps sweeps finite), got {self.prior_draws}")
        if self.anchor is not None and self.anchor not in names:
            raise TournamentError(f"ratings.anchor {self.anchor!r} is not a participant ({names})")
        try:
            rules = load_rules(self.rules)
            rules.check_players(self.players)
            seatings(self.players)
        except (RulesError, ValueError) as exc:
            raise TournamentError(str(exc)) from exc

    def to_dict(self) -> dict[str, Any]:
        """The config as YAML data (what ``config.yaml`` holds)."""
        return {
            "name": self.name,
            "rules": self.rules,
            "players": self.players,
            "participants": [p.to_dict() for p in self.participants],
            "format": self.format,
            "challengers": list(self.challengers),
            "games_per_pairing": self.games_per_pairing,
            "seed": self.seed,
            "workers": self.workers,
            "backend": self.backend,
            "chunk_size": self.chunk_size,
            "move_time_limit": self.move_time_limit,
            "out": self.out,
            "ray": {"address": self.ray_address, "runtime_env": self.ray_runtime_env},
            "ratings": {"bootstrap": self.bootstrap, "prior_draws": self.prior_draws, "anchor": self.anchor},
        }

    def game_fingerprint(self) -> dict[str, Any]:
        """What decides the games (not their number, format or how they run):
        a run folder's games are reused only when this is unchanged."""
        return {
            "rules": load_rules(self.rules).to_dict(),
            "players": self.players,
            "seed": self.seed,
            "participants": [p.to_dict() for p in self.participants],
        }


def _rules_value(value: Any) -> Any:
    if isinstance(value, (str, Mapping)) and value:
        return value
    raise TournamentError(f"rules: expected a preset name, a YAML path or a mapping, got {short_repr(value)}")


def _deep_merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(base))
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def apply_override(data: dict[str, Any], assignment: str) -> None:
    """Apply one ``--set a.b.0.c=value`` to config data in place (value parsed as YAML)."""
    key, sep, text = assignment.partition("=")
    if not sep or not key.strip():
        raise TournamentError(f"--set: expected key=value, got {assignment!r}")
    try:
        value = load_yaml(text, f"--set {short_repr(key)}") if text.strip() else None
    except YamlInputError as exc:
        raise TournamentError(str(exc)) from exc
    parts = key.strip().split(".")
    node: Any = data
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise TournamentError(f"--set {key}: {part!r} is not an index of a list of {len(node)}")
            if last:
                node[int(part)] = value
            else:
                node = node[int(part)]
        elif isinstance(node, dict):
            if last:
                node[part] = value
            else:
                if node.get(part) is None:
                    node[part] = {}
                node = node[part]
        else:
            raise TournamentError(f"--set {key}: {'.'.join(parts[:i])!r} is not a mapping or a list")


def load_config(path: str | Path, overrides: Sequence[str] = ()) -> TournamentConfig:
    """Read a YAML tournament config and apply ``--set`` overrides."""
    path = Path(path)
    if not path.is_file():
        raise TournamentError(f"config file {str(path)!r} does not exist")
    try:
        data = load_yaml(read_text_file(path, "tournament config"), str(path)) or {}
    except YamlInputError as exc:
        raise TournamentError(str(exc)) from exc
    if not isinstance(data, dict):
        raise TournamentError(f"{path}: expected a mapping at the top level")
    for assignment in overrides:
        apply_override(data, assignment)
    return TournamentConfig.from_dict(data)


def check_participants(participants: Sequence[Participant]) -> None:
    """Build every participant once (seed 0) in this process, so an unknown
    agent, a missing module or checkpoint, or a bad option stops the run
    before any game instead of forfeiting hundreds of them."""
    for p in participants:
        try:
            agent = p.spec().build(0)
        except Exception as exc:
            raise TournamentError(
                f"participant {p.name!r} (agent {p.agent!r}, options {dict(p.options)}) failed to load: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        missing = [m for m in ("reset", "act") if not callable(getattr(agent, m, None))]
        if missing:
            raise TournamentError(
                f"participant {p.name!r} (agent {p.agent!r}) is not an agent: no {' or '.join(missing)}() method"
            )


# ---------------------------------------------------------------------- schedule
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
class _Task:
    """A chunk of games for one worker (rules travel as a Rules: pickles, and
    workers need not look up a preset file)."""

    rules: Rules
    num_players: int
    tournament_seed: int
    jobs: tuple[GameJob, ...]
    move_time_limit: float | None = None


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
    seating = seatings(num_players)[job.seating]
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
            "a_seats": [s for s, w in enumerate(seating) if w == "A"],
        }
    }


def _seat_names(job: GameJob, num_players: int) -> list[str]:
    return [job.pairing.a.name if s == "A" else job.pairing.b.name for s in seatings(num_players)[job.seating]]


def forfeit_output(
    job: GameJob, rules: Rules, num_players: int, tournament_seed: int, fault: AgentFault, seconds: float
) -> GameOutput:
    """The forfeit entry of a game an agent lost by ``fault`` (its seat's participant loses)."""
    names = _seat_names(job, num_players)
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
        "rules": rules.to_dict(),
        "num_players": num_players,
        "deal_seed": deal_seed(job.pairing.seed, job.deal),
        "agents": names,
        "meta": meta,
    }
    return GameOutput(job.key, True, entry, seconds)


#: a pool worker's shared status: [seat in agent code (-1: none), time.time() it entered, actions played so far]
_STATUS_SEAT, _STATUS_SINCE, _STATUS_STEP = 0, 1, 2


class _Watched:
    """An agent whose every call is marked in the worker's shared status, so
    that when the process dies (or hangs) the parent knows whose code it was
    in, since when, and at which action."""

    def __init__(self, agent: Any, seat: int, status: Any, steps: list[int]) -> None:
        self.agent = agent
        self.seat = seat
        self.status = status
        self.steps = steps

    def _enter(self) -> None:
        self.status[_STATUS_STEP] = self.steps[0]
        self.status[_STATUS_SINCE] = time.time()
        self.status[_STATUS_SEAT] = self.seat

    def _leave(self) -> None:
        self.status[_STATUS_SEAT] = -1
        self.status[_STATUS_SINCE] = 0.0

    def reset(self, seat: int, rules: Any, num_players: int) -> None:
        self._enter()
        try:
            self.agent.reset(seat, rules, num_players)
        finally:
            self._leave()

    def act(self, observation: Any, view: Any) -> int:
        self._enter()
        try:
            return self.agent.act(observation, view)
        finally:
            self._leave()
            self.steps[0] += 1


def play_job(
    job: GameJob,
    rules: Rules,
    num_players: int,
    tournament_seed: int,
    move_time_limit: float | None = None,
    status: Any = None,
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
            watched = _Watched(None, seat, status, steps) if status is not None else None
            try:
                if watched is not None:
                    watched._enter()  # building runs the participant's code too
                agent = p.spec().build(agent_seed(pairing.seed, job.deal, seat))
                if watched is not None:
                    watched.agent = agent
                    agent = watched
                agents.append(agent)
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
            finally:
                if watched is not None:
                    watched._leave()
        result = play_game(
            agents, rules, num_players, dseed, agent_names=names, meta=meta, move_time_limit=move_time_limit
        )
        assert result.record is not None
        return GameOutput(job.key, False, result.record, time.perf_counter() - start)
    except AgentFault as fault:
        return forfeit_output(job, rules, num_players, tournament_seed, fault, time.perf_counter() - start)


def run_task(task: _Task) -> list[GameOutput]:
    """Worker entry point (in-process and ray back ends): a chunk of games, in order."""
    return [
        play_job(job, task.rules, task.num_players, task.tournament_seed, task.move_time_limit) for job in task.jobs
    ]


# ---------------------------------------------------------------------- back ends
def _iter_inprocess(tasks: Sequence[_Task]) -> Iterator[list[GameOutput]]:
    for task in tasks:
        yield run_task(task)


def _pool_worker(conn: Any, status: Any) -> None:
    """A pool worker process: takes a task, sends each game as it finishes, then "done"."""
    from training.evaluate import one_thread_per_worker

    one_thread_per_worker()
    while True:
        task = conn.recv()
        if task is None:
            return
        for index, job in enumerate(task.jobs):
            output = play_job(job, task.rules, task.num_players, task.tournament_seed, task.move_time_limit, status)
            conn.send(("game", index, output))
        conn.send(("done", len(task.jobs), None))


#: a hung agent is stopped this long after its move time limit (the limit itself is checked in the worker)
HANG_GRACE_SECONDS = 2.0


class _Worker:
    """One pool process, its pipe and shared status, and the task it is on."""

    def __init__(self, ctx: Any) -> None:
        self.status = ctx.Array("d", [-1.0, 0.0, 0.0], lock=False)
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_pool_worker, args=(child, self.status), daemon=True)
        self.process.start()
        child.close()
        self.task: _Task | None = None
        self.next_game = 0
        self.killed_for_hang = False

    def give(self, task: _Task) -> None:
        self.task, self.next_game, self.killed_for_hang = task, 0, False
        self.status[_STATUS_SEAT], self.status[_STATUS_SINCE] = -1, 0.0
        self.conn.send(task)

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)
        self.conn.close()


def _death_output(worker: _Worker, exitcode: int | None) -> tuple[GameOutput, _Task | None]:
    """The forfeit of the game a dead worker was playing, and the rest of its task.
    A death outside any agent's code is not an agent's fault: it stops the run."""
    task = worker.task
    assert task is not None
    job = task.jobs[worker.next_game]
    seat = int(worker.status[_STATUS_SEAT])
    step = int(worker.status[_STATUS_STEP])
    if seat < 0:
        raise TournamentError(
            f"a pool worker process died (exit code {exitcode}) outside any agent's code while playing game {job.key} "
            "(its traceback, if any, is above); run the same command again to resume"
        )
    names = _seat_names(job, task.num_players)
    if worker.killed_for_hang:
        kind, what = "timeout", f"did not answer within {task.move_time_limit:g} s; its process was stopped"
    else:
        kind, what = "crash", f"ended its worker process (exit code {exitcode})"
    fault = AgentFault(
        f"agent {names[seat]!r} in seat {seat} {what} at action {step} of deal {deal_seed(job.pairing.seed, job.deal)}",
        kind=kind,
        agent=names[seat],
        seat=seat,
        side=seat % 2,
        step=step,
        turn=-1,
        phase="unknown",
        deal_seed=deal_seed(job.pairing.seed, job.deal),
        cause=f"process exit code {exitcode}",
    )
    rest = task.jobs[worker.next_game + 1 :]
    remaining = dataclasses.replace(task, jobs=rest) if rest else None
    return forfeit_output(job, task.rules, task.num_players, task.tournament_seed, fault, 0.0), remaining


def _iter_pool(tasks: Sequence[_Task], workers: int) -> Iterator[list[GameOutput]]:
    """A local pool of spawned processes (no fork of a process holding threads),
    each game sent back as it finishes. Not multiprocessing.Pool: its tasks
    hang for ever when a worker dies. Here a worker that dies (``os._exit``,
    a crash) or hangs past the move time limit costs its agent a forfeit of
    the game in flight, is replaced, and the rest of its task goes on."""
    ctx = multiprocessing.get_context("spawn")
    queue = list(reversed(tasks))
    pool = [_Worker(ctx) for _ in range(max(1, min(workers, len(tasks))))]
    try:
        while queue or any(w.task is not None for w in pool):
            for k, worker in enumerate(pool):
                if worker.task is None and queue:
                    if not worker.process.is_alive():  # died between tasks: nobody's game was in flight
                        worker.stop()
                        pool[k] = worker = _Worker(ctx)
                    worker.give(queue.pop())
            busy = [w for w in pool if w.task is not None]
            ready = set(mp_connection.wait([w.conn for w in busy] + [w.process.sentinel for w in busy], timeout=0.5))
            for k, worker in enumerate(pool):
                if worker.task is None:
                    continue
                if worker.conn in ready or worker.process.sentinel in ready:
                    try:
                        while worker.conn.poll():
                            kind, index, output = worker.conn.recv()
                            if kind == "game":
                                worker.next_game = index + 1
                                yield [output]
                            else:
                                worker.task = None
                                break
                        if worker.task is None or worker.process.is_alive():
                            continue
                    except (EOFError, OSError):
                        pass
                    worker.process.join(1)
                    if worker.process.is_alive():
                        continue
                    output, rest = _death_output(worker, worker.process.exitcode)
                    worker.stop()
                    if rest is not None:
                        queue.append(rest)
                    pool[k] = _Worker(ctx)
                    yield [output]
                    continue
                limit = worker.task.move_time_limit
                since = worker.status[_STATUS_SINCE]
                if limit is not None and since > 0 and time.time() - since > limit + HANG_GRACE_SECONDS:
                    worker.killed_for_hang = True
                    worker.process.kill()
    finally:
        for worker in pool:
            worker.stop()


def _iter_ray(
    tasks: Sequence[_Task], workers: int, address: str | None, runtime_env: Mapping[str, Any] | None
) -> Iterator[list[GameOutput]]:
    """The same tasks as Ray tasks. Joins a running Ray (``address``, or one
    this process already started), else starts a local one with ``workers``
    CPUs and shuts it down at the end."""
    try:
        import ray
    except ImportError as exc:
        raise TournamentError('backend ray needs the ray extra: pip install -e ".[ray]"') from exc
    started = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": True}
        if runtime_env:
            kwargs["runtime_env"] = dict(runtime_env)
        if address:
            ray.init(address=address, **kwargs)
        else:
            ray.init(num_cpus=workers, **kwargs)
        started = True
    remote = ray.remote(num_cpus=1, max_retries=0)(run_task)
    pending = [remote.remote(task) for task in tasks]
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                yield ray.get(ref)
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
        if started:
            ray.shutdown()


def execute(config: TournamentConfig, tasks: Sequence[_Task]) -> Iterator[list[GameOutput]]:
    """Each task's games, in the order tasks finish (the caller sorts)."""
    if config.backend == "inprocess" or not tasks:
        return _iter_inprocess(tasks)
    if config.backend == "pool":
        return _iter_pool(tasks, min(config.workers, len(tasks)))
    return _iter_ray(tasks, config.workers, config.ray_address, config.ray_runtime_env)


# ---------------------------------------------------------------------- the run folder
def _entry_key(entry: Mapping[str, Any]) -> tuple[str, str, int, int]:
    t = entry["meta"]["tournament"]
    return (t["a"], t["b"], int(t["deal"]), int(t["seating"]))


def _read_journal(path: Path, is_record: bool) -> list[dict[str, Any]]:
    """The entries of a JSON-lines journal. Text after the last newline is a
    line cut short by an interruption: it is dropped (and cut from the file),
    so its game is played again. Damage anywhere else is an error."""
    if not path.exists():
        return []
    data = path.read_bytes()
    complete, _, tail = data.rpartition(b"\n")
    if tail:
        print(f"burako-tournament: {path}: dropping an unfinished last line ({len(tail)} bytes)", file=sys.stderr)
        with path.open("r+b") as f:
            f.truncate(len(data) - len(tail))
    entries: list[dict[str, Any]] = []
    for number, raw in enumerate(complete.split(b"\n") if complete else [], start=1):
        if not raw.strip():
            continue
        try:
            entry = json.loads(raw)
            if is_record:
                validate_record(entry)
            _entry_key(entry)
        except (ValueError, KeyError, TypeError) as exc:
            raise TournamentError(f"{path}, line {number}: {exc}") from exc
        entries.append(entry)
    return entries


def _has_games(out: Path) -> bool:
    """Whether the folder's journals hold any game (an empty journal, left by a
    run that failed before its first game, holds none and blocks nothing)."""
    return any((out / name).is_file() and (out / name).stat().st_size > 0 for name in (RECORDS, FORFEITS))


def _prepare_folder(config: TournamentConfig, out: Path, fresh: bool) -> None:
    """Refuse to mix games of a different tournament (the caller holds the folder's lock); writes nothing."""
    if fresh:
        for name in RUN_FILES:
            (out / name).unlink(missing_ok=True)
    stored_path = out / "config.yaml"
    if stored_path.exists() and _has_games(out):
        try:
            stored = TournamentConfig.from_dict(load_yaml(stored_path.read_text(encoding="utf-8"), str(stored_path)))
            same = stored.game_fingerprint() == config.game_fingerprint()
        except (TournamentError, YamlInputError, UnicodeDecodeError, ImportError, AttributeError):
            same = False
        if not same:
            raise TournamentError(
                f"{out} holds games of a different tournament (rules, players, seed or participants differ "
                f"from {stored_path}); choose another 'out' or pass --fresh to delete them"
            )


def _check_entry(
    entry: Mapping[str, Any], config: TournamentConfig, pairings: Mapping[Any, Pairing], where: str
) -> None:
    """A journal's game must be one this run schedules, with this run's seeds and
    agents: games of another run (another seed, say) are never published as ours."""
    t = entry["meta"]["tournament"]
    pairing = pairings[(t["a"], t["b"])]
    expected = {
        "seed": config.seed,
        "pairing_seed": pairing.seed,
        "a_agent": pairing.a.label,
        "b_agent": pairing.b.label,
    }
    for key, value in expected.items():
        if t.get(key) != value:
            raise TournamentError(
                f"{where}: game {_entry_key(entry)} has {key} {short_repr(t.get(key))}, but this run has "
                f"{short_repr(value)}: the folder holds games of another run; choose another 'out' or pass --fresh"
            )
    if entry.get("deal_seed") != deal_seed(pairing.seed, int(t["deal"])):
        raise TournamentError(f"{where}: game {_entry_key(entry)} was not dealt from this run's seeds")


def _rewrite_sorted(path: Path, entries: Sequence[Mapping[str, Any]], order: Mapping[Any, int]) -> None:
    """Rewrite a journal in schedule order (atomically), so its bytes do not
    depend on the order games finished in."""
    if not path.exists():
        return
    ordered = sorted(entries, key=lambda e: order[_entry_key(e)])
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8", newline="\n") as f:
        for entry in ordered:
            f.write(dumps_record(entry) + "\n")
    os.replace(tmp, path)


# ---------------------------------------------------------------------- results
@dataclass
class GameRow:
    """One game of the tournament, from A's point of view (a row of results.csv)."""

    pairing: int
    a: str
    b: str
    deal: int
    seating: int
    deal_seed: int
    a_seats: str
    a_score: int | None
    b_score: int | None
    score_diff: int
    a_points: float
    end_reason: str
    turns: int
    actions: int
    forfeit: str = ""
    error: str = ""

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

    def as_csv(self) -> list[Any]:
        return ["" if (v := getattr(self, c)) is None else v for c in self.COLUMNS]


def row_from_entry(entry: Mapping[str, Any], pairing_index: int) -> GameRow:
    """The results row of a record or forfeit entry (fresh and resumed games
    go through this one function, so they cannot differ)."""
    t = entry["meta"]["tournament"]
    a_seats = [int(s) for s in t["a_seats"]]
    common = {
        "pairing": pairing_index,
        "a": t["a"],
        "b": t["b"],
        "deal": int(t["deal"]),
        "seating": int(t["seating"]),
        "deal_seed": int(entry["deal_seed"]),
        "a_seats": " ".join(map(str, a_seats)),
    }
    forfeit = entry["meta"].get("forfeit")
    if forfeit is not None:
        a_lost = forfeit["participant"] == t["a"]
        return GameRow(
            **common,
            a_score=None,
            b_score=None,
            score_diff=0,
            a_points=0.0 if a_lost else 1.0,
            end_reason="forfeit",
            turns=int(forfeit["turn"]),
            actions=int(forfeit["step"]),
            forfeit=forfeit["participant"],
            error=forfeit["message"],
        )
    scores = entry["hand_scores"]
    a_side = entry["sides"][a_seats[0]]
    a_score = b_score = None
    diff = 0
    if scores is not None:
        a_score, b_score = scores[a_side]["total"], scores[1 - a_side]["total"]
        diff = a_score - b_score
    return GameRow(
        **common,
        a_score=a_score,
        b_score=b_score,
        score_diff=diff,
        a_points=1.0 if diff > 0 else 0.0 if diff < 0 else 0.5,
        end_reason=entry["end_reason"],
        turns=int(entry["turns"]),
        actions=len(entry["actions"]),
    )


# ---------------------------------------------------------------------- ratings
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
class PairStats:
    """Row participant against column participant, over their games."""

    row: str
    col: str
    games: int
    deals: int
    wins: int
    draws: int
    losses: int
    win_rate: float
    win_rate_ci: tuple[float, float]
    mean_diff: float
    mean_diff_ci: tuple[float, float]
    forfeits_row: int
    forfeits_col: int
    pairing_seed: int | None = None


def pair_stats(rows: Sequence[GameRow], row: str, col: str) -> PairStats:
    """Win rate and mean score difference of ``row`` against ``col`` with the
    intervals of burako-eval: normal approximation over deal pairs."""
    by_deal: dict[int, list[tuple[float, int]]] = defaultdict(list)
    forfeits = {row: 0, col: 0}
    for r in rows:
        if {r.a, r.b} != {row, col}:
            continue
        flip = r.a != row
        pts = 1.0 - r.a_points if flip else r.a_points
        by_deal[r.deal].append((pts, -r.score_diff if flip else r.score_diff))
        if r.forfeit:
            forfeits[r.forfeit] += 1
    games = [g for d in by_deal.values() for g in d]
    win_rate, win_ci = rate_ci([sum(p for p, _ in d) / len(d) for d in by_deal.values()])
    mean_diff, diff_ci = mean_ci([sum(x for _, x in d) / len(d) for d in by_deal.values()])
    return PairStats(
        row=row,
        col=col,
        games=len(games),
        deals=len(by_deal),
        wins=sum(p == 1.0 for p, _ in games),
        draws=sum(p == 0.5 for p, _ in games),
        losses=sum(p == 0.0 for p, _ in games),
        win_rate=win_rate,
        win_rate_ci=win_ci,
        mean_diff=mean_diff,
        mean_diff_ci=diff_ci,
        forfeits_row=forfeits[row],
        forfeits_col=forfeits[col],
    )


# ---------------------------------------------------------------------- reports
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
    rules = load_rules(config.rules)
    done = len(rows)
    anchor = f"{config.anchor} = 0" if config.anchor else "mean = 0"
    lines = [
        f"# Tournament {config.name}",
        "",
        f"- rules **{rules.name}**, {config.players} players; format **{config.format}**"
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
        "below it the mean score difference (row − column).",
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
        "| A | B | games | deals | A W / D / L | A win rate | mean diff A − B | A win rate by seating | void "
        "| truncated | forfeits (A / B) | pairing seed |",
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
            f"| {' / '.join(by_seat)} | {sum(r.end_reason == 'void' for r in mine)} "
            f"| {sum(r.end_reason == 'truncated' for r in mine)} | {s.forfeits_row} / {s.forfeits_col} | {p.seed} |"
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


# ---------------------------------------------------------------------- the run
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
    _prepare_folder(config, out, fresh)
    rules = load_rules(config.rules)
    pairings = make_pairings(config)
    jobs = schedule(config, pairings)
    order = {job.key: k for k, job in enumerate(jobs)}
    pairing_of = {(p.a.name, p.b.name): p.index for p in pairings}
    by_names = {(p.a.name, p.b.name): p for p in pairings}

    records = _read_journal(out / RECORDS, is_record=True)
    forfeit_entries = _read_journal(out / FORFEITS, is_record=False)
    done: dict[tuple[str, str, int, int], dict[str, Any]] = {}
    for name, entries in ((RECORDS, records), (FORFEITS, forfeit_entries)):
        for entry in entries:
            key = _entry_key(entry)
            if key not in order:
                raise TournamentError(
                    f"{out} holds game {key} (A, B, deal, seating), which this config does not schedule "
                    "(fewer games per pairing, or another format?); choose another 'out' or pass --fresh"
                )
            _check_entry(entry, config, by_names, str(out / name))
            done.setdefault(key, entry)
    # only now, with nothing refused, does the folder take this run's config
    (out / "config.yaml").write_text(
        yaml.safe_dump(config.to_dict(), sort_keys=False, allow_unicode=True), encoding="utf-8"
    )
    pending = [job for job in jobs if job.key not in done]
    size = _chunk_size(config, len(pending))
    tasks = [
        _Task(rules, config.players, config.seed, tuple(pending[i : i + size]), config.move_time_limit)
        for i in range(0, len(pending), size)
    ]
    played = 0
    game_seconds: dict[tuple[str, str, int, int], float] = {}
    start = time.perf_counter()
    timings_path = out / "timings.csv"
    new_timings = not timings_path.exists()
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
    _rewrite_sorted(out / RECORDS, [e for e in entries if "forfeit" not in e["meta"]], order)
    _rewrite_sorted(out / FORFEITS, [e for e in entries if "forfeit" in e["meta"]], order)
    rows = sorted(
        (row_from_entry(e, pairing_of[_entry_key(e)[:2]]) for e in entries),
        key=lambda r: (r.pairing, r.deal, r.seating),
    )
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
    (out / "results.csv").write_text(results_csv(rows), encoding="utf-8")
    (out / "leaderboard.csv").write_text(leaderboard_csv(table), encoding="utf-8")
    (out / "crosstable.csv").write_text(crosstable_csv(pairs), encoding="utf-8")
    (out / "leaderboard.md").write_text(leaderboard_md(config, table, pairs, rows, len(jobs)), encoding="utf-8")
    plot_ratings(table, out / "ratings.png", f"{config.name}: {load_rules(config.rules).name}, {config.players}p")
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


# ---------------------------------------------------------------------- command line
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="burako-tournament", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", required=True, help="tournament YAML file")
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help="override a config key"
    )
    parser.add_argument("--max-games", type=int, default=None, help="stop after this many new games (resumable)")
    parser.add_argument("--fresh", action="store_true", help="delete the run folder's previous games first")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # `kill` (SIGTERM) stops a background run as Ctrl-C does: workers are
    # stopped, finished games are on disk, and the same command resumes
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _interrupt) if in_main_thread else None
    try:
        config = load_config(args.config, args.overrides)
        result = run_tournament(config, progress=not args.no_progress, max_games=args.max_games, fresh=args.fresh)
    except TournamentError as exc:
        print(f"burako-tournament: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("burako-tournament: interrupted; run the same command again to resume", file=sys.stderr)
        return 130
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)
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
