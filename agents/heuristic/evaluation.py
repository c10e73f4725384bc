"""The static value of a position for the search's depth cutoff
(:func:`evaluate_sides`); ``agents.fast_search.evaluate_sides`` is its
compiled twin, held equal by ``tests/test_search_fast.py``."""

from __future__ import annotations

from agents.heuristic.facts import meld_progress, rule_facts
from agents.heuristic.weights import PLANNER_WEIGHTS, HeuristicWeights
from burako_env.engine import GameState, Phase
from burako_env.melds import meld_value
from burako_env.tiles import IS_WILD, NUM_KINDS


def evaluate_sides(state: GameState, weights: HeuristicWeights = PLANNER_WEIGHTS) -> list[float]:
    """A static value of each side's position, for the search's depth cutoff.

    Melds count with their canasta progress; a tile in hand costs a share of
    its value that grows as the stock runs out (early on most tiles still get
    melded), a tile that fits one of the side's melds costs little, and a
    wild is an asset while the stock is big; an untaken muerto costs its
    penalty (less, the closer the side is to emptying a hand), and a side
    that may close gets part of the closing bonus. On a finished hand it is
    the real score (B26). The numbers are the ``eval_*`` fields of ``weights``.
    """
    if state.phase == Phase.HAND_OVER:
        if state.hand_scores is None:
            return [0.0] * state.num_sides
        return [float(s.total) for s in state.hand_scores]
    w = weights
    rules = state.rules
    facts = rule_facts(rules)
    values = facts.values
    initial = max(1, rules.stock_size(state.num_players))
    left = min(1.0, len(state.stock) / initial)
    hand_cost = w.eval_hand_cost + w.eval_hand_cost_late * (1.0 - left)
    wild_asset = w.eval_wild_asset * left
    out: list[float] = []
    for s in range(state.num_sides):
        total = 0.0
        fits = [False] * NUM_KINDS
        for meld in state.melds[s]:
            total += meld_value(meld, state.t.values) + meld_progress(meld, facts, w)
            for k in facts.natural_adds(meld, state.t):
                fits[k] = True
        smallest = 99
        for q in range(state.num_players):
            if state.side_of[q] != s:
                continue
            hand = state.hands[q].tolist()
            for k, c in enumerate(hand):
                if not c:
                    continue
                if IS_WILD[k]:
                    total += c * (wild_asset - hand_cost * values[k])
                elif fits[k]:
                    total += c * w.eval_fit_share * values[k]
                else:
                    total -= c * hand_cost * values[k]
            smallest = min(smallest, state.hand_size[q])
        if not state.muerto_taken[s]:
            total -= rules.muerto_penalty * min(1.0, w.eval_muerto_floor + smallest / w.eval_hand_scale)
        elif state.close_ready[s]:
            total += rules.closing_bonus * max(0.0, w.eval_close_share - smallest / w.eval_hand_scale)
        out.append(total)
    return out


__all__ = ["evaluate_sides"]
