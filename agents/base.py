"""The agent interface: what a seat may see, and how it answers.

An agent is a plain object (never attached to the env)::

    class MyAgent:
        name = "mine"
        def reset(self, seat: int, rules: Rules, num_players: int) -> None: ...
        def act(self, observation: dict[str, np.ndarray], view: SeatView) -> int: ...

``observation`` is the env's observation dict for the seat (flat vector +
action mask). ``view`` is the decoded public state it implies, a
:class:`~burako_env.views.SeatView` (re-exported here): the seat's own hand,
every side's melds, the pile, sizes, the known tiles, the phase and the
legal actions, plus :meth:`SeatView.sample_state`, a full engine state in
which everything the seat cannot see is *resampled* (E2), so search agents
can clone and simulate without ever touching hidden information. The view
is the game's (``burako_env/views.py``), so the env can build one for its
opponents without importing the agents.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from burako_env.rules import Rules
from burako_env.views import SeatView

__all__ = ["Agent", "SeatView"]


@runtime_checkable
class Agent(Protocol):
    name: str

    def reset(self, seat: int, rules: Rules, num_players: int) -> None:
        """Called at the start of each hand."""

    def act(self, observation: dict[str, np.ndarray], view: SeatView) -> int:
        """Return a legal action for the seat."""
        ...
