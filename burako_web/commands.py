"""``burako-web`` (pyproject.toml ``[project.scripts]``), launched through
:func:`burako_env.extras.run_command`: without the ``[web]`` extra it names it, not a traceback."""

from __future__ import annotations

from burako_env.extras import run_command


def web() -> int:
    return run_command("burako_web.cli", "burako-web", "web")
