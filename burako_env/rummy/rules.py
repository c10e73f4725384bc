"""Rummy table rules (docs/rules.md Part 3): the fields the rule sheets vary, as one immutable value.

Presets are YAML files in ``configs/rules/rummy/`` (installed with the Burako
presets as ``burako_env.presets``, in its ``rummy`` folder), kept apart from
Burako's presets because their fields differ. :func:`load_rummy_rules`
accepts a preset name, a YAML path, a mapping or a :class:`RummyRules`, plus
overrides; every value is validated and a bad one raises
:class:`~burako_env.rules.RulesError` naming the field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from burako_env.rules import (
    MAX_POINTS,
    RulesError,
    check_player_count,
    int_problem,
    label_problem,
    players_problem,
    with_plain_values,
)
from burako_env.safe_yaml import YamlInputError, load_yaml, read_text_file

#: Rummy is always played with the 106 tiles (R1)
NUM_TILES = 106
#: bounds that keep every match total inside the observation's box (its hand_number below 106, its
#: match scores below 10,000 x 100 points: 100 hands of 2 jokers and 104 tiles of 13 cost 335,200)
MAX_HANDS_PER_MATCH = 100
MAX_JOKER_PENALTY = 1_000


@dataclass(frozen=True)
class RummyRules:
    """One Rummy table's rules; each field names the rule of docs/rules.md it carries."""

    name: str = "custom"
    source: str = ""
    #: player counts (R2)
    players: tuple[int, ...] = (2, 3, 4)
    #: tiles dealt to each player (R2)
    hand_size: int = 14
    #: points a player's first play must total, from his hand alone (R5)
    first_play_minimum: int = 30
    #: what a joker left in a hand costs (R10)
    joker_penalty: int = 50
    #: hands in a match (R10)
    hands_per_match: int = 4

    def __post_init__(self) -> None:
        with_plain_values(self)
        _validate(self)

    def check_players(self, num_players: int) -> None:
        check_player_count(num_players, self.players, self.name)

    def stock_size(self, num_players: int) -> int:
        """Tiles in the stock after the deal and the closing tile (R2)."""
        return NUM_TILES - num_players * self.hand_size - 1

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["players"] = list(self.players)
        return out


FIELD_NAMES = tuple(f.name for f in dataclasses.fields(RummyRules))


def _fail(name: str, reason: str) -> None:
    raise RulesError(f"rummy rules field {name!r}: {reason}")


def _check(name: str, problem: str | None) -> None:
    if problem:
        _fail(name, problem)


def _validate(rules: RummyRules) -> None:
    _check("name", label_problem(rules.name, empty_ok=False))
    _check("source", label_problem(rules.source, empty_ok=True))
    _check("players", players_problem(rules.players))
    _check("hand_size", int_problem(rules.hand_size, 1, NUM_TILES))
    _check("first_play_minimum", int_problem(rules.first_play_minimum, 0, MAX_POINTS))
    # the observation's bounds (burako_env/rummy/observation.py) hold a match of at most this many hands,
    # each costing a seat at most its hand's tiles, jokers at joker_penalty
    _check("joker_penalty", int_problem(rules.joker_penalty, 0, MAX_JOKER_PENALTY))
    _check("hands_per_match", int_problem(rules.hands_per_match, 1, MAX_HANDS_PER_MATCH))
    for count in rules.players:
        if rules.stock_size(count) < 0:
            _fail("hand_size", f"cannot deal {count} hands of {rules.hand_size} and a closing tile from {NUM_TILES}")


def _preset_folder() -> Path:
    """configs/rules/rummy of this checkout, else of the installed presets package."""
    checkout = Path(__file__).resolve().parents[2] / "configs" / "rules" / "rummy"
    if checkout.is_dir():
        return checkout
    return Path(str(resources.files("burako_env.presets").joinpath("rummy")))


def rummy_preset_names() -> list[str]:
    return sorted(p.stem for p in _preset_folder().glob("*.yaml"))


def _from_mapping(data: Mapping[str, Any]) -> RummyRules:
    unknown = sorted(set(data) - set(FIELD_NAMES))
    if unknown:
        raise RulesError(f"unknown rummy rules field(s) {unknown}; known fields: {', '.join(FIELD_NAMES)}")
    merged = dict(data)
    if "players" in merged:
        if not isinstance(merged["players"], (list, tuple)):
            _fail("players", f"expected a list of player counts, got {merged['players']!r}")
        merged["players"] = tuple(merged["players"])
    return RummyRules(**merged)


def load_rummy_rules(
    rules: str | Path | Mapping[str, Any] | RummyRules = "rummy", overrides: Mapping[str, Any] | None = None
) -> RummyRules:
    """A preset name, a YAML path, a mapping or a RummyRules, with optional overrides."""
    if isinstance(rules, RummyRules):
        result = rules
    elif isinstance(rules, Mapping):
        result = _from_mapping(rules)
    elif isinstance(rules, (str, Path)):
        text = str(rules)
        if isinstance(rules, Path) or text.endswith((".yaml", ".yml")) or "/" in text:
            path = Path(rules)
        else:
            names = rummy_preset_names()
            if text not in names:
                raise RulesError(f"unknown rummy rules preset {text!r}; presets: {', '.join(names)}")
            path = _preset_folder() / f"{text}.yaml"
        if not path.is_file():
            raise RulesError(f"rules file {str(path)!r} does not exist")
        try:  # the same limits as Burako's rules files (alias bombs, size, depth, UTF-8)
            data = load_yaml(read_text_file(path, "rummy rules file"), f"rummy rules file {str(path)!r}")
        except YamlInputError as exc:
            raise RulesError(str(exc)) from exc
        if not isinstance(data, dict):
            raise RulesError(f"{path}: expected a mapping of rule fields")
        result = _from_mapping(data)
    else:
        raise RulesError(f"rules must be a preset name, a YAML path, a mapping or a RummyRules, got {rules!r}")
    if overrides:
        result = _from_mapping({**result.to_dict(), **dict(overrides)})
    return result
