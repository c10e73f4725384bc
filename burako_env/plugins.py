"""Agents by name, resolved without the game importing the ``agents`` package.

A name is resolved, in this order:

1. through the table the caller passes (``agents.registry`` passes its
   built-in ``AGENTS``);
2. as ``"module:Class"`` (``"module:Outer.Inner"`` for a nested class),
   imported with importlib: any class with the agent protocol
   (``agents/base.py``), yours included, with no registration;
3. as an installed plug-in: an entry point of the group ``burako_env.agents``
   (``[project.entry-points."burako_env.agents"]`` in a package's
   pyproject.toml, ``name = "module:Class"``). This project declares its own
   agents there, so the Gymnasium env (``burako_env/gym.py``) resolves
   ``"planner"`` once the project is installed (``pip install -e .``), and
   another package adds its agents to every command line by declaring them.

Whatever is found is called as ``factory(seed=seed, **options)``. A name that
is none of these, a module that does not import, or a missing class is a
``ValueError`` that says which, and builds nothing.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Any

#: the entry-point group agent plug-ins (and this project's own agents) are declared in
ENTRY_POINT_GROUP = "burako_env.agents"


@functools.cache
def installed_agents() -> dict[str, str]:
    """Agent names declared by installed packages -> their ``"module:Class"``
    (read once per process: scanning the installed distributions takes milliseconds)."""
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def import_target(target: str, name: str | None = None) -> Callable[..., Any]:
    """The callable a ``"module:Class"`` string names."""
    label = f"agent {name!r}" if name is not None and name != target else "agent"
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name.strip() or not attribute.strip():
        raise ValueError(f"{label}: expected 'module:Class', got {target!r}")
    try:
        found: Any = importlib.import_module(module_name.strip())
    except ImportError as exc:
        raise ValueError(f"{label}: cannot import module {module_name!r} ({target!r}): {exc}") from exc
    for part in attribute.strip().split("."):
        if not hasattr(found, part):
            raise ValueError(f"{label}: module {module_name!r} has no {attribute!r} ({target!r})")
        found = getattr(found, part)
    if not callable(found):
        raise ValueError(f"{label}: {target!r} is a {type(found).__name__}, not a class or factory")
    return found


def agent_factory(name: str, known: Mapping[str, str] | None = None) -> Callable[..., Any]:
    """The class (or factory) an agent name stands for (module docstring)."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"an agent name must be a non-empty string, got {name!r}")
    known = known or {}
    target = known.get(name)
    if target is None and ":" in name:
        target = name
    if target is None:
        target = installed_agents().get(name)
    if target is None:
        names = sorted(set(known) | set(installed_agents()))
        hint = (
            f"known agents: {', '.join(names)}"
            if names
            else "no agents are installed: run `pip install -e .` in the project (it declares its own agents "
            f"as {ENTRY_POINT_GROUP!r} entry points)"
        )
        raise ValueError(f"unknown agent {name!r}; {hint}; or give 'module:Class'")
    return import_target(target, name)


def make_agent(name: str, seed: int | None = None, known: Mapping[str, str] | None = None, **options: Any) -> Any:
    """Build the agent ``name`` stands for: ``factory(seed=seed, **options)``."""
    return agent_factory(name, known)(seed=seed, **options)
