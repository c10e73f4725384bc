"""The training layer's console scripts (pyproject.toml ``[project.scripts]``), launched through
:func:`burako_env.extras.run_command`: a missing extra is named, not a traceback."""

from __future__ import annotations

from burako_env.extras import run_command


def train() -> int:
    return run_command("training.ppo", "burako-train", "train")


def curve() -> int:
    return run_command("training.checkpoint_curve", "burako-curve", "train")


def average() -> int:
    return run_command("training.average", "burako-average", "train")


def evaluate() -> int:
    return run_command("training.evaluate", "burako-eval", "tournament")


def tournament() -> int:
    return run_command("training.tournament", "burako-tournament", "tournament")
