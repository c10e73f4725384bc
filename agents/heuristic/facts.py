"""What the heuristics know of tiles, rules and public positions.

Tile geometry (run neighbours, set partners), the per-rules lookups of
:class:`RuleFacts` (cached per rules object), and the public estimates:
what a meld is worth now (:func:`meld_progress`), how far a hand extends a
meld (:func:`extension`), and each side's hand score as a seat can estimate
it (:func:`side_estimates`). Nothing here decides; the policies do.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from agents.heuristic.weights import PLANNER_WEIGHTS, HeuristicWeights
from burako_env.engine import GameState
from burako_env.melds import (
    CANASTA_LENGTH,
    PATTERNS,
    Meld,
    allowed_patterns,
    canasta_bonus,
    is_natural_addition,
    meld_kinds,
    meld_value,
)
from burako_env.rules import Rules
from burako_env.tiles import (
    JOKER,
    KIND_COLOUR_LIST,
    KIND_NUMBER_LIST,
    NUM_COLOURS,
    NUM_KINDS,
    NUM_POSITIONS,
    kind_at,
    kind_of,
    run_positions,
)

#: the score of an action never to take
NEG = -1e9
#: rough value of one unseen tile in another player's hand (the default weights' ``mean_tile_value``)
MEAN_TILE_VALUE = PLANNER_WEIGHTS.mean_tile_value


# --------------------------------------------------------------------------- tile geometry


def _neighbours(kind: int, distance: int) -> tuple[int, ...]:
    """Same-colour kinds ``distance`` run positions away from ``kind``."""
    if kind == JOKER:
        return ()
    colour = KIND_COLOUR_LIST[kind]
    out: list[int] = []
    for pos in run_positions(kind):
        for step in (-distance, distance):
            q = pos + step
            if 1 <= q <= NUM_POSITIONS:
                other = kind_at(colour, q)
                if other != kind and other not in out:
                    out.append(other)
    return tuple(out)


NEIGHBOURS_1: tuple[tuple[int, ...], ...] = tuple(_neighbours(k, 1) for k in range(NUM_KINDS))
NEIGHBOURS_2: tuple[tuple[int, ...], ...] = tuple(_neighbours(k, 2) for k in range(NUM_KINDS))
#: the same number in the other colours (set partners); none for 2s and the joker
SAME_NUMBER: tuple[tuple[int, ...], ...] = tuple(
    ()
    if k == JOKER or KIND_NUMBER_LIST[k] == 2
    else tuple(kind_of(c, KIND_NUMBER_LIST[k]) for c in range(NUM_COLOURS) if c != KIND_COLOUR_LIST[k])
    for k in range(NUM_KINDS)
)


# --------------------------------------------------------------------------- per-rules facts


class RuleFacts:
    """Per-rules lookups the heuristics need (computed once per rules object)."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.values: list[int] = [int(v) for v in rules.tile_value_array()]
        allowed = allowed_patterns(rules)
        natural = np.array([m.wild_kind < 0 for m in PATTERNS], dtype=bool)
        self.allowed = allowed
        self.natural_allowed = allowed & natural
        #: natural allowed patterns that contain a kind: pattern -> its kinds
        self.natural_with: list[list[tuple[int, tuple[int, ...]]]] = [[] for _ in range(NUM_KINDS)]
        for i in np.flatnonzero(self.natural_allowed).tolist():
            kinds = tuple(meld_kinds(PATTERNS[i]))
            for k in set(kinds):
                self.natural_with[k].append((i, kinds))
        #: per kind, the other two tiles of each natural pattern holding it,
        #: and whether that pattern is a run
        self.natural_others: list[list[tuple[int, int, bool]]] = [[] for _ in range(NUM_KINDS)]
        for k in range(NUM_KINDS):
            for i, kinds in self.natural_with[k]:
                rest = list(kinds)
                rest.remove(k)
                self.natural_others[k].append((rest[0], rest[1], PATTERNS[i].is_run))
        #: per kind, each natural pattern holding it less every copy of that kind: the tiles a player
        #: must hold for the kind to complete the pattern in his hand
        self.natural_partners: list[tuple[tuple[int, ...], ...]] = [
            tuple(tuple(x for x in kinds if x != k) for _i, kinds in self.natural_with[k]) for k in range(NUM_KINDS)
        ]
        self.pattern_kinds: list[tuple[int, ...]] = [tuple(meld_kinds(m)) for m in PATTERNS]
        self.pattern_value: list[int] = [sum(self.values[k] for k in ks) for ks in self.pattern_kinds]
        self._natural_adds: dict[Meld, tuple[int, ...]] = {}
        bonus = rules.canasta_bonus
        self.clean_bonus = bonus["clean"]
        self.dirty_bonus = bonus["dirty"]

    def natural_adds(self, meld: Meld, tables: Any) -> tuple[int, ...]:
        """Kinds that extend ``meld`` as natural tiles (cached per meld)."""
        found = self._natural_adds.get(meld)
        if found is None:
            found = tuple(
                k
                for k in np.flatnonzero(tables.addable(meld)).tolist()
                if any(is_natural_addition(meld, o) for o in tables.outcomes(meld, k))
            )
            self._natural_adds[meld] = found
        return found


_FACTS: dict[int, tuple[Rules, RuleFacts]] = {}


def rule_facts(rules: Rules) -> RuleFacts:
    """The :class:`RuleFacts` of a rules object, cached by identity first
    (hashing a Rules serialises it, too slow for every decision)."""
    entry = _FACTS.get(id(rules))
    if entry is not None and entry[0] is rules:
        return entry[1]
    found = _rule_facts_by_value(rules)
    if len(_FACTS) > 256:
        _FACTS.clear()
    _FACTS[id(rules)] = (rules, found)  # holding the rules keeps its id unique
    return found


@functools.lru_cache(maxsize=32)
def _rule_facts_by_value(rules: Rules) -> RuleFacts:
    return RuleFacts(rules)


# --------------------------------------------------------------------------- public estimates


def meld_progress(meld: Meld, facts: RuleFacts, weights: HeuristicWeights = PLANNER_WEIGHTS) -> float:
    """What a meld is worth now: its tiles, plus its canasta bonus, or a share
    of the bonus it may still reach (a short meld rarely becomes a canasta)."""
    length = meld.length
    if length >= CANASTA_LENGTH:
        return canasta_bonus(meld, facts.rules)
    share = weights.canasta_share[length]
    if not meld.is_run and facts.rules.set_colours_distinct:
        return 0.0  # a set of distinct colours holds at most 4 tiles: never a canasta
    bonus = facts.clean_bonus if meld.clean else facts.dirty_bonus
    return share * bonus


def extension(meld: Meld, hand: list[int], rules: Rules) -> int:
    """How many tiles of ``hand`` (counts per kind) would extend ``meld``
    naturally, in a chain."""
    if meld.is_run:
        colour, count = meld.colour, 0
        pos = meld.lo - 1
        while pos >= 1 and hand[kind_at(colour, pos)] > 0 and pos != meld.wild_pos:
            count += 1
            pos -= 1
        pos = meld.hi + 1
        while pos <= NUM_POSITIONS and hand[kind_at(colour, pos)] > 0:
            count += 1
            pos += 1
        if meld.wild_kind >= 0 and hand[kind_at(colour, meld.wild_pos)] > 0:
            count += 1
        return count
    number = meld.number
    if rules.set_colours_distinct:  # one tile per colour, a wild standing for one: at most 4 tiles
        missing = sum(1 for c in range(NUM_COLOURS) if not meld.set_colours[c] and hand[kind_of(c, number)] > 0)
        return min(missing, NUM_COLOURS - meld.length)
    return sum(min(hand[kind_of(c, number)], 2 - meld.set_colours[c]) for c in range(NUM_COLOURS))


def side_estimates(state: GameState, viewer: int, weights: HeuristicWeights = PLANNER_WEIGHTS) -> list[float]:
    """Each side's hand score as ``viewer`` can estimate it from public facts
    (B26): melds and canastas exactly, other hands as size x mean tile value,
    the viewer's own hand exactly, -penalty for a muerto not taken."""
    rules = state.rules
    facts = rule_facts(rules)
    out: list[float] = []
    for s in range(state.num_sides):
        total = 0.0
        for meld in state.melds[s]:
            total += meld_value(meld, state.t.values) + canasta_bonus(meld, rules)
        for q in range(state.num_players):
            if state.side_of[q] != s:
                continue
            if q == viewer:
                total -= float(sum(facts.values[k] * c for k, c in enumerate(state.hands[q].tolist()) if c))
            else:
                total -= weights.mean_tile_value * state.hand_size[q]
        if not state.muerto_taken[s]:
            total -= rules.muerto_penalty
        out.append(total)
    return out


__all__ = [
    "MEAN_TILE_VALUE",
    "NEG",
    "NEIGHBOURS_1",
    "NEIGHBOURS_2",
    "SAME_NUMBER",
    "RuleFacts",
    "extension",
    "meld_progress",
    "rule_facts",
    "side_estimates",
]
