"""The heuristics' look-ahead: what a hand could meld, simulated greedily on
plain lists (no engine state, no cloning), so it costs microseconds.

:func:`simulate_melding` answers two questions of a decision: what the pile
is worth (:func:`meld_gain`, the points a hand melds with naturals, with and
without the pile's tiles) and how many tiles a hand keeps after melding all
it can, wilds included (``Position.leftover``: is going out this turn possible).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from agents.heuristic.facts import extension, meld_progress
from burako_env.melds import PATTERNS, Meld, is_natural_addition, patterns_available
from burako_env.tiles import NUM_KINDS, WILD_KINDS

if TYPE_CHECKING:
    from agents.heuristic.position import Position

#: rounds of melding before the simulation stops (a hand never needs as many)
MAX_ROUNDS = 60


def meld_gain(hand: list[int], melds: list[Meld], ctx: Position) -> float:
    """What a hand could meld at once with natural tiles (additions, then new
    melds), as points: tile values plus canasta progress. Used to value the
    discard pile (tiles that meld) against the stock."""
    return simulate_melding(hand, melds, ctx, use_wilds=False)[0]


def simulate_melding(hand: list[int], melds: list[Meld], ctx: Position, use_wilds: bool) -> tuple[float, list[int]]:
    """Meld greedily on plain lists (no engine state): natural additions,
    then natural melds that start the longest meld, then (``use_wilds``)
    wild melds and wild additions. Returns the points gained (values and
    canasta progress) and the hand left over."""
    facts = ctx.facts
    weights = ctx.weights
    rules = ctx.rules
    t = ctx.state.t
    hand = hand[:]
    melds = list(melds)
    gain = 0.0
    for _ in range(MAX_ROUNDS):
        progressed = False
        held = [k for k in range(NUM_KINDS) if hand[k] > 0]  # the kinds worth trying, in kind order
        for j, meld in enumerate(melds):
            addable = t.addable(meld)
            for k in held:
                if hand[k] <= 0 or not addable[k]:
                    continue
                natural = [o for o in t.outcomes(meld, k) if is_natural_addition(meld, o)]
                if natural:
                    new = natural[0]
                    gain += facts.values[k] + meld_progress(new, facts, weights) - meld_progress(meld, facts, weights)
                    hand[k] -= 1
                    melds[j] = meld = new
                    addable = t.addable(meld)
                    progressed = True
        if progressed:
            continue
        available = patterns_available(np.asarray(hand, dtype=np.int8))
        choices = np.flatnonzero(available & facts.natural_allowed)
        if choices.size == 0 and use_wilds:
            choices = np.flatnonzero(available & facts.allowed)
        if choices.size == 0:
            if use_wilds:
                placed = _place_wild(hand, melds, ctx)
                if placed is not None:
                    gain += placed
                    continue
            break
        best, best_ext = -1, -1
        for i in choices.tolist():
            h2 = hand[:]
            for k in facts.pattern_kinds[i]:
                h2[k] -= 1
            ext = extension(PATTERNS[i], h2, rules)
            if ext > best_ext:
                best, best_ext = i, ext
        for k in facts.pattern_kinds[best]:
            hand[k] -= 1
        meld = PATTERNS[best]
        melds.append(meld)
        gain += facts.pattern_value[best] + meld_progress(meld, facts, weights) + weights.new_meld_bonus
    return gain, hand


def _place_wild(hand: list[int], melds: list[Meld], ctx: Position) -> float | None:
    """Add one wild of the hand to a clean meld (the longest); the gain, or
    None when no wild can go anywhere."""
    facts = ctx.facts
    weights = ctx.weights
    t = ctx.state.t
    for k in WILD_KINDS:  # the joker first, then the 2s
        if hand[k] <= 0:
            continue
        best_j, best_len = -1, -1
        for j, meld in enumerate(melds):
            if meld.clean and t.outcomes(meld, k) and meld.length > best_len:
                best_j, best_len = j, meld.length
        if best_j >= 0:
            meld = melds[best_j]
            new = t.outcomes(meld, k)[0]
            hand[k] -= 1
            melds[best_j] = new
            return facts.values[k] + meld_progress(new, facts, weights) - meld_progress(meld, facts, weights)
    return None


__all__ = ["meld_gain", "simulate_melding"]
