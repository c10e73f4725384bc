"""The decision context: what the player to act knows of the position,
computed lazily once per decision (most decisions read a few facts only).

:class:`Position` reads only the player's own hand and public facts of an
engine state (melds, pile, hand and stock sizes, the tiles each player took
with the pile, who took a muerto), so the same code serves the agents (on
``view.public_state()``) and the search's rollouts (on a determinization).
The one count it takes from where hidden tiles lie, ``unseen``
(``GameState.unseen_counts``), is by tile conservation (E1) the full set less
what the player sees: the same numbers on every determinization.
"""

from __future__ import annotations

import numpy as np

from agents.heuristic.facts import extension, rule_facts, side_estimates
from agents.heuristic.simulation import simulate_melding
from agents.heuristic.weights import HeuristicWeights
from burako_env.engine import GameState
from burako_env.melds import Meld
from burako_env.tiles import NUM_KINDS


class Position:
    """Facts about the player to act, computed lazily once per decision."""

    def __init__(self, state: GameState, weights: HeuristicWeights) -> None:
        self.state = state
        self.weights = weights
        self.rules = state.rules
        self.facts = rule_facts(state.rules)
        self.player = state.current
        self.side = state.side_of[self.player]
        self.hand: list[int] = state.hands[self.player].tolist()
        self.size = state.hand_size[self.player]
        self.own: list[Meld] = state.melds[self.side]
        self.stock = len(state.stock)
        self.muerto_taken = state.muerto_taken[self.side]
        self.close_ready = state.close_ready[self.side]
        self.next_player = (self.player + 1) % state.num_players
        self._own_addable: list[bool] | None = None
        self._side_addable: dict[int, list[bool]] = {}
        self._danger: bool | None = None
        self._want_close: bool | None = None
        self._leftover: int | None = None
        self._unseen: list[int] | None = None
        self._next_known: list[int] | None = None
        self._next_holds: tuple[list[float], list[float]] | None = None
        self._opponent_weights: dict[int, float] | None = None
        self._going_out: bool | None = None

    # -- melds
    @property
    def own_addable(self) -> list[bool]:
        """Per kind: it can be added to one of our melds as a natural tile."""
        if self._own_addable is None:
            self._own_addable = self._natural_addable(self.own)
        return self._own_addable

    def side_addable(self, side: int) -> list[bool]:
        """Per kind: it can be added to one of ``side``'s melds (any way)."""
        found = self._side_addable.get(side)
        if found is None:
            used = len(self.state.melds[side])
            if used:
                rows = self.state.addable[side, : used * NUM_KINDS].reshape(used, NUM_KINDS)
                found = rows.any(axis=0).tolist()
            else:
                found = [False] * NUM_KINDS
            self._side_addable[side] = found
        return found

    def _natural_addable(self, melds: list[Meld]) -> list[bool]:
        out = [False] * NUM_KINDS
        for meld in melds:
            for k in self.facts.natural_adds(meld, self.state.t):
                out[k] = True
        return out

    @property
    def unseen(self) -> list[int]:
        """Copies of each kind this player cannot locate (other hands beyond
        their known tiles, stock, muertos): the live ones."""
        if self._unseen is None:
            # counted where the tiles are; by tile conservation (E1) that is the full set less
            # everything this player sees, the same numbers on the true state and on any
            # determinization of it (GameState.unseen_counts)
            unseen = self.state.unseen_counts(self.player).tolist()
            self._unseen = unseen
        return self._unseen

    @property
    def next_known(self) -> list[int]:
        """Tiles the next player took with the pile and still holds."""
        if self._next_known is None:
            self._next_known = self.state.known[self.next_player].tolist()
        return self._next_known

    @property
    def next_known_any(self) -> bool:
        """The next player is known to hold some tile taken with the pile."""
        return any(self.next_known)

    @property
    def next_holds(self) -> tuple[list[float], list[float]]:
        """Per kind, the chance that the next player holds a copy of it, and
        that he holds two (a pair); exactly for the tiles he is known to hold,
        else from the unseen copies and his hidden hand's share of them
        (:meth:`hidden_share`). Once per decision: every discard asks."""
        if self._next_holds is None:
            known = self.state.known[self.next_player]
            f = self.hidden_share(self.next_player)
            p = np.minimum(1.0, f * np.maximum(np.asarray(self.unseen), 0))
            one = np.where(known > 0, 1.0, p)
            two = np.where(known >= 2, 1.0, np.where(known == 1, p, 0.5 * p * p))
            self._next_holds = one.tolist(), two.tolist()
        return self._next_holds

    def hidden_share(self, player: int) -> float:
        """The chance that one unseen tile is in ``player``'s hidden hand."""
        total = sum(self.unseen)
        if total <= 0:
            return 0.0
        hidden = self.state.hand_size[player] - int(self.state.known[player].sum())
        return max(0.0, hidden / total)

    @property
    def opponent_weights(self) -> dict[int, float]:
        """Opponent sides and how much feeding each matters: the next seat
        takes the pile first."""
        if self._opponent_weights is None:
            state = self.state
            nxt_side = state.side_of[self.next_player]
            near, far = self.weights.feed_next_side, self.weights.feed_other_side
            weights = {s: (near if s == nxt_side else far) for s in range(state.num_sides) if s != self.side}
            self._opponent_weights = weights
        return self._opponent_weights

    @property
    def clean_canasta(self) -> bool:
        return any(m.is_canasta and m.clean for m in self.own)

    def extension(self, meld: Meld, hand: list[int]) -> int:
        """How many tiles of ``hand`` would extend ``meld`` naturally, in a chain."""
        return extension(meld, hand, self.rules)

    def top_melds_naturally(self, top: int) -> bool:
        """The pile's top tile can be melded at once without a wild: added to
        one of our melds or melded with two tiles of the hand."""
        if self.own_addable[top]:
            return True
        hand = self.hand
        for _i, kinds in self.facts.natural_with[top]:
            need: dict[int, int] = {}
            for k in kinds:
                need[k] = need.get(k, 0) + 1
            need[top] -= 1
            if all(hand[k] >= n for k, n in need.items()):
                return True
        return False

    # -- the situation
    @property
    def leftover(self) -> int:
        """Tiles left in hand after melding everything possible, wilds included."""
        if self._leftover is None:
            self._leftover = sum(simulate_melding(self.hand, self.own, self, use_wilds=True)[1])
        return self._leftover

    @property
    def going_out(self) -> bool:
        """Emptying the hand now (or leaving one tile to discard) takes the
        muerto (B19-B21) or closes (B22) this turn: worth spending wilds."""
        if self._going_out is None:
            if self.muerto_taken and not (self.close_ready and self.want_close):
                self._going_out = False
            else:
                self._going_out = self.leftover <= 1
        return self._going_out

    @property
    def danger(self) -> bool:
        """The hand may end soon: the stock is nearly out or an opponent side
        can close and holds few tiles."""
        if self._danger is None:
            state = self.state
            w = self.weights
            danger = self.stock <= w.danger_stock
            if not danger:
                for q in range(state.num_players):
                    s = state.side_of[q]
                    if s == self.side or not state.muerto_taken[s]:
                        continue
                    if state.hand_size[q] <= (w.danger_hand_close_ready if state.close_ready[s] else w.danger_hand):
                        danger = True
                        break
            self._danger = danger
        return self._danger

    @property
    def want_close(self) -> bool:
        """Close when our estimate beats every other side's, or when little
        is left to gain (late, or an opponent is about to close)."""
        if self._want_close is None:
            est = side_estimates(self.state, self.player, self.weights)
            own = est[self.side] + self.rules.closing_bonus
            # our hand leaves the count when we close
            own += float(sum(self.facts.values[k] * c for k, c in enumerate(self.hand) if c))
            best_other = max(v for s, v in enumerate(est) if s != self.side)
            self._want_close = own >= best_other or self.danger or self.stock <= self.weights.close_late_stock
        return self._want_close


__all__ = ["Position"]
