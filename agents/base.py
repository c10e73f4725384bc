"""The agent interface: what a seat may see, and how it answers.

An agent is a plain object (never attached to the env)::

    class MyAgent:
        name = "mine"
        def reset(self, seat: int, rules: Rules, num_players: int) -> None: ...
        def act(self, observation: dict[str, np.ndarray], view: SeatView) -> int: ...

``observation`` is the env's observation dict for the seat (flat vector +
action mask). ``view`` is the decoded public state it implies: the seat's own
hand, every side's melds, the pile, sizes, the known tiles, the phase and
the legal actions, plus :meth:`SeatView.sample_state`, a full engine state
in which everything the seat cannot see (other hands beyond their known
tiles, the stock order, untaken muertos) is *resampled* (E2), so search
agents can clone and simulate without ever touching hidden information.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from burako_env.engine import GameState, Phase
from burako_env.melds import Meld
from burako_env.rules import Rules


class SeatView:
    """What one seat knows, decoded. Built from the true state by the game
    runner; it keeps only a determinized copy (hidden parts resampled)."""

    def __init__(self, state: GameState, seat: int, rng: np.random.Generator) -> None:
        self.seat = seat
        self.rules: Rules = state.rules
        self.num_players = state.num_players
        self._rng = rng
        # Everything hidden from `seat` is resampled here; nothing else of the
        # true state is kept.
        self._state = state.determinize(seat, rng)

    # public facts, read from the determinized copy (identical to the truth
    # for everything the seat can see)
    @property
    def phase(self) -> Phase:
        return self._state.phase

    @property
    def side(self) -> int:
        return self._state.side_of[self.seat]

    @property
    def hand(self) -> np.ndarray:
        """Own tile counts per kind."""
        return self._state.hands[self.seat].copy()

    @property
    def melds(self) -> list[list[Meld]]:
        """Every side's melds (index by side)."""
        return [list(side) for side in self._state.melds]

    @property
    def pile(self) -> list[int]:
        return list(self._state.pile)

    @property
    def hand_sizes(self) -> list[int]:
        return list(self._state.hand_size)

    @property
    def known(self) -> np.ndarray:
        """Tiles each player took with the pile and has not played (players x 53)."""
        return self._state.known.copy()

    @property
    def stock_size(self) -> int:
        return len(self._state.stock)

    @property
    def muerto_taken(self) -> list[bool]:
        return list(self._state.muerto_taken)

    @property
    def match_scores(self) -> list[int]:
        return list(self._state.match_scores)

    def legal_actions(self) -> list[int]:
        return self._state.legal_actions()

    def describe(self, action: int) -> str:
        return self._state.describe(action)

    def sample_state(self, rng: np.random.Generator | None = None) -> GameState:
        """A full engine state consistent with what the seat knows, hidden
        parts freshly resampled (a new determinization on each call)."""
        return self._state.determinize(self.seat, rng if rng is not None else self._rng)

    def public_state(self) -> GameState:
        """A copy of the state this view was built on (hidden parts resampled once)."""
        return self._state.clone()


@runtime_checkable
class Agent(Protocol):
    name: str

    def reset(self, seat: int, rules: Rules, num_players: int) -> None:
        """Called at the start of each hand."""

    def act(self, observation: dict[str, np.ndarray], view: SeatView) -> int:
        """Return a legal action for the seat."""
        ...
