"""``key=value`` options of the command lines: one way to split and read them.

Two kinds of value, one splitting rule (:func:`split_assignment`):

- agent options (``burako-eval --a-opt simulations=200``, ``burako-human
  --opponent-opt``): :func:`parse_options`, each value read by
  :func:`parse_value` (int, float, true/false, none, else the string);
- config overrides (``burako-train --set``, ``burako-tournament --set``):
  :func:`yaml_value`, the value read as YAML through
  :func:`burako_env.safe_yaml.load_yaml` (its size and alias limits), so a
  list or a mapping can be set too. Each command applies the key to its own
  config (flat fields for training, dotted paths for tournaments).

Every malformed option is a ``ValueError`` (a subclass) that names the flag
and the text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from burako_env.safe_yaml import is_integer, load_yaml, short_repr


def split_assignment(text: str, flag: str) -> tuple[str, str]:
    """``"key=value"`` as ``(key, value text)``; the key stripped, never empty."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"{flag}: expected key=value, got {short_repr(text)}")
    return key.strip(), value


def parse_value(text: str) -> Any:
    """An option value: int, float, true/false, none, or the string itself."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text.strip()  # as the key and the other values: "rollout = greedy" is "greedy"


def parse_options(pairs: Sequence[str] | None, flag: str) -> dict[str, Any]:
    """Repeated ``key=value`` agent options as a mapping (a later key wins)."""
    options: dict[str, Any] = {}
    for pair in pairs or ():
        key, value = split_assignment(pair, flag)
        if key == "seed":  # it reached the agent's constructor beside the game's own seed: a TypeError
            raise ValueError(f"{flag}: seed is not an agent option; --seed seeds every game's agents")
        options[key] = parse_value(value)
    return options


def yaml_value(text: str, where: str) -> Any:
    """A ``--set`` value read as YAML (an empty value is null); bad YAML is a ``YamlInputError`` naming ``where``."""
    return load_yaml(text, where) if text.strip() else None


# ---------------------------------------------------------------------- an agent's own checks of its options
def whole_option(name: str, value: Any, low: int) -> int:
    """An agent option that is a whole number >= ``low`` (not a bool, not 2.5), or a ValueError naming it."""
    if not is_integer(value) or value < low:
        raise ValueError(f"{name} must be a whole number >= {low}, got {short_repr(value)}")
    return int(value)


def real_option(name: str, value: Any, low: float, high: float = math.inf, low_open: bool = False) -> float:
    """An agent option that is a finite real number in ``low..high`` (``(low, high]`` with ``low_open``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {short_repr(value)}")
    if value > high or value < low or (low_open and value == low):
        bound = f"{'>' if low_open else '>='} {low}" + ("" if high == math.inf else f" and <= {high}")
        raise ValueError(f"{name} must be {bound}, got {short_repr(value)}")
    return float(value)


def bool_option(name: str, value: Any) -> bool:
    """An agent option that is true or false (the string "no" is not false: it was read as true)."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {short_repr(value)}")
    return value
