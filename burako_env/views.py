"""What one seat may know: the view an agent gets with each decision.

A :class:`SeatView` is the decoded public state the seat's observation
implies: its own hand, every side's melds, the pile, sizes, the known tiles,
the phase and the legal actions, plus :meth:`SeatView.sample_state`, a full
engine state in which everything the seat cannot see (other hands beyond
their known tiles, the stock order, untaken muertos) is *resampled* (E2), so
search agents can clone and simulate without ever touching hidden
information.

It is built from the true state by whoever runs the game: the agents' game
runner (``agents/runner.py``), the Gymnasium env's opponents
(``burako_env/gym.py``), the web table. It lives with the game, not with the
agents, so the env can hand one to an opponent without importing ``agents``
(imports point burako_env <- agents <- training; docs/architecture.md).
:class:`LazySeatView` is the same view determinized on first read, so an
agent that never reads it costs nothing.
"""

from __future__ import annotations

import numpy as np

from burako_env.engine import GameState, Phase
from burako_env.melds import Meld
from burako_env.rules import Rules

#: the tag of the seats' view generators, :func:`view_generator`
VIEW_STREAM = 0x5EA7


def view_generator(seed: int, seat: int) -> np.random.Generator:
    """Seat ``seat``'s generator for resampling what it cannot see, in a hand dealt from
    ``default_rng(seed)``: ``default_rng([seed, VIEW_STREAM, seat])``.

    The tag keeps it off the deal's stream: numpy pads a seed with zeros, so ``default_rng([seed, 0])``,
    seat 0's generator before the tag, was ``default_rng(seed)`` itself, and seat 0's first resampling
    of the hidden tiles followed the real deal (its sampled opponent hand shared 3.4 tiles with the
    true one against 2.8 for an independent generator)."""
    return np.random.default_rng([seed, VIEW_STREAM, seat])


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


class LazySeatView(SeatView):
    """A :class:`SeatView` that determinizes on first use instead of at
    construction; identical answers for the same generator (the only draw
    from it happens at that first use). Until then (or :meth:`expire`) it
    holds the true state in a private attribute: an agent in the same
    process could reach it. Agents are trusted code here: keeping an untrusted
    one from the truth would need a process boundary between it and the game,
    which no runner here provides."""

    def __init__(self, state: GameState, seat: int, rng: np.random.Generator) -> None:
        # SeatView.__init__ would determinize now; set its public fields only.
        self.seat = seat
        self.rules = state.rules
        self.num_players = state.num_players
        self._rng = rng
        self._source: GameState | None = state
        self._determinized: GameState | None = None

    @property
    def _state(self) -> GameState:  # type: ignore[override]
        if self._determinized is None:
            if self._source is None:
                raise RuntimeError("this view expired: read it during act(), not after")
            self._determinized = self._source.determinize(self.seat, self._rng)
            self._source = None
        return self._determinized

    def expire(self) -> None:
        """Forget the live state (called when ``act`` returns)."""
        self._source = None
