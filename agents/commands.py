"""The agents layer's console scripts (pyproject.toml ``[project.scripts]``), launched through
:func:`burako_env.extras.run_command`: a missing extra (a network agent's torch) is named, not a
traceback."""

from __future__ import annotations

from burako_env.extras import run_command


def play() -> int:
    return run_command("agents.play", "burako-play")


def human() -> int:
    return run_command("agents.human", "burako-human")
