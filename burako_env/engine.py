"""The Burako engine: a pure game state with an explicit phase.

No gymnasium, pettingzoo or torch here. Randomness only through an explicit
``numpy.random.Generator`` (the deal and :meth:`GameState.determinize`).

Phases (DESIGN.md 3):

| phase       | who acts      | legal actions (actions.py)                         |
|-------------|---------------|----------------------------------------------------|
| DRAW        | current       | DRAW_STOCK; TAKE_PILE if the pile is not empty     |
|             |               | (under V3, and its top tile melds this turn)       |
| PRIVILEGE   | mano          | KEEP / REJECT (first draw of a hand only, B17)     |
| PLAY        | current       | DISCARD k, MELD p, ADD (slot, k)                   |
| CHOOSE_END  | current       | CHOOSE 0 / 1 (a pending ambiguous addition)        |
| HAND_OVER   | nobody        | none: score the hand, then :meth:`next_hand`       |

Sides: with 4 players seats 0 and 2 are side 0, seats 1 and 3 side 1 (B3);
otherwise each player is his own side.

Hard limit: ``rules.max_turns`` turns per hand, after which the hand ends as
a truncation (no score), because players can trade the discard pile for ever.

Why one file of about 900 lines: it is one class, :class:`GameState`, the
readable truth the compiled core (fast.py) is held to, and it reads top to
bottom in the order of a hand: deal, the exact mask and its look-ahead (E3,
V3), the transitions, scoring (B25-B28), copies and determinization (E2),
JSON (E4). Each part is short and uses the same private fields; split across
files, the class would be harder to compare with its compiled twin
(docs/architecture.md maps them function by function).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import numpy as np

from burako_env import actions as A
from burako_env.actions import IllegalActionError
from burako_env.melds import (
    MELD_FEATURE_SIZE,
    PATTERN_COUNTS,
    PATTERNS,
    Meld,
    add_outcomes,
    allowed_patterns,
    canasta_bonus,
    candidate_kinds,
    describe_meld,
    encode_meld,
    meld_kinds,
    meld_value,
    patterns_available,
    qualifies_to_close,
)
from burako_env.outcomes import zero_sum_rewards
from burako_env.rules import Rules, load_rules
from burako_env.safe_yaml import is_integer
from burako_env.tiles import IS_WILD, KIND_COLOUR_LIST, NUM_KINDS, tile_name

#: the patterns holding each tile kind (V3's new melds), in action order
PATTERNS_WITH_KIND: tuple[tuple[int, ...], ...] = tuple(
    tuple(int(i) for i in np.flatnonzero(PATTERN_COUNTS[:, k] > 0)) for k in range(NUM_KINDS)
)

#: every tile kind, in kind order: the pool a determinization shuffles
_KIND_IDS = np.arange(NUM_KINDS)


class Phase(IntEnum):
    DRAW = 0
    PRIVILEGE = 1
    PLAY = 2
    CHOOSE_END = 3
    HAND_OVER = 4


#: why a hand ended
CLOSED, STOCK_EXHAUSTED, VOID, TRUNCATED = "closed", "stock_exhausted", "void", "truncated"


class Tables:
    """Facts derived once per rules object: values, allowed patterns, caches."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.values = rules.tile_value_array()
        self.allowed = allowed_patterns(rules)
        self.full_counts = rules.full_counts()
        self.full_tiles = np.repeat(np.arange(NUM_KINDS), self.full_counts)
        self._addable: dict[Meld, np.ndarray] = {}
        self._outcomes: dict[tuple[Meld, int], tuple[Meld, ...]] = {}
        self._encoded: dict[Meld, np.ndarray] = {}

    def __reduce__(self) -> tuple[Any, tuple[Rules]]:
        """Pickled (and deep-copied) as its rules: the other side derives, or reuses, its own tables.
        The caches are derived facts that fill to megabytes over a long run, and every state holding
        these tables would carry them along (a baseline's mirror sent to a worker process did: ~2 MB)."""
        return (tables_for, (self.rules,))

    def outcomes(self, meld: Meld, kind: int) -> tuple[Meld, ...]:
        key = (meld, kind)
        found = self._outcomes.get(key)
        if found is None:
            found = add_outcomes(meld, kind, self.rules)
            self._outcomes[key] = found
        return found

    def addable(self, meld: Meld) -> np.ndarray:
        """Bool per kind: a tile of that kind can be added to ``meld``."""
        found = self._addable.get(meld)
        if found is None:
            found = np.zeros(NUM_KINDS, dtype=bool)
            for kind in candidate_kinds(meld):
                found[kind] = bool(self.outcomes(meld, kind))
            self._addable[meld] = found
        return found

    def encoded(self, meld: Meld) -> np.ndarray:
        found = self._encoded.get(meld)
        if found is None:
            found = encode_meld(meld)
            self._encoded[meld] = found
        return found


@functools.lru_cache(maxsize=64)
def tables_for(rules: Rules) -> Tables:
    return Tables(rules)


def draw_first_mano(rng: np.random.Generator, num_players: int) -> int:
    """B5: the first mano of a match, drawn from ``rng`` before the first deal.
    The fast core (fast.py) draws through this and :func:`shuffle_tiles`, so the
    same seed deals the same hands in both."""
    return int(rng.integers(num_players))


def check_seat(seat: object, num_players: int, what: str) -> int:
    """``seat`` as an int, if it names a seat of the table (a ``ValueError`` naming ``what`` otherwise)."""
    if not is_integer(seat) or not 0 <= seat < num_players:
        raise ValueError(f"{what} must be a seat 0..{num_players - 1}, got {seat!r}")
    return int(seat)


def shuffle_tiles(rng: np.random.Generator, full_tiles: np.ndarray) -> np.ndarray:
    """The order of a hand's deal (B4): hands, then muertos, then the stock."""
    return rng.permutation(full_tiles)


@dataclass
class SideScore:
    """End-of-hand score breakdown for one side (B26)."""

    melded: int = 0
    canasta_bonus: int = 0
    closing_bonus: int = 0
    hand_penalty: int = 0
    muerto_penalty: int = 0

    @property
    def total(self) -> int:
        return self.melded + self.canasta_bonus + self.closing_bonus - self.hand_penalty - self.muerto_penalty

    def to_dict(self) -> dict[str, int]:
        return {
            "melded": self.melded,
            "canasta_bonus": self.canasta_bonus,
            "closing_bonus": self.closing_bonus,
            "hand_penalty": -self.hand_penalty,
            "muerto_penalty": -self.muerto_penalty,
            "total": self.total,
        }


class GameState:
    """A Burako match in progress: the current hand plus match scores (B28)."""

    __slots__ = (
        "_mask",
        "addable",
        "close_ready",
        "closer",
        "current",
        "end_reason",
        "hand_number",
        "hand_scores",
        "hand_size",
        "hands",
        "known",
        "mano",
        "match_scores",
        "match_winner",
        "meld_enc",
        "melds",
        "muerto_taken",
        "muerto_unplayed",
        "muertos",
        "num_players",
        "num_sides",
        "pending",
        "phase",
        "pile",
        "pile_counts",
        "pile_top_required",
        "privilege_tile",
        "rules",
        "side_of",
        "stock",
        "t",
        "turn",
    )

    # ----------------------------------------------------------------- creation
    def __init__(self, rules: Rules, num_players: int) -> None:
        rules.check_players(num_players)
        self.rules = rules
        self.t = tables_for(rules)
        self.num_players = num_players
        self.num_sides = rules.num_sides(num_players)
        self.side_of = tuple(p % self.num_sides for p in range(num_players))
        self.hands = np.zeros((num_players, NUM_KINDS), dtype=np.int8)
        self.hand_size = [0] * num_players
        self.stock: list[int] = []
        self.pile: list[int] = []
        self.pile_counts = np.zeros(NUM_KINDS, dtype=np.int8)
        self.muertos: list[list[int]] = [[] for _ in range(self.num_sides)]
        self.muerto_taken = [False] * self.num_sides
        self.muerto_unplayed = [False] * num_players
        self.melds: list[list[Meld]] = [[] for _ in range(self.num_sides)]
        self.meld_enc = np.zeros((self.num_sides, A.MAX_MELD_SLOTS, MELD_FEATURE_SIZE), dtype=np.float32)
        #: per side and slot, which tile kinds can be added (the ADD block of the mask)
        self.addable = np.zeros((self.num_sides, A.MAX_MELD_SLOTS * NUM_KINDS), dtype=bool)
        self.close_ready = [False] * self.num_sides
        self.known = np.zeros((num_players, NUM_KINDS), dtype=np.int8)
        self.phase = Phase.HAND_OVER
        self.current = 0
        self.mano = 0
        self.turn = 0
        self.privilege_tile = -1
        self.pending: tuple[int, int, tuple[Meld, ...]] | None = None
        self.pile_top_required = -1
        self.end_reason: str | None = None
        self.closer = -1
        self.hand_scores: list[SideScore] | None = None
        self.match_scores = [0] * self.num_sides
        self.hand_number = 0
        self.match_winner = -1
        self._mask: np.ndarray | None = None

    @classmethod
    def new_game(
        cls,
        rng: np.random.Generator,
        rules: Rules | str = "burako",
        num_players: int = 2,
        mano: int | None = None,
    ) -> GameState:
        """A new match, first hand dealt; the first mano is drawn from ``rng`` (B5)."""
        state = cls(load_rules(rules), num_players)
        first_mano = draw_first_mano(rng, num_players) if mano is None else check_seat(mano, num_players, "mano")
        state._deal(rng, first_mano)
        return state

    def _deal(self, rng: np.random.Generator, mano: int) -> None:
        """Deal a hand (B4): hands, muertos, stock; then the first turn (B17)."""
        n, rules = self.num_players, self.rules
        tiles = shuffle_tiles(rng, self.t.full_tiles).tolist()
        size = rules.hand_size[n]
        self.hands[:] = 0
        pos = 0
        for p in range(n):
            np.add.at(self.hands[p], tiles[pos : pos + size], 1)
            self.hand_size[p] = size
            pos += size
        for s in range(self.num_sides):
            self.muertos[s] = tiles[pos : pos + rules.muerto_size]
            pos += rules.muerto_size
        self.stock = tiles[pos:]
        self.pile = []
        self.pile_counts[:] = 0
        self.muerto_taken = [False] * self.num_sides
        self.muerto_unplayed = [False] * n
        self.melds = [[] for _ in range(self.num_sides)]
        self.meld_enc[:] = 0
        self.addable[:] = False
        self.close_ready = [False] * self.num_sides
        self.known[:] = 0
        self.mano = mano
        self.current = mano
        self.turn = 0
        self.pending = None
        self.pile_top_required = -1
        self.end_reason = None
        self.closer = -1
        self.hand_scores = None
        self.privilege_tile = -1
        self._mask = None
        if rules.mano_privilege:
            self.privilege_tile = self._draw_into(mano)
            self.phase = Phase.PRIVILEGE
        else:
            self.phase = Phase.DRAW

    def next_hand(self, rng: np.random.Generator) -> None:
        """Deal the next hand of the match: the mano passes left, except after
        a void hand, which the same mano deals again (B5, B24)."""
        if self.phase != Phase.HAND_OVER or self.match_over:
            raise IllegalActionError("next_hand: the current hand is not over, or the match is over")
        mano = self.mano if self.end_reason == VOID else (self.mano + 1) % self.num_players
        self.hand_number += 1
        self._deal(rng, mano)

    # ----------------------------------------------------------------- queries
    @property
    def match_over(self) -> bool:
        return self.match_winner >= 0

    @property
    def hand_over(self) -> bool:
        return self.phase == Phase.HAND_OVER

    def side(self, player: int) -> int:
        return self.side_of[player]

    def stock_size(self) -> int:
        return len(self.stock)

    def legal_mask(self) -> np.ndarray:
        """int8 mask over the whole action space (E3). Cached until the next
        action, and read-only: a caller's write would make :meth:`apply` accept
        an illegal action."""
        if self._mask is None:
            mask = self._compute_mask()
            mask.flags.writeable = False
            self._mask = mask
        return self._mask

    def legal_actions(self) -> list[int]:
        return np.flatnonzero(self.legal_mask()).tolist()

    def is_legal(self, action: int) -> bool:
        return 0 <= action < A.NUM_ACTIONS and bool(self.legal_mask()[action])

    # ----------------------------------------------------------------- mask
    def _compute_mask(self) -> np.ndarray:
        mask = self._base_mask()
        phase = self.phase
        if phase == Phase.DRAW:
            if mask[A.TAKE_PILE] and self.rules.pile_top_must_be_melded and not self._pile_take_ok():
                mask[A.TAKE_PILE] = 0
        elif phase in (Phase.PLAY, Phase.CHOOSE_END) and self._constrained():
            for action in np.flatnonzero(mask).tolist():
                if not self._action_ok(action):
                    mask[action] = 0
        return mask

    def _base_mask(self) -> np.ndarray:
        """The mask by the meld rules alone, before the look-ahead of
        :meth:`_action_ok` (exact whenever :meth:`_constrained` is False)."""
        mask = np.zeros(A.NUM_ACTIONS, dtype=np.int8)
        phase = self.phase
        if phase == Phase.DRAW:
            mask[A.DRAW_STOCK] = 1
            if self.pile:
                mask[A.TAKE_PILE] = 1
            return mask
        if phase == Phase.PRIVILEGE:
            mask[A.KEEP] = 1
            mask[A.REJECT] = 1
            return mask
        if phase == Phase.CHOOSE_END:
            assert self.pending is not None
            mask[A.CHOOSE_BASE : A.CHOOSE_BASE + len(self.pending[2])] = 1
            return mask
        if phase != Phase.PLAY:
            return mask
        p = self.current
        side = self.side_of[p]
        hand = self.hands[p]
        present = hand > 0
        if self.pile_top_required < 0:
            mask[A.DISCARD_BASE : A.MELD_BASE] = present
        mask[A.MELD_BASE : A.ADD_BASE] = patterns_available(hand) & self.t.allowed
        used = len(self.melds[side]) * NUM_KINDS
        if used:
            adds = self.addable[side, :used].reshape(-1, NUM_KINDS) & present
            mask[A.ADD_BASE : A.ADD_BASE + used] = adds.reshape(-1)
        return mask

    def _constrained(self) -> bool:
        """Whether some PLAY/CHOOSE_END actions could break B23 or V3 or leave
        the player stuck (E3), so each needs the exact look-ahead. Otherwise
        the base mask is exact: with 5+ tiles any play leaves 2+, and a
        discard that keeps a tile always ends the turn legally."""
        if self.pile_top_required >= 0:
            return True
        p = self.current
        side = self.side_of[p]
        if not self.muerto_taken[side]:
            # A play that empties the hand takes the muerto (B20), which holds
            # 2+ tiles (rules.py refuses fewer): one of them can always be
            # discarded without closing (B23), so the base mask is exact.
            return False
        if self.hand_size[p] > 4:
            return False
        # Ready to close: only a rule where an addition can spoil the canasta
        # (a wild added to the only clean one) needs the look-ahead.
        return not self.close_ready[side] or self.rules.close_requires_clean_canasta

    def _action_ok(self, action: int) -> bool:
        """Exact legality of a base-legal PLAY or CHOOSE_END action: it breaks
        no rule (B23: no emptying the hand without the canasta to close; V3:
        no discard while the taken pile's top tile is unmelded) and leaves the
        player a way to go on (E3)."""
        if self.pile_top_required >= 0 and A.DISCARD_BASE <= action < A.MELD_BASE:
            return False  # V3
        child = self.clone()
        child._mask = None
        child._apply_unchecked(action)
        return child._legal_after(self.current)

    def _legal_after(self, player: int) -> bool:
        """Judge the state just reached by ``player``'s own action."""
        if self.phase == Phase.HAND_OVER:
            if self.end_reason == CLOSED:
                return self.close_ready[self.side_of[player]]  # B22/B23
            return True
        if self.current != player or self.phase not in (Phase.PLAY, Phase.CHOOSE_END):
            return True  # the turn ended
        return self._alive()

    def _alive(self) -> bool:
        """Whether the player to act in PLAY/CHOOSE_END has a legal action."""
        if self.phase == Phase.CHOOSE_END:
            assert self.pending is not None
            return any(self._action_ok(A.CHOOSE_BASE + i) for i in range(len(self.pending[2])))
        p = self.current
        side = self.side_of[p]
        required = self.pile_top_required
        if required < 0:
            if self.hand_size[p] >= 2 or not self.muerto_taken[side] or self.close_ready[side]:
                return True  # a discard is legal
            last = int(np.flatnonzero(self.hands[p])[0])  # B23: the last tile must close
            return any(qualifies_to_close(o, self.rules) for m in self.melds[side] for o in self.t.outcomes(m, last))
        return self._v3_open()

    def _v3_open(self) -> bool:
        """V3 [decision]: whether some sequence of legal plays within this turn
        melds the taken pile's top tile and leaves the turn a legal end (E3).

        Two facts keep the search small. A play that does not build the meld
        that will hold the tile can wait until the tile is melded: it uses
        other tiles and another meld, and the hand cannot empty while the tile
        is in it. And a new meld holding the tile can always be started from
        a 3-tile pattern holding it (any 3 consecutive places of a run, any 3
        tiles of a set, at most one wild), the rest added after. So: the
        patterns holding the tile, the tile added to each of the side's melds
        as they stand, then for each meld the sequences of additions to that
        meld alone (B10/B11 moves included), depth first, each meld reached
        once."""
        required = self.pile_top_required
        base = self._base_mask()
        for pattern in PATTERNS_WITH_KIND[required]:
            action = A.MELD_BASE + pattern
            if base[action] and self._action_ok(action):
                return True
        p = self.current
        side = self.side_of[p]
        slots = range(len(self.melds[side]))
        if self.hands[p, required] > 0:  # the tile itself to every meld first
            for slot in slots:
                for outcome in self.t.outcomes(self.melds[side][slot], required):
                    child = self.clone()
                    child._mask = None
                    child._place(p, slot, required, outcome)
                    if child._legal_after(p):
                        return True
        return any(self._chain_open(slot, set(), tile_tried=True) for slot in slots)

    def _chain_open(self, slot: int, seen: set[Meld], tile_tried: bool = False) -> bool:
        """V3: additions to meld ``slot`` alone reach one of the required
        tile that leaves a legal state (``tile_tried``: the tile alone was
        already tried on this meld as it stands). Only a run of the
        tile's colour, or any run for a wild, can be prepared by other
        additions (extending an end, B10/B11 moves); a set never: more tiles
        only block it."""
        p = self.current
        side = self.side_of[p]
        required = self.pile_top_required
        meld = self.melds[side][slot]
        if not (meld.is_run and (IS_WILD[required] or KIND_COLOUR_LIST[required] == meld.colour)):
            return False
        present = self.hands[p] > 0
        addable = self.addable[side, slot * NUM_KINDS : (slot + 1) * NUM_KINDS] & present
        kinds = np.flatnonzero(addable).tolist()
        kinds.sort(key=lambda k: k != required)  # the tile itself first
        if tile_tried:
            kinds = [k for k in kinds if k != required]
        for kind in kinds:
            for outcome in self.t.outcomes(meld, kind):
                child = self.clone()
                child._mask = None
                child._place(p, slot, kind, outcome)
                if kind == required:
                    if child._legal_after(p):
                        return True
                elif outcome not in seen:
                    seen.add(outcome)
                    if child._chain_open(slot, seen):
                        return True
        return False

    def _pile_take_ok(self) -> bool:
        """V3: the pile may be taken only if its top tile can then be melded
        by some sequence of legal plays within the turn (:meth:`_v3_open`)."""
        child = self.clone()
        child._mask = None
        child._apply_unchecked(A.TAKE_PILE)
        return child._alive()

    # ----------------------------------------------------------------- apply
    def apply(self, action: int) -> None:
        """Apply one action. An illegal or out-of-range action raises
        :class:`IllegalActionError` and changes nothing."""
        action = A.action_id(action)
        if not self.legal_mask()[action]:
            raise IllegalActionError(
                f"action {action} ({A.describe_action(action, self.rules.cards)}) is not legal for "
                f"player {self.current} in phase {self.phase.name}"
            )
        self._apply_unchecked(action)

    def _apply_unchecked(self, action: int) -> None:
        """The transition itself; legality was checked by the caller."""
        self._mask = None
        phase = self.phase
        p = self.current
        if phase == Phase.DRAW:
            self.muerto_unplayed[p] = False
            if action == A.DRAW_STOCK:
                self._draw_into(p)
            else:
                self._take_pile(p)
            self.phase = Phase.PLAY
        elif phase == Phase.PRIVILEGE:
            if action == A.REJECT:
                tile = self.privilege_tile
                self._remove(p, tile)
                self.pile.append(tile)
                self.pile_counts[tile] += 1
                self._draw_into(p)
            self.privilege_tile = -1
            self.phase = Phase.PLAY
        elif phase == Phase.CHOOSE_END:
            assert self.pending is not None
            slot, kind, outcomes = self.pending
            self.pending = None
            self.phase = Phase.PLAY
            self._place(p, slot, kind, outcomes[action - A.CHOOSE_BASE])
        else:
            what, a, b = A.decode(action)
            if what == A.DISCARD:
                self._discard(p, a)
            elif what == A.MELD:
                self._meld(p, a)
            else:
                outcomes = self.t.outcomes(self.melds[self.side_of[p]][a], b)
                if len(outcomes) > 1:
                    self.pending = (a, b, outcomes)
                    self.phase = Phase.CHOOSE_END
                else:
                    self._place(p, a, b, outcomes[0])

    def _draw_into(self, p: int) -> int:
        tile = self.stock.pop()
        self.hands[p, tile] += 1
        self.hand_size[p] += 1
        return tile

    def _take_pile(self, p: int) -> None:
        if self.rules.pile_top_must_be_melded:
            self.pile_top_required = self.pile[-1]
        self.hands[p] += self.pile_counts
        self.known[p] += self.pile_counts
        self.hand_size[p] += len(self.pile)
        self.pile = []
        self.pile_counts[:] = 0

    def _remove(self, p: int, kind: int) -> None:
        self.hands[p, kind] -= 1
        self.hand_size[p] -= 1
        if self.known[p, kind] > 0:
            self.known[p, kind] -= 1

    def _discard(self, p: int, kind: int) -> None:
        self._remove(p, kind)
        self.pile.append(kind)
        self.pile_counts[kind] += 1
        if self.hand_size[p] == 0:
            side = self.side_of[p]
            if not self.muerto_taken[side]:
                self._take_muerto(p)  # indirect take (B21): played from the next turn
                self.muerto_unplayed[p] = True
            else:
                self._end_hand(CLOSED, closer=p)  # closing by discard (B22)
                return
        self._end_turn()

    def _meld(self, p: int, pattern: int) -> None:
        meld = PATTERNS[pattern]
        for kind in meld_kinds(meld):
            self._remove(p, kind)
        side = self.side_of[p]
        slot = len(self.melds[side])
        self.melds[side].append(meld)
        self._meld_changed(side, slot, meld)
        if self.pile_top_required >= 0 and PATTERN_COUNTS[pattern, self.pile_top_required]:
            self.pile_top_required = -1
        self._after_meld(p)

    def _place(self, p: int, slot: int, kind: int, meld: Meld) -> None:
        self._remove(p, kind)
        side = self.side_of[p]
        self.melds[side][slot] = meld
        self._meld_changed(side, slot, meld)
        if kind == self.pile_top_required:
            self.pile_top_required = -1
        self._after_meld(p)

    def _meld_changed(self, side: int, slot: int, meld: Meld) -> None:
        self.meld_enc[side, slot] = self.t.encoded(meld)
        self.addable[side, slot * NUM_KINDS : (slot + 1) * NUM_KINDS] = self.t.addable(meld)
        self.close_ready[side] = any(qualifies_to_close(m, self.rules) for m in self.melds[side])

    def _after_meld(self, p: int) -> None:
        if self.hand_size[p] != 0:
            return
        side = self.side_of[p]
        if not self.muerto_taken[side]:
            self._take_muerto(p)  # direct take (B20): same turn goes on
        else:
            self._end_hand(CLOSED, closer=p)  # closing by melding (B22)

    def _take_muerto(self, p: int) -> None:
        side = self.side_of[p]
        muerto = self.muertos[side]
        np.add.at(self.hands[p], muerto, 1)
        self.hand_size[p] += len(muerto)
        self.muertos[side] = []
        self.muerto_taken[side] = True

    def _end_turn(self) -> None:
        self.turn += 1
        if self.turn >= self.rules.max_turns:
            self._end_hand(TRUNCATED)
            return
        self.current = (self.current + 1) % self.num_players
        if not self.stock:
            self._end_hand(STOCK_EXHAUSTED)  # B24: before the draw
            return
        self.phase = Phase.DRAW

    # ----------------------------------------------------------------- scoring
    def _end_hand(self, reason: str, closer: int = -1) -> None:
        self.phase = Phase.HAND_OVER
        self.pending = None
        self.closer = closer
        self._mask = None
        if reason == STOCK_EXHAUSTED and not any(m.is_canasta for side in self.melds for m in side):
            reason = VOID  # B24
        self.end_reason = reason
        if reason in (VOID, TRUNCATED):
            self.hand_scores = None
            return
        self.hand_scores = self.score_sides()
        for s, score in enumerate(self.hand_scores):
            self.match_scores[s] += score.total
        self._check_match_end()

    def score_sides(self) -> list[SideScore]:
        """The score breakdown of each side for the hand as it stands (B25-B27)."""
        rules, values = self.rules, self.t.values
        scores = [SideScore() for _ in range(self.num_sides)]
        for s in range(self.num_sides):
            score = scores[s]
            for meld in self.melds[s]:
                score.melded += meld_value(meld, values)
                score.canasta_bonus += canasta_bonus(meld, rules)
            untaken = not self.muerto_taken[s]
            for p in range(self.num_players):
                if self.side_of[p] != s:
                    continue
                if self.muerto_unplayed[p] and rules.unplayed_indirect_muerto_counts_as_untaken:
                    untaken = True  # its tiles (his whole hand) are not counted
                    continue
                score.hand_penalty += int(values @ self.hands[p].astype(np.int64))
            if untaken:
                score.muerto_penalty = rules.muerto_penalty
        if self.closer >= 0:
            scores[self.side_of[self.closer]].closing_bonus = rules.closing_bonus
        return scores

    def _check_match_end(self) -> None:
        """B28: the match ends at the end of a hand where a side has reached
        the target; the highest total wins; a tie at the top plays on."""
        best = max(self.match_scores)
        if best < self.rules.target:
            return
        leaders = [s for s, v in enumerate(self.match_scores) if v == best]
        if len(leaders) == 1:
            self.match_winner = leaders[0]

    def side_rewards(self) -> list[float]:
        """Zero-sum hand result per side (E5): :func:`zero_sum_rewards`."""
        return zero_sum_rewards(self.hand_scores, self.num_sides)

    # ----------------------------------------------------------------- copies
    def clone(self) -> GameState:
        """An independent copy (melds are immutable values, copied shallowly)."""
        new = GameState.__new__(GameState)
        new.rules = self.rules
        new.t = self.t
        new.num_players = self.num_players
        new.num_sides = self.num_sides
        new.side_of = self.side_of
        new.hands = self.hands.copy()
        new.hand_size = self.hand_size[:]
        new.stock = self.stock[:]
        new.pile = self.pile[:]
        new.pile_counts = self.pile_counts.copy()
        new.muertos = [m[:] for m in self.muertos]
        new.muerto_taken = self.muerto_taken[:]
        new.muerto_unplayed = self.muerto_unplayed[:]
        new.melds = [m[:] for m in self.melds]
        new.meld_enc = self.meld_enc.copy()
        new.addable = self.addable.copy()
        new.close_ready = self.close_ready[:]
        new.known = self.known.copy()
        new.phase = self.phase
        new.current = self.current
        new.mano = self.mano
        new.turn = self.turn
        new.privilege_tile = self.privilege_tile
        new.pending = self.pending
        new.pile_top_required = self.pile_top_required
        new.end_reason = self.end_reason
        new.closer = self.closer
        new.hand_scores = None if self.hand_scores is None else [SideScore(**vars(s)) for s in self.hand_scores]
        new.match_scores = self.match_scores[:]
        new.hand_number = self.hand_number
        new.match_winner = self.match_winner
        new._mask = None
        if self._mask is not None:  # read-only, as legal_mask hands it out
            new._mask = self._mask.copy()
            new._mask.flags.writeable = False
        return new

    def __deepcopy__(self, memo: dict[int, Any]) -> GameState:
        """``copy.deepcopy`` is :meth:`clone`: the rules and their derived
        tables are immutable and shared (deep-copying them would copy the
        caches of every meld seen, for nothing)."""
        return self.clone()

    def unseen_counts(self, player: int) -> np.ndarray:
        """Tiles ``player`` cannot locate: other hands beyond their known
        tiles, the stock and the untaken muertos.

        Counted where they are, which by tile conservation (E1) equals the full
        set minus everything ``player`` sees, as ``fast.unseen_counts`` counts
        them: a few array sums, not a walk over every melded tile (the readable
        view determinizes on every heuristic move, bench/README.md)."""
        hidden = self.stock
        for muerto in self.muertos:  # a taken muerto is an empty list
            if muerto:
                hidden = hidden + muerto
        counts = np.bincount(hidden, minlength=NUM_KINDS)
        for q in range(self.num_players):
            if q != player:
                counts += self.hands[q]
                counts -= self.known[q]
        return counts

    def _shown_pending(self, player: int) -> int:
        """The kind of the tile another seat is placing (CHOOSE_END): every seat sees it, so it is in
        that hand in every determinization for ``player`` (a sample without it played CHOOSE into a
        count of -1). -1 when there is none, or when a copy of it is already known there."""
        if self.phase != Phase.CHOOSE_END or self.pending is None or player == self.current:
            return -1
        kind = self.pending[1]
        return -1 if self.known[self.current, kind] > 0 else kind

    def determinize(self, player: int, rng: np.random.Generator) -> GameState:
        """A copy where everything ``player`` cannot see is resampled: other
        hands (keeping the tiles known to be there because they were taken
        with the pile), the stock order and the untaken muertos."""
        new = self.clone()
        unseen = self.unseen_counts(player)
        shown = self._shown_pending(player)
        if shown >= 0:  # seen in the mover's hand: dealt to it below, not drawn from the pool
            unseen[shown] -= 1
        shuffled = rng.permutation(np.repeat(_KIND_IDS, unseen))
        pool = shuffled.tolist()
        pos = 0
        for q in range(self.num_players):
            if q == player:
                continue
            hidden = self.hand_size[q] - int(self.known[q].sum())
            if shown >= 0 and q == self.current:
                hidden -= 1
            dealt = np.bincount(shuffled[pos : pos + hidden], minlength=NUM_KINDS)
            new.hands[q] = self.known[q] + dealt
            if shown >= 0 and q == self.current:
                new.hands[q, shown] += 1
            if self.phase == Phase.PRIVILEGE and q == self.current and hidden > 0:
                new.privilege_tile = pool[pos + hidden - 1]
            pos += hidden
        for s in range(self.num_sides):
            size = len(self.muertos[s])
            new.muertos[s] = pool[pos : pos + size]
            pos += size
        new.stock = pool[pos:]
        assert len(new.stock) == len(self.stock)
        if player != self.current:
            new._mask = None
        return new

    # ----------------------------------------------------------------- text
    def describe(self, action: int) -> str:
        """``describe_action`` with this state's context."""
        cards = self.rules.cards
        what, a, b = A.decode(action)
        if what == A.TAKE:
            return f"take the discard pile ({len(self.pile)} tiles)"
        if what == A.ADD:
            side = self.side_of[self.current]
            if a < len(self.melds[side]):
                meld = self.melds[side][a]
                text = f"add {tile_name(b, cards)} to meld {a} ({describe_meld(meld, cards)})"
                outcomes = self.t.outcomes(meld, b)
                if len(outcomes) > 1:
                    text += ", then choose the end"
                return text
        if what == A.CHOOSE and self.pending is not None and a < len(self.pending[2]):
            slot, _kind, outcomes = self.pending
            end = "low end" if a == 0 else "high end"
            return f"{end}: meld {slot} becomes {describe_meld(outcomes[a], cards)}"
        return A.describe_action(action, cards)

    # ----------------------------------------------------------------- JSON
    def to_dict(self) -> dict[str, Any]:
        """Plain data: every field of the state (E4: same data, same game)."""

        def meld_data(m: Meld) -> list[Any]:
            return [int(m.is_run), m.colour, m.number, m.lo, m.hi, m.wild_kind, m.wild_pos, list(m.set_colours)]

        return {
            "format": 1,
            "rules": self.rules.to_dict(),
            "num_players": self.num_players,
            "hands": self.hands.tolist(),
            "stock": list(self.stock),
            "pile": list(self.pile),
            "muertos": [list(m) for m in self.muertos],
            "muerto_taken": list(self.muerto_taken),
            "muerto_unplayed": list(self.muerto_unplayed),
            "melds": [[meld_data(m) for m in side] for side in self.melds],
            "known": self.known.tolist(),
            "phase": self.phase.name,
            "current": self.current,
            "mano": self.mano,
            "turn": self.turn,
            "privilege_tile": self.privilege_tile,
            "pending": None
            if self.pending is None
            else [self.pending[0], self.pending[1], [meld_data(m) for m in self.pending[2]]],
            "pile_top_required": self.pile_top_required,
            "end_reason": self.end_reason,
            "closer": self.closer,
            "hand_scores": None if self.hand_scores is None else [vars(s).copy() for s in self.hand_scores],
            "match_scores": list(self.match_scores),
            "hand_number": self.hand_number,
            "match_winner": self.match_winner,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GameState:
        """Inverse of :meth:`to_dict`; a malformed state raises ValueError."""
        try:
            state = cls(load_rules(data["rules"]), int(data["num_players"]))

            def meld_of(d: list[Any]) -> Meld:
                return Meld(bool(d[0]), int(d[1]), int(d[2]), int(d[3]), int(d[4]), int(d[5]), int(d[6]), tuple(d[7]))  # type: ignore[arg-type]

            state.hands = np.array(data["hands"], dtype=np.int8).reshape(state.num_players, NUM_KINDS)
            state.hand_size = [int(x) for x in state.hands.sum(axis=1)]
            state.stock = [int(x) for x in data["stock"]]
            state.pile = [int(x) for x in data["pile"]]
            state.pile_counts = np.bincount(state.pile, minlength=NUM_KINDS).astype(np.int8)
            state.muertos = [[int(x) for x in m] for m in data["muertos"]]
            state.muerto_taken = [bool(x) for x in data["muerto_taken"]]
            state.muerto_unplayed = [bool(x) for x in data["muerto_unplayed"]]
            state.melds = [[meld_of(m) for m in side] for side in data["melds"]]
            for s, side in enumerate(state.melds):
                for j, m in enumerate(side):
                    state._meld_changed(s, j, m)
            state.known = np.array(data["known"], dtype=np.int8).reshape(state.num_players, NUM_KINDS)
            state.phase = Phase[data["phase"]]
            state.current = int(data["current"])
            state.mano = int(data["mano"])
            state.turn = int(data["turn"])
            state.privilege_tile = int(data["privilege_tile"])
            pend = data["pending"]
            state.pending = None if pend is None else (int(pend[0]), int(pend[1]), tuple(meld_of(m) for m in pend[2]))
            state.pile_top_required = int(data["pile_top_required"])
            state.end_reason = data["end_reason"]
            state.closer = int(data["closer"])
            hs = data["hand_scores"]
            state.hand_scores = None if hs is None else [SideScore(**s) for s in hs]
            state.match_scores = [int(x) for x in data["match_scores"]]
            state.hand_number = int(data["hand_number"])
            state.match_winner = int(data["match_winner"])
        except (KeyError, TypeError, IndexError, OverflowError) as exc:
            raise ValueError(f"malformed game state data: {type(exc).__name__}: {exc}") from exc
        problems = state._scalar_problems()
        if problems:
            raise ValueError("malformed game state data: " + "; ".join(problems))
        state.check_conservation()
        return state

    def _scalar_problems(self) -> list[str]:
        """The single numbers of a state read from data, each in its range (seats, sides, tile kinds)."""
        n, sides = self.num_players, self.num_sides
        ranges = {
            "current": (self.current, 0, n - 1),
            "mano": (self.mano, 0, n - 1),
            "closer": (self.closer, -1, n - 1),
            "match_winner": (self.match_winner, -1, sides - 1),
            "privilege_tile": (self.privilege_tile, -1, NUM_KINDS - 1),
            "pile_top_required": (self.pile_top_required, -1, NUM_KINDS - 1),
            "turn": (self.turn, 0, self.rules.max_turns),
            "hand_number": (self.hand_number, 0, None),
        }
        problems = [
            f"{name} {value} is outside {low}..{'' if high is None else high}"
            for name, (value, low, high) in ranges.items()
            if value < low or (high is not None and value > high)
        ]
        if self.end_reason not in (None, CLOSED, STOCK_EXHAUSTED, VOID, TRUNCATED):
            problems.append(f"end_reason {self.end_reason!r} is not one of closed, stock_exhausted, void, truncated")
        return problems

    @classmethod
    def from_json(cls, text: str) -> GameState:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"game state is not valid JSON: {exc}") from exc
        return cls.from_dict(data)

    # ----------------------------------------------------------------- checks
    def tile_counts(self) -> np.ndarray:
        """Every tile's location summed: hands + melds + pile + stock + untaken muertos (E1)."""
        counts = self.hands.sum(axis=0).astype(np.int64) + self.pile_counts
        extra: list[int] = list(self.stock)
        for m in self.muertos:
            extra.extend(m)
        for side in self.melds:
            for meld in side:
                extra.extend(meld_kinds(meld))
        counts += np.bincount(extra, minlength=NUM_KINDS)
        return counts

    def check_conservation(self) -> None:
        """Raise ValueError if E1 fails."""
        counts = self.tile_counts()
        if not np.array_equal(counts, self.t.full_counts):
            diff = {
                tile_name(k): int(counts[k] - self.t.full_counts[k])
                for k in np.flatnonzero(counts != self.t.full_counts)
            }
            raise ValueError(f"tile conservation (E1) broken: surplus/deficit by kind {diff}")
