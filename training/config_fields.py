"""Config values checked against their field's type before anything runs.

Training (``PPOConfig``) and tournament configs come from YAML files and
``--set key=value`` strings. YAML 1.1 reads ``1e-3`` (no dot) as a *string*,
so a float field accepts a numeric string and parses it; everything else must
already have the field's type. Nothing is coerced silently: ``2.5`` for an
integer field, ``abc`` or ``fast`` for a number, ``"yes"`` for a flag, NaN or
infinity anywhere are refused with a message that names the field.

Accepted per annotation:

| annotation      | accepts                                                          |
|-----------------|------------------------------------------------------------------|
| ``int``         | an int; a float or numeric string with an integral value (``1e6``) |
| ``float``       | an int or float; a numeric string (``1e-3``); finite only        |
| ``bool``        | true / false only                                                |
| ``str``         | a string                                                         |
| ``list[str]``   | a list of strings                                                |
| ``dict[K, V]``  | a mapping whose keys fit K and values fit V                      |
| ``X | None``    | None (YAML ``null``) or what X accepts                           |
"""

from __future__ import annotations

import math
import types
import typing
from typing import Any

import numpy as np

from burako_env.safe_yaml import short_repr


class FieldError(ValueError):
    """A config value does not fit its field; the message names the field."""


def _number(name: str, value: Any, kind: str) -> float | int:
    if isinstance(value, (bool, np.bool_)):
        raise FieldError(f"{name}: expected {kind}, got a boolean {value!r}")
    if isinstance(value, str):
        try:
            number: float | int = float(value.strip())
        except ValueError:
            raise FieldError(f"{name}: expected {kind}, got the text {short_repr(value)}") from None
    elif isinstance(value, (int, np.integer)):
        number = int(value)
    elif isinstance(value, (float, np.floating)):
        number = float(value)
    else:
        raise FieldError(f"{name}: expected {kind}, got {type(value).__name__} {short_repr(value)}")
    if isinstance(number, float) and not math.isfinite(number):
        raise FieldError(f"{name}: expected a finite number, got {short_repr(value)}")
    return number


def as_int(name: str, value: Any) -> int:
    number = _number(name, value, "an integer")
    if isinstance(number, float):
        if not number.is_integer():
            raise FieldError(f"{name}: expected an integer, got {short_repr(value)}")
        number = int(number)
    return number


def as_float(name: str, value: Any) -> float:
    return float(_number(name, value, "a number"))


def as_bool(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise FieldError(f"{name}: expected true or false, got {type(value).__name__} {short_repr(value)}")
    return bool(value)


def as_str(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise FieldError(f"{name}: expected a string, got {type(value).__name__} {short_repr(value)}")
    return value


def check_value(name: str, value: Any, annotation: Any) -> Any:
    """``value`` as the field's type (see the module docstring), or a :class:`FieldError`."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(annotation)
        if value is None and type(None) in options:
            return None
        rest = [a for a in options if a is not type(None)]
        if len(rest) != 1:  # pragma: no cover - configs use X | None only
            raise TypeError(f"unsupported annotation {annotation}")
        return check_value(name, value, rest[0])
    if origin is list:
        (item,) = typing.get_args(annotation)
        if not isinstance(value, (list, tuple)):
            raise FieldError(f"{name}: expected a list, got {type(value).__name__} {short_repr(value)}")
        return [check_value(f"{name}[{i}]", v, item) for i, v in enumerate(value)]
    if origin is dict:
        key_type, value_type = typing.get_args(annotation)
        if not isinstance(value, dict):
            raise FieldError(f"{name}: expected a mapping, got {type(value).__name__} {short_repr(value)}")
        return {
            check_value(f"{name} key", k, key_type): check_value(f"{name}.{k}", v, value_type) for k, v in value.items()
        }
    checks = {int: as_int, float: as_float, bool: as_bool, str: as_str}
    if annotation in checks:
        return checks[annotation](name, value)
    if annotation is Any:
        return value
    raise TypeError(f"unsupported annotation {annotation} for {name}")  # pragma: no cover


def check_dataclass_fields(obj: Any) -> list[str]:
    """Check and normalise every field of a dataclass instance in place (it may
    be frozen); returns the problems, one per bad field."""
    import dataclasses

    hints = typing.get_type_hints(type(obj))
    problems = []
    for f in dataclasses.fields(obj):
        try:
            value = check_value(f.name, getattr(obj, f.name), hints[f.name])
        except FieldError as exc:
            problems.append(str(exc))
            continue
        object.__setattr__(obj, f.name, value)
    return problems
