"""The compiled core's inputs (docs/architecture.md, "The two engines"):
the kernels read their tables by name, and every ``Rules`` field either
reaches the kernels or is declared irrelevant to them, with a reason.

A ``Rules`` field reaches the kernels in one of two ways (burako_env/fast.py):
as a value of the rule vector (``RV_FIELDS``, read as ``rv[RV_...]``), or
baked into named tables (``RULES_IN_TABLES``: the field, and the
``KernelTables`` arrays built from it). Otherwise it is in
``RULES_NOT_IN_KERNELS`` with the reason the core may ignore it. A new rule
that is in none of these fails here, before it can make the two engines
disagree on some table nobody tested.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from typing import Any

import numpy as np
from numba.core.dispatcher import Dispatcher

from agents import fast_search
from burako_env import fast as F
from burako_env import vector as V
from burako_env.rules import Rules, load_rules, preset_names

#: a different valid value of each field declared in RULES_IN_TABLES or
#: RULES_NOT_IN_KERNELS (on top of ``burako``, 2 players)
ALTERNATIVE: dict[str, Any] = {
    "name": "another table",
    "source": "another sheet",
    "players": [2],
    "tile_set": "cards",
    "sets_allowed": False,
    "set_colours_distinct": True,
    "tile_values": {"joker": 50, "two": 10, "ace": 15, "high": 10, "low": 5},
    "canasta_bonus": {"clean": 200, "dirty": 100, "real": 500, "ace_to_ace": 1000},
    "close_requires_clean_canasta": True,
}


def kernel_sources() -> dict[str, str]:
    """The source of every numba kernel of fast.py, vector.py and the compiled
    search (agents/fast_search.py, which reads the same tables), by name."""
    out = {}
    for module in (F, V, fast_search):
        for name, obj in vars(module).items():
            if isinstance(obj, Dispatcher) and obj.py_func.__module__ == module.__name__:
                out[f"{module.__name__}.{name}"] = inspect.getsource(obj.py_func)
    return out


def read_by(token: str, sources: dict[str, str]) -> list[str]:
    """The kernels whose source holds ``token`` as a whole name."""
    pattern = re.compile(rf"(?<![\w.]){re.escape(token)}(?!\w)")
    return [name for name, src in sources.items() if pattern.search(src)]


def unaccounted_rules_fields(rules_class: type) -> list[str]:
    """Fields of a Rules dataclass neither in the rule vector, nor baked into
    named tables, nor declared irrelevant to the kernels."""
    declared = set(F.RV_FIELDS) | set(F.RULES_IN_TABLES) | set(F.RULES_NOT_IN_KERNELS)
    return [f.name for f in dataclasses.fields(rules_class) if f.name not in declared]


def rv_constant(field: str) -> str:
    """The RV_* index constant of a rule-vector entry."""
    index = F.RV_FIELDS.index(field)
    names = [k for k, v in vars(F).items() if k.startswith("RV_") and k != "RV_FIELDS" and v == index]
    assert len(names) == 1, f"rule-vector entry {field!r} needs exactly one RV_* constant, has {names}"
    return names[0]


def test_kernels_read_their_tables_by_name_never_by_position() -> None:
    """Issue 13: no ``T[10]`` in any kernel: each reads the tables through the
    ``T_*`` constant of a KernelTables field, each constant is its field's
    position, and every array is read by some kernel."""
    sources = kernel_sources()
    assert len(sources) >= 30, sorted(sources)  # the kernels were found
    by_position = {name for name, src in sources.items() if re.search(r"\bT\s*\[\s*[-\d]", src)}
    assert not by_position, f"kernels indexing their tables by position: {sorted(by_position)}"
    for i, table in enumerate(F.KernelTables._fields):
        const = f"T_{table.upper()}"
        assert getattr(F, const) == i, f"{const} must be {table}'s position {i}"
        readers = read_by(f"T[{const}]", sources) + read_by(f"T[F.{const}]", sources)
        assert readers, f"KernelTables.{table} is read by no kernel"
    tables = F.fast_tables(load_rules("burako"), 2)
    assert type(tables.kernel_args) is tuple  # numba's dispatcher types a plain tuple fastest
    assert not any(arr.flags.writeable for arr in tables.kernel_args)
    named = tables.named
    assert named.rule_values.shape == (len(F.RV_FIELDS),)
    assert named.obs_offsets.shape == (len(F.OBS_SEGMENTS),)


def test_every_rules_field_reaches_the_kernels_or_is_declared_irrelevant() -> None:
    """Every field of Rules is in the rule vector (packed into
    ``rule_values`` and read by a kernel as ``rv[RV_...]``), or baked into
    named tables (which a kernel reads, and which change when the field
    does), or declared irrelevant with a reason (and then changing it changes
    no kernel input)."""
    assert unaccounted_rules_fields(Rules) == [], "add the field to RV_FIELDS, RULES_IN_TABLES or RULES_NOT_IN_KERNELS"
    fields = {f.name for f in dataclasses.fields(Rules)}
    assert set(F.RULES_IN_TABLES) <= fields and set(F.RULES_NOT_IN_KERNELS) <= fields, "stale declarations"
    assert not set(F.RULES_NOT_IN_KERNELS) & (set(F.RV_FIELDS) | set(F.RULES_IN_TABLES))
    sources = kernel_sources()

    # the rule vector: packed from the field, read by a kernel
    for field in fields & set(F.RV_FIELDS):
        const = rv_constant(field)
        assert read_by(const, sources), f"{field} is packed as {const} but no kernel reads it"
        for preset in preset_names():
            rules = load_rules(preset)
            for n in rules.players:
                value = getattr(rules, field)
                expected = value[n] if field == "hand_size" else int(value)
                packed = F.fast_tables(rules, n).named.rule_values[F.RV_FIELDS.index(field)]
                assert packed == expected, f"{preset}, {n} players: {field} packed as {packed}, is {expected}"

    # baked into tables: read by a kernel, and moved by the field
    base = F.fast_tables(load_rules("burako"), 2).named
    for field, tables in F.RULES_IN_TABLES.items():
        assert tables and set(tables) <= set(F.KernelTables._fields), f"{field}: {tables}"
        assert field in ALTERNATIVE, f"give {field!r} a different valid value in ALTERNATIVE"
        changed = F.fast_tables(load_rules("burako", {field: ALTERNATIVE[field]}), 2).named
        moved = [t for t in tables if not np.array_equal(getattr(base, t), getattr(changed, t))]
        assert moved, f"{field} changes none of the tables declared to carry it: {tables}"

    # declared irrelevant: a reason, and no kernel input moves with the field
    for field, reason in F.RULES_NOT_IN_KERNELS.items():
        assert len(reason) > 20, f"{field}: say why the kernels may ignore it"
        if field not in ALTERNATIVE:
            continue  # wilds_per_meld: validation admits a single value
        changed = F.fast_tables(load_rules("burako", {field: ALTERNATIVE[field]}), 2).named
        for name, a, b in zip(F.KernelTables._fields, base, changed, strict=True):
            assert np.array_equal(a, b), f"{field} is declared irrelevant but changes KernelTables.{name}"


def test_the_rules_field_check_names_a_field_the_core_does_not_know() -> None:
    """The check above fails for a new rule added to Rules without reaching
    the kernels or a declaration: it names the field."""
    with_new_rule = dataclasses.make_dataclass(
        "RulesWithANewRule", [("discard_twice", bool, dataclasses.field(default=False))], bases=(Rules,), frozen=True
    )
    assert unaccounted_rules_fields(with_new_rule) == ["discard_twice"]
    # and a field declared in the rule vector that no kernel reads is caught too
    assert read_by("RV_DISCARD_TWICE", kernel_sources()) == []
