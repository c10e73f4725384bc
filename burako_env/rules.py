"""The rules object: every table rule of docs/rules.md Part 2 as one immutable value.

Presets are YAML files in ``configs/rules/`` (installed as the package
``burako_env.presets``). :func:`load_rules` accepts a preset name, a path to a
YAML file, a mapping or a :class:`Rules`, plus overrides (V5). Every value is
validated: a bad one raises :class:`RulesError` naming the field and the
reason, never a silent default.

The engine reads every rule from this object; no code branches on a preset's
name.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from burako_env.safe_yaml import YamlInputError, is_integer, load_yaml, not_a_file, read_text_file, short_repr
from burako_env.tiles import JOKER, KIND_NUMBER_LIST, NUM_KINDS


class RulesError(ValueError):
    """A rules file or value is malformed; the message names the field."""


TILE_SETS = ("tiles", "cards")


def tile_set_counts(tile_set: str) -> np.ndarray:
    """Count of each tile kind in a full set: two of each numbered kind, and two jokers with
    "tiles" (B1) or none with "cards" (V2). The one place the set's make-up is written."""
    if tile_set not in TILE_SETS:
        raise RulesError(f"tile_set: expected one of {list(TILE_SETS)}, got {short_repr(tile_set)}")
    counts = np.full(NUM_KINDS, 2, dtype=np.int64)
    counts[JOKER] = 0 if tile_set == "cards" else 2
    return counts


TILE_VALUE_KEYS = ("joker", "two", "ace", "high", "low")
CANASTA_BONUS_KEYS = ("clean", "dirty", "real", "ace_to_ace")


@dataclass(frozen=True)
class Rules:
    """One table's rules. Field docs say which rule of docs/rules.md they carry."""

    name: str = "custom"
    #: the rule sheet the values come from (informative)
    source: str = ""
    #: "tiles": 104 numbered tiles + 2 jokers (B1); "cards": two 52-card decks, no jokers (V2)
    tile_set: str = "tiles"
    #: player counts this table can be played with (B3, V4)
    players: tuple[int, ...] = (2, 4)
    #: tiles dealt to each player, per player count (B4)
    hand_size: Mapping[int, int] = field(default_factory=lambda: {2: 12, 4: 11})
    #: tiles in each muerto (B4)
    muerto_size: int = 11
    #: whether sets (piernas) may be melded (B7); False: sequences only
    sets_allowed: bool = True
    #: whether the naturals of a set must all have different colours
    set_colours_distinct: bool = False
    #: wilds a meld may hold (B8); the engine supports 1
    wilds_per_meld: int = 1
    #: tile values (B25): joker, any 2, the 1, 8..13 (high), 3..7 (low)
    tile_values: Mapping[str, int] = field(
        default_factory=lambda: {"joker": 50, "two": 20, "ace": 15, "high": 10, "low": 5}
    )
    #: canasta bonuses (B14, V1): clean, dirty, real (13-tile clean run), ace_to_ace
    #: (14-tile clean run 1..1); 0 means no special bonus (the clean bonus applies)
    canasta_bonus: Mapping[str, int] = field(
        default_factory=lambda: {"clean": 200, "dirty": 100, "real": 0, "ace_to_ace": 0}
    )
    #: to close, a side needs a clean canasta (not just any canasta) (B22)
    close_requires_clean_canasta: bool = False
    #: bonus for the side that closes (B26)
    closing_bonus: int = 100
    #: penalty for a side that never took its muerto (B26)
    muerto_penalty: int = 100
    #: the top tile of a taken discard pile must be melded that turn (V3)
    pile_top_must_be_melded: bool = False
    #: an indirect muerto not yet played when the hand ends costs -100 as if
    #: not taken, and its tiles are not counted (Part 2 table)
    unplayed_indirect_muerto_counts_as_untaken: bool = False
    #: mano's privilege on the first draw of a hand (B17)
    mano_privilege: bool = True
    #: match target (B28)
    target: int = 3000
    #: turns after which a hand is truncated (it can cycle for ever otherwise)
    max_turns: int = 400

    # ------------------------------------------------------------------ derived
    @property
    def cards(self) -> bool:
        """Whether the game is played with cards (render and describe as cards)."""
        return self.tile_set == "cards"

    @property
    def num_jokers(self) -> int:
        return int(tile_set_counts(self.tile_set)[JOKER])

    def num_sides(self, num_players: int) -> int:
        """Partnerships with 4 players (B3), individual sides otherwise (V4)."""
        return 2 if num_players == 4 else num_players

    def full_counts(self) -> np.ndarray:
        """Count of each tile kind in the full set (B1, V2)."""
        return tile_set_counts(self.tile_set)

    def tile_value_array(self) -> np.ndarray:
        """Value of each tile kind (B25)."""
        values = np.zeros(NUM_KINDS, dtype=np.int64)
        for kind in range(NUM_KINDS):
            values[kind] = self.value_of(kind)
        return values

    def value_of(self, kind: int) -> int:
        if kind == JOKER:
            return self.tile_values["joker"]
        number = KIND_NUMBER_LIST[kind]
        if number == 2:
            return self.tile_values["two"]
        if number == 1:
            return self.tile_values["ace"]
        return self.tile_values["high"] if number >= 8 else self.tile_values["low"]

    def stock_size(self, num_players: int) -> int:
        """Tiles left in the stock after the deal."""
        total = int(self.full_counts().sum())
        return total - num_players * self.hand_size[num_players] - self.num_sides(num_players) * self.muerto_size

    def check_players(self, num_players: int) -> None:
        check_player_count(num_players, self.players, self.name)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (YAML/JSON friendly)."""
        out = dataclasses.asdict(self)
        out["players"] = list(self.players)
        out["hand_size"] = {int(k): int(v) for k, v in self.hand_size.items()}
        out["tile_values"] = dict(self.tile_values)
        out["canasta_bonus"] = dict(self.canasta_bonus)
        return out

    def __post_init__(self) -> None:
        with_plain_values(self)
        _validate(self)
        # computed once: caches keyed by Rules (tables_for) hash it on every call
        object.__setattr__(self, "_hash", hash(repr(sorted(self.to_dict().items(), key=lambda kv: kv[0]))))

    def __hash__(self) -> int:
        return self._hash  # type: ignore[attr-defined]


def plain_value(value: Any) -> Any:
    """``value`` with numpy scalars as Python's own (``np.int64(3)`` -> ``3``), inside dicts, lists
    and tuples too."""
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, dict):
        return {plain_value(k): plain_value(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(plain_value(v) for v in value)
    return value


def with_plain_values(rules: Any) -> None:
    """Every field of a frozen rules dataclass with plain Python values. Values from a numpy sweep
    (``rule_overrides={"target": np.int64(3000)}``) stayed numpy: equal rules hashed differently (each
    built its own compiled tables) and ``to_dict()`` no longer wrote as JSON (records, checkpoints)."""
    for entry in dataclasses.fields(rules):
        object.__setattr__(rules, entry.name, plain_value(getattr(rules, entry.name)))


FIELD_NAMES = tuple(f.name for f in dataclasses.fields(Rules))
#: a hand is cut at max_turns; beyond this it would never end in practice
MAX_TURNS_LIMIT = 1_000_000
#: name and source are labels (the name goes into file and folder names)
MAX_LABEL_CHARS = 200
#: how deep ``preset:`` may chain files (a file naming itself is refused at once)
MAX_PRESET_DEPTH = 8
#: a tile's value, a bonus or a penalty: far above any preset's (the readable engine plays values beyond
#: the compiled core's int32), and small enough that every hand's and match's score fits the engines'
#: 64-bit integers (a record's rules are read from untrusted files: 2**63 raised OverflowError in replay)
MAX_POINTS = 10**12
#: a match's target (B28)
MAX_TARGET = 10**15


def check_player_count(num_players: Any, allowed: tuple[int, ...], rules_name: str) -> None:
    """``num_players`` must be one of the rules' player counts (both games' rules call this)."""
    if not is_integer(num_players):
        raise RulesError(
            f"num_players must be an integer ({', '.join(map(str, allowed))}), got "
            f"{type(num_players).__name__} {short_repr(num_players)}"
        )
    if num_players not in allowed:
        raise RulesError(
            f"num_players={num_players} is not allowed by rules {rules_name!r}: "
            f"allowed player counts are {list(allowed)}"
        )


def int_problem(value: Any, low: int, high: int | None = None) -> str | None:
    """Why ``value`` is not an integer in ``low..high`` (None: it is); both games' rules use it."""
    if not is_integer(value):
        return f"expected an integer, got {type(value).__name__} {short_repr(value)}"
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"between {low} and {high:,}"
        return f"must be {bound}, got {short_repr(value)}"
    return None


def label_problem(value: Any, empty_ok: bool) -> str | None:
    """Why ``value`` is not a one-line label (a rules name goes into file and folder names)."""
    if not isinstance(value, str):
        return f"expected a string, got {type(value).__name__} {short_repr(value)}"
    if not value and not empty_ok:
        return "expected a non-empty string"
    if len(value) > MAX_LABEL_CHARS or any(ord(c) < 32 for c in value):
        return f"expected one line of at most {MAX_LABEL_CHARS} characters, got {short_repr(value)}"
    return None


def players_problem(players: Any) -> str | None:
    """Why ``players`` is not a non-empty tuple of distinct player counts 2..4."""
    if not isinstance(players, tuple) or not players:
        return "expected a non-empty list of player counts"
    for count in players:
        problem = int_problem(count, 2, 4)
        if problem:
            return problem
    if len(set(players)) != len(players):
        return f"expected distinct player counts, got {list(players)}"
    return None


def _fail(field_name: str, reason: str) -> None:
    raise RulesError(f"rules field {field_name!r}: {reason}")


def _check_int(name: str, value: Any, low: int, high: int | None = None) -> None:
    problem = int_problem(value, low, high)
    if problem:
        _fail(name, problem)


def _check_bool(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        _fail(name, f"expected true or false, got {type(value).__name__} {short_repr(value)}")


def _check_label(name: str, value: Any, empty_ok: bool) -> None:
    problem = label_problem(value, empty_ok)
    if problem:
        _fail(name, problem)


def _validate(rules: Rules) -> None:
    _check_label("name", rules.name, empty_ok=False)
    _check_label("source", rules.source, empty_ok=True)
    if not isinstance(rules.tile_set, str) or rules.tile_set not in TILE_SETS:
        _fail("tile_set", f"expected one of {list(TILE_SETS)}, got {short_repr(rules.tile_set)}")
    problem = players_problem(rules.players)
    if problem:
        _fail("players", problem)
    if not isinstance(rules.hand_size, Mapping):
        _fail("hand_size", f"expected a mapping player count -> tiles, got {short_repr(rules.hand_size)}")
    for key, value in rules.hand_size.items():
        _check_int("hand_size", key, 2, 4)
        _check_int(f"hand_size[{key}]", value, 1)
    missing = [n for n in rules.players if n not in rules.hand_size]
    if missing:
        _fail("hand_size", f"no hand size for player count(s) {missing}")
    _check_int("muerto_size", rules.muerto_size, 1)
    if rules.muerto_size < 2:  # E2: found in review, 2026-12-06
        _fail(
            "muerto_size",
            "must be at least 2: melding the whole hand takes the muerto (B20), and whether one face-down "
            "tile could then close the hand (B23) would decide that play's legality from a tile the player "
            "cannot see (E2)",
        )
    for name in (
        "sets_allowed",
        "set_colours_distinct",
        "close_requires_clean_canasta",
        "pile_top_must_be_melded",
        "unplayed_indirect_muerto_counts_as_untaken",
        "mano_privilege",
    ):
        _check_bool(name, getattr(rules, name))
    _check_int("wilds_per_meld", rules.wilds_per_meld, 1, 1)
    _check_mapping("tile_values", rules.tile_values, TILE_VALUE_KEYS)
    _check_mapping("canasta_bonus", rules.canasta_bonus, CANASTA_BONUS_KEYS)
    _check_int("closing_bonus", rules.closing_bonus, 0, MAX_POINTS)
    _check_int("muerto_penalty", rules.muerto_penalty, 0, MAX_POINTS)
    _check_int("target", rules.target, 1, MAX_TARGET)
    _check_int("max_turns", rules.max_turns, 1, MAX_TURNS_LIMIT)
    total = int(tile_set_counts(rules.tile_set).sum())
    for count in rules.players:
        sides = 2 if count == 4 else count
        dealt = count * rules.hand_size[count] + sides * rules.muerto_size
        need = 2 if rules.mano_privilege else 1
        if total - dealt < need:
            _fail(
                "hand_size",
                f"cannot deal {count} hands of {rules.hand_size[count]} and {sides} muertos of "
                f"{rules.muerto_size} from {total} tiles (the stock needs at least {need})",
            )


def _check_mapping(name: str, value: Any, keys: tuple[str, ...]) -> None:
    if not isinstance(value, Mapping):
        _fail(name, f"expected a mapping with keys {list(keys)}, got {short_repr(value)}")
    unknown = sorted(map(str, set(value) - set(keys)))
    if unknown:
        _fail(name, f"unknown key(s) {short_repr(unknown)}; expected {list(keys)}")
    missing = [k for k in keys if k not in value]
    if missing:
        _fail(name, f"missing key(s) {missing}")
    for key in keys:
        _check_int(f"{name}.{key}", value[key], 0, MAX_POINTS)


def preset_names() -> list[str]:
    """Names of the shipped presets."""
    folder = resources.files("burako_env.presets")
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))


def _read_yaml(text: str, where: str) -> dict[str, Any]:
    try:
        data = load_yaml(text, where)
    except YamlInputError as exc:
        raise RulesError(str(exc)) from exc
    if not isinstance(data, dict):
        raise RulesError(f"{where}: expected a mapping of rule fields, got {type(data).__name__}")
    return data


def _merge(base: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(overrides, Mapping):
        raise RulesError(
            f"rule overrides must be a mapping of rules fields to values, got {type(overrides).__name__} "
            f"{short_repr(overrides)}"
        )
    merged = dict(base)
    for key, value in overrides.items():
        if key not in FIELD_NAMES:
            raise RulesError(f"unknown rules field {short_repr(key)}; known fields: {', '.join(FIELD_NAMES)}")
        if key in ("tile_values", "canasta_bonus", "hand_size") and isinstance(value, Mapping):
            inner = dict(merged.get(key) or {})
            inner.update(value)
            value = inner
        merged[key] = value
    return merged


def rules_from_dict(data: Mapping[str, Any]) -> Rules:
    """Build a validated :class:`Rules` from plain data. A file may name a
    ``preset`` to start from and override some fields on top of it (V5)."""
    data = dict(data)
    base: dict[str, Any] = {}
    if "preset" in data:
        preset = data.pop("preset")
        if not isinstance(preset, (str, Path)):
            _fail("preset", f"expected a preset name or a YAML path, got {short_repr(preset)}")
        base = load_rules(preset).to_dict()
        base["name"] = data.get("name", f"{preset}*")
    merged = _merge(base, data)
    if "players" in merged:
        if not isinstance(merged["players"], (list, tuple)):
            _fail("players", f"expected a list of player counts, got {short_repr(merged['players'])}")
        merged["players"] = tuple(merged["players"])
    if isinstance(merged.get("hand_size"), Mapping):
        # JSON turns the integer player-count keys into strings: read them back.
        merged["hand_size"] = {
            (int(k) if isinstance(k, str) and k.isdigit() else k): v for k, v in merged["hand_size"].items()
        }
    if "hand_size" in merged and not isinstance(merged["hand_size"], Mapping):
        if isinstance(merged["hand_size"], int) and not isinstance(merged["hand_size"], bool):
            merged["hand_size"] = {n: merged["hand_size"] for n in merged.get("players", (2, 4))}
        else:
            _fail(
                "hand_size",
                f"expected a mapping player count -> tiles, or one integer; got {short_repr(merged['hand_size'])}",
            )
    return Rules(**merged)


_loading = threading.local()


def _load_file(path: Path) -> Rules:
    """A rules YAML file; ``preset:`` inside it may name another file, but not
    one already being loaded (a cycle), and at most MAX_PRESET_DEPTH deep."""
    if (why := not_a_file(path)) is not None:
        raise RulesError(f"rules file {short_repr(str(path), 200)} {why}")
    chain: list[Path] = getattr(_loading, "chain", [])
    resolved = path.resolve()
    if resolved in chain:
        cycle = " -> ".join(str(p) for p in [*chain[chain.index(resolved) :], resolved])
        raise RulesError(f"rules file {str(chain[-1])!r}: 'preset' leads back to a file being loaded ({cycle})")
    if len(chain) >= MAX_PRESET_DEPTH:
        raise RulesError(f"rules file {str(path)!r}: 'preset' chains more than {MAX_PRESET_DEPTH} files deep")
    try:
        text = read_text_file(path, "rules file")
    except YamlInputError as exc:
        raise RulesError(str(exc)) from exc
    _loading.chain = [*chain, resolved]
    try:
        return rules_from_dict(_read_yaml(text, f"rules file {str(path)!r}"))
    finally:
        _loading.chain = chain


def load_rules(
    rules: str | Path | Mapping[str, Any] | Rules = "burako", overrides: Mapping[str, Any] | None = None
) -> Rules:
    """A preset name, a YAML path, a mapping or a Rules, with optional overrides."""
    if isinstance(rules, Rules):
        result = rules
    elif isinstance(rules, Mapping):
        result = rules_from_dict(rules)
    elif isinstance(rules, (str, Path)):
        text_rules = str(rules)
        if text_rules.endswith((".yaml", ".yml")) or "/" in text_rules or isinstance(rules, Path):
            result = _load_file(Path(rules))
        else:
            names = preset_names()
            if text_rules not in names:
                raise RulesError(f"unknown rules preset {short_repr(text_rules)}; presets: {', '.join(names)}")
            text = resources.files("burako_env.presets").joinpath(f"{text_rules}.yaml").read_text(encoding="utf-8")
            result = rules_from_dict(_read_yaml(text, f"preset {text_rules}"))
    else:
        raise RulesError(f"rules must be a preset name, a YAML path, a mapping or a Rules, got {type(rules).__name__}")
    if overrides:
        result = rules_from_dict(_merge(result.to_dict(), overrides))
    return result
