"""One set of settings for the search agents: ``ismcts`` (:mod:`agents.search`),
``fast_ismcts`` (:mod:`agents.fast_search`) and ``neural_ismcts``
(:mod:`agents.neural_search`).

:class:`SearchSettings` is the budget (``simulations``, or ``time_per_move``
seconds), the exploration constant (UCB's for the ISMCTS agents, PUCT's
``c_puct`` for the neural one), and the tree and rollout options. Each agent
declares its own defaults and the fields it reads; an option it does not
read is a clear error rather than silently ignored. The agents take the
settings as keywords (``make_agent("ismcts", simulations=200)``, the
``options:`` of a tournament participant) or whole (``settings=``).

Renamed: ``seconds`` (the ``ismcts`` budget) is ``time_per_move``, as for the
other agents, and the neural agent's ``c_puct`` is ``exploration``; the old
names still work for now, with a :class:`DeprecationWarning`.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: old option names -> their names in SearchSettings
DEPRECATED_NAMES: dict[str, str] = {"seconds": "time_per_move", "c_puct": "exploration"}


@dataclass(frozen=True)
class SearchSettings:
    """The search agents' options (module docstring); checked on construction."""

    #: simulations per decision (ISMCTS: whole rounds of one per root candidate, at least one round;
    #: neural: leaves evaluated by the network)
    simulations: int = 64
    #: seconds per decision instead of a simulation count (at least one round or batch); None: use ``simulations``
    time_per_move: float | None = None
    #: exploration constant: UCB1's (ISMCTS agents) or PUCT's c_puct (neural)
    exploration: float = 0.7
    #: turns simulated beyond the decision before the position is evaluated
    depth: int = 4
    #: cap on the actions of one rollout
    max_rollout_actions: int = 80
    #: root candidates: the root policy's best this many
    root_actions: int = 6
    #: the searching seat's candidates at deeper nodes
    tree_actions: int = 3
    #: rollout policy of the readable ISMCTS (a name of agents.search.ROLLOUT_POLICIES)
    rollout: str = "planner"
    #: value units: a side's evaluation lead over the others, divided by this, is its value (clipped to ±3)
    value_scale: float = 300.0
    #: points another root candidate must beat the policy's own choice by
    margin: float = 10.0

    def __post_init__(self) -> None:
        def check(ok: bool, name: str, need: str) -> None:
            if not ok:
                raise ValueError(f"{name} must be {need}, got {getattr(self, name)!r}")

        for name in ("simulations", "depth", "root_actions", "tree_actions", "max_rollout_actions"):
            value = getattr(self, name)
            least = 0 if name == "max_rollout_actions" else 1
            check(_whole(value) and value >= least, name, f"a whole number >= {least}")
        for name in ("exploration", "value_scale", "margin"):
            value = getattr(self, name)
            check(_number(value) and math.isfinite(value), name, "a finite number")
            object.__setattr__(self, name, float(value))  # one numeric type for the compiled kernels
        check(self.exploration >= 0, "exploration", ">= 0")
        check(self.value_scale > 0, "value_scale", "> 0")
        t = self.time_per_move
        check(t is None or (_number(t) and math.isfinite(t) and t > 0), "time_per_move", "> 0 seconds or None")
        check(isinstance(self.rollout, str), "rollout", "a rollout policy's name")

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def for_agent(
        cls,
        agent: str,
        defaults: SearchSettings,
        uses: Iterable[str],
        settings: SearchSettings | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> SearchSettings:
        """An agent's settings: ``settings`` (or the agent's ``defaults``)
        with ``options`` changed. Old names warn (:data:`DEPRECATED_NAMES`);
        a name that is no setting, or one the agent does not read, is a
        TypeError that names it; a bad value a ValueError."""
        base = defaults if settings is None else settings
        if not isinstance(base, SearchSettings):
            raise TypeError(f"{agent}: settings must be a SearchSettings, got {type(base).__name__}")
        changes = dict(options or {})
        for old, new in DEPRECATED_NAMES.items():
            if old in changes:
                if new in changes:
                    raise TypeError(f"{agent}: give {new}= only ({old}= is its deprecated name)")
                warnings.warn(f"{agent}: {old}= is deprecated, use {new}=", DeprecationWarning, stacklevel=3)
                changes[new] = changes.pop(old)
        used = set(uses)
        if settings is not None:  # a whole settings object: a field the agent does not read must be left as is
            unread = [f for f in cls.field_names() if f not in used and getattr(settings, f) != getattr(defaults, f)]
            if unread:
                raise TypeError(
                    f"{agent} does not use the search setting(s) {', '.join(unread)} of the settings given; "
                    f"it uses: {', '.join(sorted(used))}"
                )
        for name in changes:
            if name not in cls.field_names():
                raise TypeError(f"{agent}: unknown option {name!r}; its search settings: {', '.join(sorted(used))}")
            if name not in used:
                raise TypeError(f"{agent} does not use the search setting {name!r}; it uses: {', '.join(sorted(used))}")
        return dataclasses.replace(base, **changes) if changes else base


def _whole(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


__all__ = ["DEPRECATED_NAMES", "SearchSettings"]
