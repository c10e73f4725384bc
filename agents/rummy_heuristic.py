"""Rummy heuristics: close as soon as the rules allow, and give the other players nothing to close with.

Both read only their observation (hand, pending play, table multiset,
closing tile, first plays, stock size: nothing hidden, E2) and plan a whole
play with the exact partition DP (:mod:`burako_env.rummy.partition`), then
feed the planned tiles one action at a time and commit (or end the turn).

Why holding wins (measured: ``agents.rummy_eval``). After his first play a
player may close when the table's tiles, his whole hand and the closing tile
split into melds (R6-R8): that multiset is the same whether his tiles sit in
his hand or on the table, so playing a tile brings him no nearer to closing.
It only hands the other players material: their closing test uses the table
too. Hand totals matter only for the players who did not close (R10), and the
closer is the only winner of a hand. So :class:`RummyHeuristic`:

* closes whenever it is legal (R8);
* makes its first play (R5) as soon as it can: the most tile value from the
  hand alone, jokers kept unless the 30 points need them (without a first
  play the table does not count toward closing);
* then keeps its tiles (and its jokers) and ends the turn, until the stock is
  empty: then a hand may end blocked (R9) and be scored by hand totals, so it
  plays the most value it can, jokers included (each costs ``joker_penalty``).

:class:`RummyGreedy` is the naive player: every turn it plays the most tile
value it legally can, keeping its jokers unless they empty its hand. Against
random play it wins only about half the hands (random play, through the exact
mask, also sheds tiles quickly; both feed each other's closing), which is what
showed that shedding is not the way to win this game.

The random agent (:class:`agents.random_agent.RandomAgent`) plays Rummy as is
(it only reads the mask).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from burako_env.rummy import actions as A
from burako_env.rummy.engine import NUMBER_WEIGHTS
from burako_env.rummy.observation import split_observation
from burako_env.rummy.partition import PlayGraph
from burako_env.rummy.rules import RummyRules, load_rummy_rules
from burako_env.tiles import JOKER, NUM_KINDS


def most_value_play(hand: np.ndarray, base: np.ndarray, minimum: int | None, keep_jokers: bool) -> np.ndarray | None:
    """The hand tiles of the highest-value legal play onto ``base`` (None: no play reaches ``minimum``).

    Tiles count at their number, jokers where they stand (R5, R11a). With
    ``keep_jokers`` the jokers are played only when no play without them
    exists (or reaches the minimum) or when they empty the hand.
    """
    without_jokers = hand.copy()
    without_jokers[JOKER] = 0
    candidates = (without_jokers, hand) if hand[JOKER] else (without_jokers,)
    plays: list[np.ndarray | None] = []
    for optional in candidates:
        graph = PlayGraph(base, optional, NUMBER_WEIGHTS, joker_at_number=True)
        placement = graph.best_placement()
        enough = minimum is None or (graph.best_value or 0) - int(base @ NUMBER_WEIGHTS) >= minimum
        play = None if placement is None or not enough else placement - base
        plays.append(play if play is not None and play.any() else None)
    with_jokers = plays[-1] if len(plays) == 2 else None
    if not keep_jokers:
        return with_jokers if with_jokers is not None else plays[0]
    if with_jokers is not None and (with_jokers == hand).all():
        return with_jokers  # jokers are kept, except to empty the hand
    if plays[0] is not None:
        return plays[0]
    return with_jokers if minimum is not None else None  # a first play may need its jokers


class RummyHeuristic:
    """Close when legal; first play as soon as possible; then hold (see the module docstring)."""

    name = "rummy-heuristic"

    def __init__(self, seed: int | None = None) -> None:
        self.seat = -1
        self.rules: RummyRules = load_rummy_rules("rummy")
        self.plan: np.ndarray = np.zeros(NUM_KINDS, np.int64)
        self.plan_closing = False

    def reset(self, seat: int, rules: Any = None, num_players: int = 2) -> None:
        self.seat = seat
        if rules is not None:  # a preset name, a mapping or RummyRules (a name used to be ignored: default rules)
            self.rules = load_rummy_rules(rules)
        self.plan = np.zeros(NUM_KINDS, np.int64)

    def choose_play(self, parts: dict[str, np.ndarray], hand: np.ndarray) -> np.ndarray | None:
        """The hand tiles to play this turn (None: end the turn). Closing is handled before."""
        if not parts["first_play"][0]:
            return most_value_play(hand, np.zeros(NUM_KINDS, np.int64), self.rules.first_play_minimum, True)
        if parts["stock_size"][0] > 0:
            return None  # hold: playing brings no nearer to closing, it only feeds the others
        return most_value_play(hand, parts["table"].astype(np.int64), None, False)

    def _make_plan(self, parts: dict[str, np.ndarray], mask: np.ndarray) -> None:
        hand = parts["hand"].astype(np.int64)
        self.plan_closing = bool(mask[A.ADD_CLOSING])
        if self.plan_closing:
            self.plan = hand
            return
        play = self.choose_play(parts, hand)
        self.plan = np.zeros(NUM_KINDS, np.int64) if play is None else play

    def act(self, observation: dict[str, np.ndarray], view: Any = None) -> int:
        mask = observation["action_mask"]
        parts = split_observation(observation["observation"])
        pending = parts["pending"].astype(np.int64)
        if not pending.any() and not parts["pending_closing"][0]:
            self._make_plan(parts, mask)
        for kind in np.flatnonzero(self.plan > pending):
            if mask[A.ADD_TILE + kind]:
                return int(A.ADD_TILE + kind)
        if self.plan_closing and not parts["pending_closing"][0] and mask[A.ADD_CLOSING]:
            return A.ADD_CLOSING
        if mask[A.COMMIT] and (pending.any() or parts["pending_closing"][0]):
            return A.COMMIT
        if mask[A.END_TURN]:
            return A.END_TURN
        return int(np.flatnonzero(mask)[0])


class RummyGreedy(RummyHeuristic):
    """Every turn, the most tile value it legally can, jokers kept unless they empty the hand."""

    name = "rummy-greedy"

    def choose_play(self, parts: dict[str, np.ndarray], hand: np.ndarray) -> np.ndarray | None:
        if not parts["first_play"][0]:
            return most_value_play(hand, np.zeros(NUM_KINDS, np.int64), self.rules.first_play_minimum, True)
        return most_value_play(hand, parts["table"].astype(np.int64), None, True)
