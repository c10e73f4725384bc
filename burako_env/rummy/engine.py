"""The pure Rummy engine (docs/rules.md Part 3, R1-R11): state, legality, scoring.

No gym, PettingZoo or torch here; randomness only through an explicit
``numpy.random.Generator``. The table is kept as a multiset of tile kinds
(counts per kind): rearrangement is free (R6) and a play is legal when the
table's tiles plus the tiles played can be arranged into valid melds (R7
decision), so the multiset is all that matters. A joker never returns to a
hand (the table multiset only grows), which also enforces the first half of R7.

A turn (R4): the engine draws for the player when the turn starts (when the
stock has tiles), then the player builds a *pending play* one tile at a time
(actions.py) and commits it or ends his turn. A legal play ``Q`` (hand tiles
``H_Q`` plus, maybe, the closing tile):

* ``H_Q`` is not empty, except the closing tile alone by a player whose hand
  is empty (R11c);
* with the closing tile, ``H_Q`` is the whole hand (R8: the closing tile is
  never used for ordinary melds; placing it closes);
* before his first play (R5): ``Q`` alone splits into melds, the table is not
  touched, and ``H_Q`` is worth at least ``first_play_minimum``, each joker at
  the number it stands for (R11a), the closing tile not counted (R11b);
* after it (R6): the table plus ``Q`` splits into melds.

The hand ends when a player closes (R8), or blocked when every player has had
a turn with the stock already empty and nobody played (R9, R11e). Scores
(R10): every player but the closer adds his hand (number, joker
``joker_penalty``); lowest match total wins; ties share (R11f).

Phases: ``PLAY`` (the current player decides), ``HAND_OVER`` (call
:meth:`RummyState.next_hand`), ``MATCH_OVER``.
"""

from __future__ import annotations

import json
from enum import IntEnum
from typing import Any

import numpy as np

from burako_env.outcomes import check_reward
from burako_env.rummy import actions as A
from burako_env.rummy.partition import addable_kinds, best_value, bounded_paths, fits, mask_query, turn_graph
from burako_env.rummy.rules import RummyRules, load_rummy_rules
from burako_env.safe_yaml import action_id_problem
from burako_env.tiles import JOKER, KIND_NUMBER_LIST, NUM_KINDS

NO_TILE = -1
FULL_COUNTS = np.array([2] * JOKER + [2], dtype=np.int64)
#: the value a tile counts toward the first play (R5): its number (jokers: where they stand)
NUMBER_WEIGHTS = np.array(KIND_NUMBER_LIST, dtype=np.int64)
NO_WEIGHTS = np.zeros(NUM_KINDS, dtype=np.int64)


class IllegalActionError(ValueError):
    """An action the mask forbids; the state is left unchanged."""


class Phase(IntEnum):
    PLAY = 0
    HAND_OVER = 1
    MATCH_OVER = 2


class RummyState:
    """A Rummy game (a match of ``hands_per_match`` hands) for 2 to 4 players."""

    def __init__(self, rules: RummyRules, num_players: int) -> None:
        rules.check_players(num_players)
        self.rules = rules
        self.num_players = num_players
        self.hands = np.zeros((num_players, NUM_KINDS), dtype=np.int64)
        self.table = np.zeros(NUM_KINDS, dtype=np.int64)
        self.closing_tile = NO_TILE  # kind of the face-up closing tile; NO_TILE once placed
        self.stock: list[int] = []  # drawn from the end
        self.pending = np.zeros(NUM_KINDS, dtype=np.int64)
        self.pending_closing = False
        self.first_play_done = [False] * num_players
        self.current = 0
        self.starter = 0  # who started this hand (R11i)
        self.phase = Phase.PLAY
        self.turn_started_empty = False  # the current turn began with an empty stock
        self.blocked_turns = 0  # consecutive such turns with no play (R11e)
        self.hand_number = 0
        self.closer: int | None = None
        self.blocked = False
        self.hand_scores: list[int] | None = None  # the last finished hand's totals (R10)
        self.match_scores = [0] * num_players
        self.turns = 0
        self._mask: np.ndarray | None = None
        self._closing_cache: tuple[tuple[Any, ...], bool] | None = None
        self._turn_graph_cache: tuple[tuple[Any, ...], tuple[np.ndarray, ...] | None] | None = None

    # ------------------------------------------------------------------ setup
    @classmethod
    def new_game(cls, rng: np.random.Generator, rules: RummyRules | str = "rummy", num_players: int = 2) -> RummyState:
        """Deal the first hand; its starting player is drawn from ``rng`` (R11i)."""
        state = cls(load_rummy_rules(rules), num_players)
        state.starter = int(rng.integers(num_players))
        state._deal(rng)
        return state

    def _deal(self, rng: np.random.Generator) -> None:
        """R2: 14 tiles each, one face-up closing tile, the rest is the stock."""
        tiles = rng.permutation(np.repeat(np.arange(NUM_KINDS), FULL_COUNTS))
        size = self.rules.hand_size
        self.hands[:] = 0
        for player in range(self.num_players):
            np.add.at(self.hands[player], tiles[player * size : (player + 1) * size], 1)
        dealt = self.num_players * size
        self.closing_tile = int(tiles[dealt])
        self.stock = [int(k) for k in tiles[dealt + 1 :]]
        self.table[:] = 0
        self.pending[:] = 0
        self.pending_closing = False
        self.first_play_done = [False] * self.num_players
        self.blocked_turns = 0
        self.turns = 0  # this hand's (the render's "hand h/H, turn t"); it ran on over a match's hands
        self.closer = None
        self.blocked = False
        self.hand_scores = None  # the last hand's result is not this one's (hand_winners, hand_rewards)
        self.phase = Phase.PLAY
        self.current = self.starter
        self._start_turn()

    def next_hand(self, rng: np.random.Generator) -> None:
        """Deal the next hand; the start moves one seat to the left (R11i)."""
        if self.phase != Phase.HAND_OVER:
            raise IllegalActionError(f"next_hand() needs a finished hand, the phase is {self.phase.name}")
        self.hand_number += 1
        self.starter = (self.starter + 1) % self.num_players
        self._deal(rng)

    def _start_turn(self) -> None:
        """R4: draw one tile from the stock, skipped when it is empty."""
        self.turn_started_empty = not self.stock
        if self.stock:
            self.hands[self.current, self.stock.pop()] += 1
        self._mask = None

    # ------------------------------------------------------------------ queries
    @property
    def hand_over(self) -> bool:
        return self.phase != Phase.PLAY

    @property
    def match_over(self) -> bool:
        return self.phase == Phase.MATCH_OVER

    @property
    def stock_size(self) -> int:
        return len(self.stock)

    def hand_size(self, player: int) -> int:
        return int(self.hands[player].sum())

    def hand_value(self, player: int) -> int:
        """What the tiles in a hand cost at the end (R10)."""
        hand = self.hands[player]
        return int(hand[:JOKER] @ NUMBER_WEIGHTS[:JOKER]) + int(hand[JOKER]) * self.rules.joker_penalty

    def remaining(self) -> np.ndarray:
        """The current player's hand tiles not yet in the pending play."""
        return self.hands[self.current] - self.pending

    # ------------------------------------------------------------------ legality
    def _base(self) -> np.ndarray:
        """The table tiles a play is checked with: none before the first play (R5)."""
        if self.first_play_done[self.current]:
            return self.table
        return np.zeros(NUM_KINDS, dtype=np.int64)

    def _minimum(self) -> int | None:
        """The value a first play must reach (R5), None after the first play."""
        return None if self.first_play_done[self.current] else self.rules.first_play_minimum

    def _weights(self) -> tuple[np.ndarray, bool]:
        """What a placed tile is worth to the DP: before the first play its number (R5, R11a), else nothing."""
        if self._minimum() is None:
            return NO_WEIGHTS, False
        return NUMBER_WEIGHTS, True

    def _play_value(self, mandatory: np.ndarray, with_closing: bool) -> int | None:
        """The best first-play value of exactly these tiles (+ the closing tile), None when they do not split.

        The closing tile never counts (R11b): a closing joker is placed as a free joker, another
        closing tile's number is taken off.
        """
        counts = mandatory.copy()
        free_jokers = 0
        if with_closing:
            counts[self.closing_tile] += 1
            free_jokers = int(self.closing_tile == JOKER)
        weights, at_number = self._weights()
        if not at_number:
            return 0 if fits(counts) else None  # after the first play only the split matters
        value = best_value(counts, weights, at_number, free_jokers)
        if value is None or not with_closing or self.closing_tile == JOKER or not at_number:
            return value
        return value - KIND_NUMBER_LIST[self.closing_tile]

    def _value_ok(self, value: int | None) -> bool:
        minimum = self._minimum()
        return value is not None and (minimum is None or value >= minimum)

    def closing_play_legal(self) -> bool:
        """Whether the whole hand plus the closing tile is a legal play (R8).

        It does not depend on the pending play, so it is computed once a turn
        (cached on what it reads: the seat, his hand, the table, the closing
        tile and whether he has made his first play).
        """
        if self.closing_tile == NO_TILE:
            return False
        key = self._turn_key()
        if self._closing_cache is None or self._closing_cache[0] != key:
            self._closing_cache = (key, self._closing_legal_now())
        return self._closing_cache[1]

    def _turn_key(self) -> tuple[Any, ...]:
        """What a turn's legality reads (it changes only when a turn ends or a tile is drawn)."""
        hand = self.hands[self.current]
        first = self.first_play_done[self.current]
        return (self.current, hand.tobytes(), self.table.tobytes(), self.closing_tile, first)

    def _closing_legal_now(self) -> bool:
        whole = self._base() + self.hands[self.current]
        if not self.first_play_done[self.current]:
            return self._value_ok(self._play_value(whole, True))
        whole = whole.copy()
        whole[self.closing_tile] += 1
        graph = self._turn_graph()
        if graph is None:  # a dense table: the searches first
            return fits(whole, graph_budget=0)
        return bounded_paths(graph, whole, whole)[1]

    def _turn_graph(self) -> tuple[np.ndarray, ...] | None:
        """After the first play: this turn's layered graph (partition.turn_graph), built once a turn.

        None before the first play (the objective needs its own graph) and for tables too dense
        for the graph's budget (then each question is asked on its own, exactly).
        """
        if not self.first_play_done[self.current]:
            return None
        key = self._turn_key()
        if self._turn_graph_cache is None or self._turn_graph_cache[0] != key:
            graph = turn_graph(self.table, self.hands[self.current], self.closing_tile)
            self._turn_graph_cache = (key, graph)
        return self._turn_graph_cache[1]

    def pending_is_legal(self) -> bool:
        """Whether committing the pending play now is legal (R5-R8, R11c)."""
        hand = self.hands[self.current]
        if self.pending_closing:
            return bool((self.pending == hand).all()) and self.closing_play_legal()
        if not self.pending.any():
            return False
        return self._value_ok(self._play_value(self._base() + self.pending, False))

    def legal_mask(self) -> np.ndarray:
        """The exact action mask (E3), read-only, cached until the state changes."""
        if self._mask is None:
            self._mask = self._compute_mask()
            self._mask.flags.writeable = False
        return self._mask

    def _compute_mask(self) -> np.ndarray:
        mask = np.zeros(A.NUM_ACTIONS, dtype=np.int8)
        if self.phase != Phase.PLAY:
            return mask
        remaining = self.remaining()
        closing = self.closing_play_legal()
        if closing:
            mask[A.ADD_TILE : A.ADD_TILE + NUM_KINDS] = remaining > 0
            if not self.pending_closing:
                mask[A.ADD_CLOSING] = 1
        if self.pending_closing:
            mask[A.COMMIT] = self.pending_is_legal()
        else:
            # the kinds that can still join a legal play, and whether the pending play alone is one
            # (pending_is_legal's answer): after the first play from the turn's graph, before it
            # from one compiled query with the R5 objective
            minimum = self._minimum()
            weights, at_number = self._weights()
            graph = self._turn_graph()
            if graph is not None:  # this turn's graph: the plays between table + pending and table + hand
                low = self.table + self.pending
                addable, _ = bounded_paths(graph, low, self.table + self.hands[self.current])
                alone = 0 if self.pending.any() and bounded_paths(graph, low, low)[1] else None
            elif minimum is None:  # no objective: depth-first searches, exact (partition.addable_kinds)
                mandatory = self.table + self.pending
                addable, fits_alone = addable_kinds(mandatory, remaining, bool(self.pending.any()), graph_budget=0)
                alone = 0 if fits_alone else None
            else:
                addable, alone = mask_query(self.pending.copy(), remaining, weights, at_number, 0, minimum)
            mask[A.ADD_TILE : A.ADD_TILE + NUM_KINDS] |= (addable & (remaining > 0)).astype(np.int8)
            if self.pending.any():
                mask[A.COMMIT] = self._value_ok(alone)
        mask[A.END_TURN] = not self.pending.any() and not self.pending_closing
        return mask

    # ------------------------------------------------------------------ moves
    def step(self, action: int) -> None:
        """Apply one action; an illegal one raises and changes nothing."""
        problem = action_id_problem(action, A.NUM_ACTIONS)
        if problem is not None:
            raise IllegalActionError(problem)
        action = int(action)
        if self.phase != Phase.PLAY:
            raise IllegalActionError(f"no action is legal in phase {self.phase.name}")
        if not self.legal_mask()[action]:
            raise IllegalActionError(f"illegal action {action} ({A.describe_action(action)}) for player {self.current}")
        if action < NUM_KINDS:
            self.pending[action] += 1
            self._mask = None
        elif action == A.ADD_CLOSING:
            self.pending_closing = True
            self._mask = None
        elif action == A.COMMIT:
            self._commit()
        else:
            self._end_turn(played=False)

    def _commit(self) -> None:
        player = self.current
        self.hands[player] -= self.pending
        self.table += self.pending
        self.pending[:] = 0
        self.first_play_done[player] = True
        if self.pending_closing:
            self.table[self.closing_tile] += 1
            self.closing_tile = NO_TILE
            self.pending_closing = False
            self._finish_hand(closer=player)
            return
        self._end_turn(played=True)

    def _end_turn(self, played: bool) -> None:
        self.turns += 1
        if played or not self.turn_started_empty:
            self.blocked_turns = 0
        else:
            self.blocked_turns += 1
            if self.blocked_turns >= self.num_players:
                self._finish_hand(closer=None)  # R9, R11e: blocked
                return
        self.current = (self.current + 1) % self.num_players
        self._start_turn()

    def _finish_hand(self, closer: int | None) -> None:
        """R10: each player but the closer adds his hand's value."""
        self.closer = closer
        self.blocked = closer is None
        self.hand_scores = [0 if p == closer else self.hand_value(p) for p in range(self.num_players)]
        for player, points in enumerate(self.hand_scores):
            self.match_scores[player] += points
        self._mask = None
        last = self.hand_number + 1 >= self.rules.hands_per_match
        self.phase = Phase.MATCH_OVER if last else Phase.HAND_OVER

    # ------------------------------------------------------------------ outcomes
    def hand_winners(self) -> list[int]:
        """The closer, or in a blocked hand the lowest totals (R11f, R11h)."""
        if self.hand_scores is None:
            return []
        if self.closer is not None:
            return [self.closer]
        low = min(self.hand_scores)
        return [p for p, s in enumerate(self.hand_scores) if s == low]

    def match_winners(self) -> list[int]:
        """Lowest match total; ties share the win (R10, R11f)."""
        low = min(self.match_scores)
        return [p for p, s in enumerate(self.match_scores) if s == low]

    def hand_rewards(self, mode: str = "score", scale: float = 100.0) -> list[float]:
        """Zero-sum rewards of the finished hand (R11h, E5)."""
        check_reward(mode, scale)
        if self.hand_scores is None:
            return [0.0] * self.num_players
        n = self.num_players
        if mode == "score":
            totals = self.hand_scores
            total = sum(totals)
            return [((total - t) / (n - 1) - t) / scale for t in totals]
        winners = self.hand_winners()
        if len(winners) == n:
            return [0.0] * n
        return [1.0 / len(winners) if p in winners else -1.0 / (n - len(winners)) for p in range(n)]

    # ------------------------------------------------------------------ conservation, copies
    def check_conservation(self) -> None:
        """E1: hands + table + stock + closing tile are exactly the 106 tiles."""
        total = self.hands.sum(axis=0) + self.table
        total = total + np.bincount(np.asarray(self.stock, dtype=np.int64), minlength=NUM_KINDS)
        if self.closing_tile != NO_TILE:
            total[self.closing_tile] += 1
        if not (total == FULL_COUNTS).all():
            bad = [int(k) for k in np.flatnonzero(total != FULL_COUNTS)]
            raise AssertionError(f"tile conservation broken (E1) for kinds {bad}")
        if (self.pending > self.hands[self.current]).any():
            raise AssertionError("the pending play holds tiles the hand does not")

    def clone(self) -> RummyState:
        other = RummyState.__new__(RummyState)
        other.__dict__.update(self.__dict__)
        other.hands = self.hands.copy()
        other.table = self.table.copy()
        other.stock = list(self.stock)
        other.pending = self.pending.copy()
        other.first_play_done = list(self.first_play_done)
        other.match_scores = list(self.match_scores)
        other.hand_scores = None if self.hand_scores is None else list(self.hand_scores)
        other._mask = None
        return other

    def determinize(self, observer: int, rng: np.random.Generator) -> RummyState:
        """A copy where what ``observer`` cannot see (other hands, stock order) is re-dealt at random.

        Hand sizes, the table, the closing tile and his own hand are kept (E2).
        """
        other = self.clone()
        hidden_owners = [p for p in range(self.num_players) if p != observer]
        pool = list(self.stock)
        for player in hidden_owners:
            pool.extend(np.repeat(np.arange(NUM_KINDS), self.hands[player]).tolist())
        pool_array = rng.permutation(np.asarray(pool, dtype=np.int64))
        start = 0
        for player in hidden_owners:
            size = self.hand_size(player)
            other.hands[player] = np.bincount(pool_array[start : start + size], minlength=NUM_KINDS)
            start += size
        other.stock = [int(k) for k in pool_array[start:]]
        if other.current != observer:
            other.pending[:] = 0  # another player's pending tiles are his own hand's: not observable
            other.pending_closing = False
        return other

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data, enough to rebuild the state exactly (:meth:`from_dict`)."""
        return {
            "game": "rummy",
            "rules": self.rules.to_dict(),
            "num_players": self.num_players,
            "hands": self.hands.tolist(),
            "table": self.table.tolist(),
            "closing_tile": self.closing_tile,
            "stock": list(self.stock),
            "pending": self.pending.tolist(),
            "pending_closing": self.pending_closing,
            "first_play_done": list(self.first_play_done),
            "current": self.current,
            "starter": self.starter,
            "phase": self.phase.name,
            "turn_started_empty": self.turn_started_empty,
            "blocked_turns": self.blocked_turns,
            "hand_number": self.hand_number,
            "closer": self.closer,
            "blocked": self.blocked,
            "hand_scores": self.hand_scores,
            "match_scores": list(self.match_scores),
            "turns": self.turns,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RummyState:
        """Inverse of :meth:`to_dict`; a malformed or impossible state raises ValueError (as Burako's)."""
        if not isinstance(data, dict) or data.get("game") != "rummy":
            raise ValueError(f"not a Rummy state: game={data.get('game') if isinstance(data, dict) else data!r}")
        try:
            state = cls(load_rummy_rules(data["rules"]), data["num_players"])
            n = state.num_players
            state.hands = np.asarray(data["hands"], dtype=np.int64).reshape(n, NUM_KINDS)
            state.table = np.asarray(data["table"], dtype=np.int64).reshape(NUM_KINDS)
            state.closing_tile = int(data["closing_tile"])
            state.stock = [int(k) for k in data["stock"]]
            state.pending = np.asarray(data["pending"], dtype=np.int64).reshape(NUM_KINDS)
            state.pending_closing = bool(data["pending_closing"])
            state.first_play_done = [bool(x) for x in data["first_play_done"]]
            state.current = int(data["current"])
            state.starter = int(data["starter"])
            state.phase = Phase[data["phase"]]
            state.turn_started_empty = bool(data["turn_started_empty"])
            state.blocked_turns = int(data["blocked_turns"])
            state.hand_number = int(data["hand_number"])
            state.closer = None if data["closer"] is None else int(data["closer"])
            state.blocked = bool(data["blocked"])
            state.hand_scores = None if data["hand_scores"] is None else [int(x) for x in data["hand_scores"]]
            state.match_scores = [int(x) for x in data["match_scores"]]
            state.turns = int(data["turns"])
        except (KeyError, TypeError, IndexError, OverflowError, ValueError) as exc:
            raise ValueError(f"malformed Rummy state data: {type(exc).__name__}: {exc}") from exc
        problems = state.consistency_problems()
        if problems:
            raise ValueError("malformed Rummy state data: " + "; ".join(problems))
        state.check_conservation()
        return state

    def consistency_problems(self) -> list[str]:
        """What makes a state read from data impossible: numbers out of range, lists of the wrong length,
        negative counts, a table that is no set of melds (R3), a pending play its player lacks."""
        n = self.num_players
        ranges = {
            "current": (self.current, 0, n - 1),
            "starter": (self.starter, 0, n - 1),
            "closer": (-1 if self.closer is None else self.closer, -1, n - 1),
            "closing_tile": (self.closing_tile, NO_TILE, NUM_KINDS - 1),
            "blocked_turns": (self.blocked_turns, 0, n),
            "hand_number": (self.hand_number, 0, self.rules.hands_per_match - 1),
            "turns": (self.turns, 0, None),
        }
        problems = [
            f"{name} {value} is outside {low}..{'' if high is None else high}"
            for name, (value, low, high) in ranges.items()
            if value < low or (high is not None and value > high)
        ]
        lists = {"first_play_done": self.first_play_done, "match_scores": self.match_scores}
        if self.hand_scores is not None:
            lists["hand_scores"] = self.hand_scores
        problems += [f"{name} has {len(v)} entries, not {n}" for name, v in lists.items() if len(v) != n]
        for name, counts in (("hands", self.hands), ("table", self.table), ("pending", self.pending)):
            if (counts < 0).any():
                problems.append(f"{name} holds a negative count")
        if any(not 0 <= k < NUM_KINDS for k in self.stock):
            problems.append("the stock holds a tile kind outside 0..52")
        if problems:
            return problems
        if (self.pending > self.hands[self.current]).any():
            problems.append("the pending play holds tiles the current player's hand does not")
        if self.pending_closing and self.closing_tile == NO_TILE:
            problems.append("pending_closing is set but no closing tile is left")
        if self.table.any() and not fits(self.table):
            problems.append("the table does not split into melds (R3)")
        return problems

    @classmethod
    def from_json(cls, text: str) -> RummyState:
        return cls.from_dict(json.loads(text))


def compile_kernels() -> float:
    """Compile (or load from numba's disk cache) the partition kernels Rummy's masks and plays run
    on, by playing a random hand and asking the search's questions; returns the seconds it took. The
    install script calls it once, so a first Rummy game does not spend ~25 s compiling (each process
    of a test run or a tournament did, until one had written the cache)."""
    import time

    from burako_env.rummy.partition import can_partition, max_tiles_placed

    start = time.perf_counter()
    rng = np.random.default_rng(0)
    state = RummyState.new_game(rng, num_players=2)
    while state.phase == Phase.PLAY:
        state.step(int(rng.choice(np.flatnonzero(state.legal_mask()))))
    table = np.zeros(NUM_KINDS, dtype=np.int64)
    table[[0, 1, 2]] = 1
    can_partition(table)
    max_tiles_placed(table, table)
    return time.perf_counter() - start
