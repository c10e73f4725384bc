"""A tournament's config: the YAML keys and their defaults, ``--set``
overrides, participants, and every check made before a game is played
(the keys are documented in :mod:`training.tournament`)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.options import split_assignment, yaml_value
from burako_env.rules import RulesError
from burako_env.safe_yaml import YamlInputError, load_yaml, not_a_file, read_text_file, short_repr
from training.config_fields import FieldError, as_float, as_int, as_str
from training.duplicate import AgentSpec
from training.games import GAMES, check_agent_game, check_duplicate_players, game_and_rules, load_game_rules

FORMATS = ("round_robin", "gauntlet")
BACKENDS = ("inprocess", "pool", "ray")
DEFAULTS: dict[str, Any] = {
    "name": "tournament",
    "game": None,
    "rules": None,
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
        participant = cls.of(data.get("name") or data["agent"], data["agent"], options)
        try:
            participant.spec()  # the options as an agent takes them (no 'seed': each game gives its own)
        except ValueError as exc:
            raise TournamentError(f"participants.{index}.options: {exc}") from None
        return participant

    @property
    def label(self) -> str:
        """The agent and its options, as in burako-eval: ``ismcts(simulations=100)``."""
        return AgentSpec(self.agent, self.options).label

    def spec(self) -> AgentSpec:
        """The evaluation's AgentSpec: built by name through :mod:`agents.registry`
        (registry names, ``module:Class``, plug-ins: one resolution path), or by ``factory``."""
        return AgentSpec(self.agent, self.options, self.factory)

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
    #: "burako" or "rummy" (training.games); from_dict derives it from the rules when not given
    game: str = "burako"
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
            game = None if merged["game"] is None else as_str("game", merged["game"])
            rules = None if merged["rules"] is None else _rules_value(merged["rules"])
            try:
                game, rules = game_and_rules(game, rules, "rules", "game")
            except ValueError as exc:
                raise TournamentError(str(exc)) from exc
            ray_group, ratings = merged["ray"], merged["ratings"]
            config = cls(
                participants=participants,
                name=as_str("name", merged["name"]),
                game=game,
                rules=rules,
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
        if self.game not in GAMES:
            raise TournamentError(f"unknown game {self.game!r}; games: {', '.join(GAMES)}")
        for p in self.participants:
            if p.factory is None:
                try:
                    check_agent_game(p.agent, self.game)
                except ValueError as exc:
                    raise TournamentError(f"participant {p.name!r}: {exc}") from exc
        try:
            check_duplicate_players(self.game, self.game_rules(), self.players)
        except (RulesError, ValueError) as exc:
            raise TournamentError(str(exc)) from exc

    def game_rules(self) -> Any:
        """The rules object of the game (``Rules``, or ``RummyRules`` for Rummy). Rules of the
        other game (a Rummy YAML file or mapping without ``game: rummy``) are named as such."""
        try:
            return load_game_rules(self.game, self.rules)
        except RulesError as exc:
            other = next(g for g in GAMES if g != self.game)
            try:
                load_game_rules(other, self.rules)
            except RulesError:
                raise TournamentError(str(exc)) from exc
            raise TournamentError(f"the rules {short_repr(self.rules)} are {other} rules: set game: {other}") from exc

    def to_dict(self) -> dict[str, Any]:
        """The config as YAML data (what ``config.yaml`` holds)."""
        return {
            "name": self.name,
            "game": self.game,
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
            "game": self.game,
            "rules": self.game_rules().to_dict(),
            "players": self.players,
            "seed": self.seed,
            "participants": [p.to_dict() for p in self.participants],
        }

    def agent_files(self) -> dict[str, dict[str, str | None]]:
        """Per participant that reads files (a policy's checkpoint, given or the shipped default),
        each file's SHA-256 (None: unreadable). The run folder keeps it beside ``config.yaml``: a
        checkpoint replaced under the same path changes the games, not the config."""
        files: dict[str, dict[str, str | None]] = {}
        for p in self.participants:
            try:
                read = p.spec().files()
            except ValueError as exc:
                raise TournamentError(f"participant {p.name!r}: {exc}") from exc
            if read:
                files[p.name] = read
        return files


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
    try:
        key, text = split_assignment(assignment, "--set")
        value = yaml_value(text, f"--set {short_repr(key)}")
    except ValueError as exc:
        raise TournamentError(str(exc)) from exc
    parts = key.split(".")
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
    if (why := not_a_file(path)) is not None:
        raise TournamentError(f"config file {str(path)!r} {why}")
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
