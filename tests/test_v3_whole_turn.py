"""V3 [decision] and E3 on the whole turn (issue 14, items 1 and 3).

V3: the taken pile's top tile must be melded in the same turn; taking the pile
is legal when *some sequence of legal plays within the turn* melds it (new
melds, additions, B10/B11 moves), and every play stays legal exactly while it
keeps such a sequence open (E3). Each scenario is checked on both engines (the
readable one and the compiled core), and the mask is compared with the
independent whole-turn oracle of ``tests/oracle.py`` on sampled states.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from oracle import (
    _PATTERN_CANON,
    _PATTERN_NEEDS,
    after_ok,
    canon_of,
    hand_counter,
    oracle_legal_actions,
    pattern_valid,
    placements,
)

from burako_env import actions as A
from burako_env.engine import CLOSED, GameState, Phase
from burako_env.fast import FastGame
from burako_env.rules import load_rules
from burako_env.scenario import build_state, hand_of, pierna, run, tile

CASUAL = load_rules("burako_casual")


class Both:
    """One scenario on both engines, played in lockstep: every mask must agree."""

    def __init__(self, state: GameState) -> None:
        self.slow = state
        self.fast = FastGame.from_game_state(state)

    def legal(self) -> list[int]:
        slow = self.slow.legal_actions()
        fast = np.flatnonzero(self.fast.legal_mask()).tolist()
        assert slow == fast, f"engines differ: readable {slow}, compiled {fast}"
        assert set(slow) == oracle_legal_actions(self.slow), "mask != whole-turn oracle"
        return slow

    def apply(self, action: int) -> None:
        assert action in self.legal(), f"{action} ({self.slow.describe(action)}) should be legal"
        self.slow.apply(action)
        self.fast.apply(action)
        assert self.fast.to_dict() == self.slow.to_dict()


def seat1_takes_or_draws(**scenario: object) -> Both:
    """A burako_casual table (V3), seat 1 to draw, on both engines."""
    return Both(build_state(2, "burako_casual", current=1, phase=Phase.DRAW, **scenario))


def test_v3_e3_pile_take_needs_two_additions_issue_repro() -> None:
    """V3/E3, the issue's reproduction: R7 on top of the pile fits red 3-4-5
    only after R6 is added, so taking the pile is legal ([0, 1], not [0]),
    then adding R6 is the only play, then R7, then the turn may end."""
    both = seat1_takes_or_draws(
        hands={1: "R6 K13 B9"},
        melds={1: [run("red", 3, 5)]},
        pile="K1 R7",
    )
    assert both.legal() == [A.DRAW_STOCK, A.TAKE_PILE]
    both.apply(A.TAKE_PILE)
    assert both.slow.pile_top_required == tile("R7")
    assert both.legal() == [A.add_action(0, tile("R6"))]  # no discard, nothing else keeps R7 meldable
    both.apply(A.add_action(0, tile("R6")))
    assert both.legal() == [A.add_action(0, tile("R7"))]
    both.apply(A.add_action(0, tile("R7")))
    assert both.slow.pile_top_required == -1
    assert both.slow.melds[1] == [run("red", 3, 7)]
    assert hand_of(both.slow, 1) == "K1 K13 B9"
    assert both.legal() == [A.discard_action(tile(t)) for t in ("K1", "K13", "B9")]


def test_v3_e3_top_joker_fits_after_a_displaced_two_turns_natural_b10_b11() -> None:
    """V3/E3 with B10/B11: red 3-4-[R2 on 5] holds a wild, so the top joker
    cannot join it; adding R5 moves the 2 to an end (B10), and at the low end
    it stands on position 2 of its own colour and turns natural (B11), the
    run is clean and the joker fits. Taking the pile is legal; choosing the
    high end (the 2 stays wild) closes every sequence, so it is not."""
    both = seat1_takes_or_draws(
        hands={1: "R5 B9 Y11"},
        melds={1: [run("red", 3, 5, wild="R2", at=5)]},
        pile="K1 *",
    )
    assert both.legal() == [A.DRAW_STOCK, A.TAKE_PILE]
    both.apply(A.TAKE_PILE)
    assert both.legal() == [A.add_action(0, tile("R5"))]
    both.apply(A.add_action(0, tile("R5")))
    assert both.slow.phase == Phase.CHOOSE_END
    assert both.legal() == [A.CHOOSE_BASE]  # low end: the 2 is natural again; high end: dead end
    both.apply(A.CHOOSE_BASE)
    assert both.slow.melds[1] == [run("red", 2, 5)]  # clean (B11)
    assert both.legal() == [A.add_action(0, tile("*"))]
    both.apply(A.add_action(0, tile("*")))
    assert both.slow.phase == Phase.CHOOSE_END  # the joker at either end
    assert both.legal() == [A.CHOOSE_BASE, A.CHOOSE_BASE + 1]
    both.apply(A.CHOOSE_BASE + 1)
    assert both.slow.melds[1] == [run("red", 2, 6, wild="*", at=6)]
    assert both.slow.pile_top_required == -1


def test_v3_e3_two_plays_before_the_top_tile_fits_then_close_b22_b23() -> None:
    """V3/E3 with B22/B23: side 1 has its muerto and no canasta; red 2-3-4-5
    on the table, R6 R7 in hand, R8 on the pile. R6 R7 R8 as a new meld would
    empty the hand without a canasta (B23), R8 does not fit 2-5: only after
    two plays (R6, then R7) does R8 fit, making a 7-tile canasta that closes
    the hand (B22). Taking the pile is legal; the new meld is not."""
    both = seat1_takes_or_draws(
        hands={1: "R6 R7"},
        melds={1: [run("red", 2, 5)]},
        pile="R8",
        muerto_taken={1: True},
    )
    assert both.legal() == [A.DRAW_STOCK, A.TAKE_PILE]
    both.apply(A.TAKE_PILE)
    assert both.legal() == [A.add_action(0, tile("R6"))]
    both.apply(A.add_action(0, tile("R6")))
    assert both.legal() == [A.add_action(0, tile("R7"))]
    both.apply(A.add_action(0, tile("R7")))
    assert both.legal() == [A.add_action(0, tile("R8"))]
    both.apply(A.add_action(0, tile("R8")))
    assert both.slow.phase == Phase.HAND_OVER and both.slow.end_reason == CLOSED and both.slow.closer == 1
    assert both.slow.melds[1] == [run("red", 2, 8)]


def test_v3_pile_still_refused_when_no_sequence_melds_the_top() -> None:
    """V3: the whole-turn search still refuses what no sequence allows: R9 on
    the pile, red 3-4-5 on the table, R6 but no R7 or wild in hand."""
    both = seat1_takes_or_draws(
        hands={1: "R6 K13 B9"},
        melds={1: [run("red", 3, 5)]},
        pile="K1 R9",
    )
    assert both.legal() == [A.DRAW_STOCK]


# --------------------------------------------------------------------------- mask == whole-turn oracle


def run_v3_oracle(num_players: int, target: int, seed0: int) -> Counter:
    """Mask (both engines) == whole-turn oracle on ``target`` burako_casual
    states: every state with a V3 decision (a draw with a pile, or a pending
    top tile) and one in ten of the others, along hands played by a random
    policy that prefers melds and additions (so piles get taken)."""
    stats: Counter = Counter()
    game = 0
    while stats["states"] < target:
        seed = seed0 + game
        slow = GameState.new_game(np.random.default_rng(seed), CASUAL, num_players)
        fast = FastGame.new_game(np.random.default_rng(seed), CASUAL, num_players)
        rng = np.random.default_rng([seed, 3])
        while not slow.hand_over and stats["states"] < target:
            mask = slow.legal_mask()
            assert mask.any(), "E3: the player to act has no legal action"
            assert np.array_equal(mask, fast.legal_mask()), f"engines differ (seed {seed})"
            v3 = slow.pile_top_required >= 0 or (slow.phase == Phase.DRAW and bool(slow.pile))
            if v3 or rng.random() < 0.1:
                legal = set(np.flatnonzero(mask).tolist())
                assert legal == oracle_legal_actions(slow), f"E3/V3: mask != oracle (seed {seed})"
                stats["states"] += 1
                stats["pending_top"] += slow.pile_top_required >= 0
                if slow.phase == Phase.DRAW and slow.pile:
                    stats["take_legal" if A.TAKE_PILE in legal else "take_refused"] += 1
            legal_now = np.flatnonzero(mask)
            plays = legal_now[legal_now >= A.MELD_BASE]
            choose = plays if len(plays) and rng.random() < 0.8 else legal_now
            if slow.phase == Phase.DRAW and mask[A.TAKE_PILE] and rng.random() < 0.6:
                choose = np.array([A.TAKE_PILE])
            action = int(rng.choice(choose))
            slow.apply(action)
            fast.apply(action)
        game += 1
    stats["games"] = game
    return stats


@pytest.mark.parametrize("num_players", [2, 4])
def test_v3_e3_mask_equals_whole_turn_oracle(num_players: int) -> None:
    """V3/E3: on sampled burako_casual states the mask of both engines equals
    the whole-turn oracle (1,000 states per player count here; the slow twin
    checks 5,000 per player count)."""
    stats = run_v3_oracle(num_players, 1000, seed0=140_000 + num_players)
    assert stats["take_legal"] >= 50 and stats["take_refused"] >= 50 and stats["pending_top"] >= 100, stats


@pytest.mark.slow
@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_v3_e3_mask_equals_whole_turn_oracle_slow(num_players: int) -> None:
    """V3/E3: the same on 5,000 burako_casual states per player count."""
    stats = run_v3_oracle(num_players, 5000, seed0=1_400_000 + num_players)
    assert stats["states"] == 5000, stats


# --------------------------------------------------------------------------- the oracle's search, checked


def brute_force_v3(state: GameState) -> bool:
    """V3 by brute force: every sequence of plays (any new 3-tile meld, any
    addition to any meld, in any order) from the DRAW state after taking the
    pile, until one melds the top tile and leaves an allowed situation. No
    shortcut: it checks the oracle's argument that only plays building the
    tile's own meld need to come first."""
    p = state.current
    side = state.side_of[p]
    required = state.pile[-1]
    rules = state.rules
    valid = pattern_valid(rules)
    failed: set = set()

    def search(hand: Counter, melds: tuple) -> bool:
        key = (tuple(sorted((+hand).items())), melds)
        if key in failed:
            return False
        for index, needs in enumerate(_PATTERN_NEEDS):
            if not valid[index] or any(hand[k] < n for k, n in needs.items()):
                continue
            after = hand - needs
            new = (*melds, _PATTERN_CANON[index])
            if needs[required] > 0:
                if after_ok(state, p, after, list(new), by_discard=False):
                    return True
            elif sum(after.values()) > 0 and search(after, new):
                return True
        for slot, meld in enumerate(melds):
            for kind in [k for k, n in hand.items() if n > 0]:
                after = hand.copy()
                after[kind] -= 1
                for outcome in placements(meld, kind, rules):
                    new = (*melds[:slot], outcome, *melds[slot + 1 :])
                    if kind == required:
                        if after_ok(state, p, after, list(new), by_discard=False):
                            return True
                    elif search(after, new):
                        return True
        failed.add(key)
        return False

    hand = hand_counter(state, p) + Counter(state.pile)
    return search(hand, tuple(canon_of(m) for m in state.melds[side]))


def random_small_v3_state(rng: np.random.Generator) -> GameState | None:
    """A burako_casual DRAW state with a small hand, one to three runs or
    sets on the player's side, a short pile, the muerto taken or not; None
    when the random pick asks for more copies of a tile than exist."""
    colours = ["black", "red", "blue", "yellow"]
    melds = []
    for _ in range(int(rng.integers(1, 4))):
        if rng.random() < 0.75:
            lo = int(rng.integers(1, 11))
            hi = min(14, lo + int(rng.integers(2, 6)))
            colour = colours[int(rng.integers(4))]
            if rng.random() < 0.3:
                at = int(rng.integers(lo, hi + 1))
                wild = "*" if rng.random() < 0.5 else f"{'KRBY'[colours.index(colour)]}2"
                melds.append(run(colour, lo, hi, wild=wild, at=at) if not (wild.endswith("2") and at == 2) else None)
            else:
                melds.append(run(colour, lo, hi))
        else:
            number = int(rng.choice([1, *range(3, 14)]))
            melds.append(pierna(number, "".join(rng.permutation(list("KRBY"))[:3])))
    melds = [m for m in melds if m is not None]
    letters = "KRBY"
    focus = letters[int(rng.integers(4))]
    hand = []
    for _ in range(int(rng.integers(1, 6))):
        letter = focus if rng.random() < 0.6 else letters[int(rng.integers(4))]
        hand.append("*" if rng.random() < 0.08 else f"{letter}{int(rng.integers(1, 14))}")
    pile = [f"{focus if rng.random() < 0.7 else letters[int(rng.integers(4))]}{int(rng.integers(1, 14))}"]
    if rng.random() < 0.3:
        pile.insert(0, f"{letters[int(rng.integers(4))]}{int(rng.integers(1, 14))}")
    if rng.random() < 0.1:
        pile[-1] = "*"
    try:
        return build_state(
            2,
            "burako_casual",
            hands={0: " ".join(hand)},
            melds={0: melds},
            pile=" ".join(pile),
            phase=Phase.DRAW,
            muerto_taken={0: bool(rng.random() < 0.5)},
        )
    except ValueError:
        return None


def test_v3_whole_turn_oracle_equals_brute_force_on_small_states() -> None:
    """V3: the oracle's whole-turn search (one meld's additions at a time)
    decides the pile take exactly as a brute-force search over every order of
    every play, on 400 random small burako_casual positions (the engines'
    masks too), with both answers well represented."""
    rng = np.random.default_rng(14)
    stats: Counter = Counter()
    while stats["states"] < 400:
        state = random_small_v3_state(rng)
        if state is None:
            continue
        expected = brute_force_v3(state)
        assert (A.TAKE_PILE in oracle_legal_actions(state)) is expected
        assert bool(state.legal_mask()[A.TAKE_PILE]) is expected
        assert bool(FastGame.from_game_state(state).legal_mask()[A.TAKE_PILE]) is expected
        stats["states"] += 1
        stats["legal" if expected else "refused"] += 1
    assert stats["legal"] >= 80 and stats["refused"] >= 80, stats
