"""A Rummy heuristic: each turn, play the most tile value it legally can, keeping its jokers.

It reads only its observation (hand, pending play, table multiset, closing
tile, whether it has made its first play: nothing hidden, E2) and plans a
whole play with the exact partition DP (:mod:`burako_env.rummy.partition`):

* if closing is legal (R8), close;
* else place the hand tiles that maximise the placed value, jokers kept in
  hand (they are worth more later as wilds) unless they empty the hand;
  before the first play (R5) only a play worth the minimum from the hand
  alone, with jokers allowed only when they are needed to reach it;
* then feed the planned tiles one action at a time and commit; end the turn
  when there is nothing worth playing.

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


class RummyHeuristic:
    name = "rummy-heuristic"

    def __init__(self, seed: int | None = None) -> None:
        self.seat = -1
        self.rules: RummyRules = load_rummy_rules("rummy")
        self.plan: np.ndarray | None = None
        self.plan_closing = False

    def reset(self, seat: int, rules: Any = None, num_players: int = 2) -> None:
        self.seat = seat
        if isinstance(rules, RummyRules):
            self.rules = rules
        self.plan = None

    def _make_plan(self, parts: dict[str, np.ndarray], mask: np.ndarray) -> None:
        hand = parts["hand"].astype(np.int64)
        self.plan_closing = bool(mask[A.ADD_CLOSING])
        if self.plan_closing:
            self.plan = hand
            return
        first = not parts["first_play"][0]
        base = np.zeros(NUM_KINDS, np.int64) if first else parts["table"].astype(np.int64)
        without_jokers = hand.copy()
        without_jokers[JOKER] = 0
        plays = []
        for optional in (without_jokers, hand) if hand[JOKER] else (without_jokers,):
            graph = PlayGraph(base, optional, NUMBER_WEIGHTS, joker_at_number=True)
            placement = graph.best_placement()
            if placement is None or (first and (graph.best_value or 0) < self.rules.first_play_minimum):
                plays.append(None)
                continue
            plays.append(placement - base)
        self.plan = np.zeros(NUM_KINDS, np.int64)
        with_jokers = plays[-1] if len(plays) == 2 else None
        if with_jokers is not None and (with_jokers == hand).all():
            self.plan = with_jokers  # jokers are kept, except to empty the hand
        elif plays[0] is not None and plays[0].any():
            self.plan = plays[0]
        elif first and with_jokers is not None and with_jokers.any():
            self.plan = with_jokers  # a first play that needs its jokers

    def act(self, observation: dict[str, np.ndarray], view: Any = None) -> int:
        mask = observation["action_mask"]
        parts = split_observation(observation["observation"])
        pending = parts["pending"].astype(np.int64)
        if not pending.any() and not parts["pending_closing"][0]:
            self._make_plan(parts, mask)
        assert self.plan is not None
        for kind in np.flatnonzero(self.plan > pending):
            if mask[A.ADD_TILE + kind]:
                return int(A.ADD_TILE + kind)
        if self.plan_closing and not parts["pending_closing"][0] and mask[A.ADD_CLOSING]:
            return A.ADD_CLOSING
        if mask[A.COMMIT]:
            return A.COMMIT
        if mask[A.END_TURN]:
            return A.END_TURN
        return int(np.flatnonzero(mask)[0])
