"""Scenario tests for the variants of docs/rules.md Part 2 (V1-V5) and each preset's
differences from ``burako``. Expected scores are computed by hand in comments."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import Engine, breakdown, discard, meld_of, play, score_dicts, scores

from burako_env import actions as A
from burako_env.engine import CLOSED, Phase
from burako_env.melds import make_run
from burako_env.render import render_table
from burako_env.rules import load_rules
from burako_env.scenario import build_state, pierna, run, tile

# --------------------------------------------------------------------------- V1: special canastas


def test_v1_real_canasta_bonus_replaces_clean_bonus_in_burako_br(engine: Engine) -> None:
    """V1 / burako_br: a clean 13-tile run 1-13 scores 500 instead of 200; a
    clean 14-tile run 1..1 scores 1000 instead of 200; a dirty one 100."""
    real = run("red", 1, 13)
    ace_to_ace = run("blue", 1, 14)
    dirty13 = run("black", 1, 13, wild="*", at=7)
    state = engine.build(
        2,
        "burako_br",
        hands={0: "Y5 Y9", 1: "K9"},
        melds={0: [real, ace_to_ace], 1: [dirty13]},
        muerto_taken={0: True, 1: True},
    )
    play(state, discard("Y9"))  # 1 tile left: the turn ends
    # side 0 (a 2 is worth 10 in burako_br): red 1..13 = 15 + 10 + 5*5 + 6*10 = 110;
    #         blue 1..1 = 110 + 15 = 125 -> 235; bonuses 500 (real) + 1000 (1-to-1); hand Y5 = -5
    # side 1: black 1..13 with a joker for the 7: 110 - 5 + 50 = 155, dirty 100; hand K9 -10
    assert score_dicts(state.score_sides()) == [breakdown(235, 1500, 0, 5, 0), breakdown(155, 100, 0, 10, 0)]


def test_v1_same_canastas_in_burako_score_only_the_clean_bonus(engine: Engine) -> None:
    state = engine.build(2, "burako", hands={0: "Y5", 1: "K9"}, melds={0: [run("red", 1, 13), run("blue", 1, 14)]})
    # side 0: red 1..13 = 15 + 20 + 5*5 + 6*10 = 120; blue 1..1 = 120 + 15 = 135 -> 255;
    #   two clean canastas 200 + 200; hand Y5 -5; muerto not taken -100
    # side 1: hand K9 -10; muerto -100
    assert score_dicts(state.score_sides()) == [breakdown(255, 400, 0, 5, 100), breakdown(0, 0, 0, 10, 100)]


def test_v1_ace_to_ace_in_buraco_cards_and_v2_two_worth_ten(engine: Engine) -> None:
    """buraco_cards: a clean ace-to-ace run scores 1000; a 2 is worth 10 (V2 table)."""
    state = engine.build(
        2,
        "buraco_cards",
        hands={0: "Y5", 1: "K9"},
        melds={0: [run("red", 1, 14)], 1: [run("black", 3, 5, wild="B2", at=4)]},
    )
    # side 0: red 1..1 = 15 + 10 + 5*5 + 6*10 + 15 = 125; ace to ace 1000; hand Y5 -5; muerto -100
    # side 1: black 3 + 5 + blue 2 (10 in cards) = 5 + 5 + 10 = 20; hand K9 -10; muerto -100
    assert score_dicts(state.score_sides()) == [breakdown(125, 1000, 0, 5, 100), breakdown(20, 0, 0, 10, 100)]


def test_burako_br_two_worth_ten(engine: Engine) -> None:
    state = engine.build(2, "burako_br", hands={0: "K2", 1: "R2 *"})
    # side 0: K2 -10; side 1: R2 10 + joker 50 = -60; neither took its muerto: -100 each
    assert score_dicts(state.score_sides()) == [breakdown(0, 0, 0, 10, 100), breakdown(0, 0, 0, 60, 100)]


# --------------------------------------------------------------------------- V2: cards


def test_v2_cards_have_no_jokers_and_the_twos_are_the_wilds(engine: Engine) -> None:
    rules = load_rules("buraco_cards")
    state = engine.new_game(np.random.default_rng(0), rules, 2)
    assert int(state.t.full_counts.sum()) == 104
    assert state.t.full_counts[52] == 0
    assert state.tile_counts()[52] == 0
    with pytest.raises(ValueError, match="joker"):
        engine.build(2, "buraco_cards", hands={0: "*"})
    # a 2 is still wild: black 3-(red 2)-5 is a legal meld
    state = engine.build(2, "buraco_cards", hands={0: "K3 K5 R2 Y9"})
    assert state.legal_mask()[meld_of(make_run(0, 3, 5, tile("R2"), 4))]


def test_buraco_cards_sequences_only_no_sets(engine: Engine) -> None:
    state = engine.build(2, "buraco_cards", hands={0: "K7 R7 B7 Y9 Y10 Y11"})
    mask = state.legal_mask()
    legal_melds = [a for a in np.flatnonzero(mask) if A.MELD_BASE <= a < A.ADD_BASE]
    assert legal_melds == [meld_of(make_run(3, 9, 11))]
    same = engine.build(2, "burako", hands={0: "K7 R7 B7 Y9 Y10 Y11"})
    assert same.legal_mask()[meld_of(pierna(7, "K R B"))]


def test_buraco_cards_renders_as_cards() -> None:
    state = build_state(2, "buraco_cards", hands={0: "K1 R11 B12 Y13 R2"}, melds={1: [run("red", 3, 5)]})
    text = render_table(state, viewer=0)
    assert "A♠" in text and "J♥" in text and "Q♦" in text and "K♣" in text and "2♥" in text
    assert state.describe(A.discard_action(tile("R11"))) == "discard J♥"
    assert "★" not in text


def test_buraco_cards_needs_a_clean_canasta_to_close(engine: Engine) -> None:
    """buraco_cards: muerto taken and only a dirty canasta -> may not go out;
    with a clean canasta -> closing by discard is legal."""
    dirty = run("black", 3, 9, wild="R2", at=5)
    state = engine.build(2, "buraco_cards", hands={0: "Y5 Y9"}, melds={0: [dirty]}, muerto_taken={0: True})
    state.apply(A.discard_action(tile("Y9")))  # leaves 1 tile: fine
    state = engine.build(2, "buraco_cards", hands={0: "Y5"}, melds={0: [dirty]}, muerto_taken={0: True})
    assert not state.legal_mask()[A.discard_action(tile("Y5"))]
    clean = run("black", 3, 9)
    state = engine.build(2, "buraco_cards", hands={0: "Y5"}, melds={0: [clean]}, muerto_taken={0: True})
    assert state.legal_mask()[A.discard_action(tile("Y5"))]
    state.apply(A.discard_action(tile("Y5")))
    assert state.end_reason == CLOSED and state.hand_scores is not None
    # same dirty canasta in burako closes fine
    state = engine.build(2, "burako", hands={0: "Y5"}, melds={0: [dirty]}, muerto_taken={0: True})
    assert state.legal_mask()[A.discard_action(tile("Y5"))]


def test_buraco_cards_adding_a_wild_to_the_only_clean_canasta_keeps_the_player_unstuck(engine: Engine) -> None:
    """E3 with clean-canasta-to-close: adding R2 as a wild would leave him with
    one tile he could never play, so only the natural placement is offered."""
    state = engine.build(2, "buraco_cards", hands={0: "K2 Y9"}, melds={0: [run("black", 3, 8)]}, muerto_taken={0: True})
    # K2 on black 3..8: natural on position 2 (clean 7-canasta) or wild at 9 (dirty)
    add = A.add_action(0, tile("K2"))
    assert state.legal_mask()[add]
    state.apply(add)
    assert state.phase == Phase.CHOOSE_END
    mask = state.legal_mask()
    assert mask[A.CHOOSE_BASE] == 1  # natural at the low end: clean canasta
    assert mask[A.CHOOSE_BASE + 1] == 0  # wild at the high end: dirty, then stuck


# --------------------------------------------------------------------------- V3: top tile


def test_v3_taken_pile_top_must_be_melded_before_discarding(engine: Engine) -> None:
    state = engine.build(2, "burako_casual", hands={0: "R5 R6 K9 Y1"}, pile="B11 R7", phase=Phase.DRAW, current=0)
    assert state.legal_mask()[A.TAKE_PILE]
    state.apply(A.TAKE_PILE)
    assert state.pile_top_required == tile("R7")
    mask = state.legal_mask()
    assert not mask[A.DISCARD_BASE : A.MELD_BASE].any()  # no discard yet
    meld = meld_of(run("red", 5, 7))
    assert mask[meld]
    state.apply(meld)
    assert state.pile_top_required == -1
    assert state.legal_mask()[A.discard_action(tile("K9"))]


def test_v3_pile_cannot_be_taken_when_its_top_cannot_be_melded(engine: Engine) -> None:
    state = engine.build(2, "burako_casual", hands={0: "R5 K9 Y1"}, pile="B11 R7", phase=Phase.DRAW)
    assert not state.legal_mask()[A.TAKE_PILE]
    assert state.legal_mask()[A.DRAW_STOCK]
    # the same position in burako: free to take (B16)
    free = engine.build(2, "burako", hands={0: "R5 K9 Y1"}, pile="B11 R7", phase=Phase.DRAW)
    assert free.legal_mask()[A.TAKE_PILE]


def test_v3_pile_tiles_count_for_the_top_tile_meld_and_additions(engine: Engine) -> None:
    """V3: the meld may use tiles from the pile; adding the top to an own meld counts."""
    state = engine.build(2, "burako_casual", hands={0: "K9 Y1"}, pile="R5 R6 R7", phase=Phase.DRAW)
    assert state.legal_mask()[A.TAKE_PILE]
    state = engine.build(
        2, "burako_casual", hands={0: "K9 Y1"}, melds={0: [run("red", 4, 6)]}, pile="R7", phase=Phase.DRAW
    )
    assert state.legal_mask()[A.TAKE_PILE]
    state.apply(A.TAKE_PILE)
    assert state.legal_mask()[A.add_action(0, tile("R7"))]
    assert not state.legal_mask()[A.discard_action(tile("K9"))]


# --------------------------------------------------------------------------- distinct colours


def test_burako_casual_sets_need_distinct_colours(engine: Engine) -> None:
    state = engine.build(2, "burako_casual", hands={0: "K7 K7 R7 B7 Y9"}, melds={0: [pierna(8, "K R B")]})
    mask = state.legal_mask()
    assert mask[meld_of(pierna(7, "K R B"))]
    assert not mask[meld_of(pierna(7, "K K R"))]
    burako = engine.build(2, "burako", hands={0: "K7 K7 R7 B7 Y9"})
    assert burako.legal_mask()[meld_of(pierna(7, "K K R"))]
    # additions: a fourth colour yes, a repeated colour no
    state = engine.build(2, "burako_casual", hands={0: "K8 Y8 Y9"}, melds={0: [pierna(8, "K R B")]})
    mask = state.legal_mask()
    assert mask[A.add_action(0, tile("Y8"))]
    assert not mask[A.add_action(0, tile("K8"))]


def test_burako_casual_sets_hold_at_most_four_tiles_a_wild_standing_for_a_missing_colour(engine: Engine) -> None:
    """Part 2 table, burako_casual: sets of "distinct colours (so at most 4)". A wild stands for a colour
    the set lacks: a set of all four colours takes no wild, and a three-colour set with a wild takes no
    fourth natural (both engines let either make a 5-tile set). Colours free (burako): both allowed."""
    full = engine.build(2, "burako_casual", hands={0: "R2 Y9 Y9 K10"}, melds={0: [pierna(8, "K R B Y")]})
    assert not full.legal_mask()[A.add_action(0, tile("R2"))]
    with_wild = engine.build(2, "burako_casual", hands={0: "Y8 Y9 Y9 K10"}, melds={0: [pierna(8, "K R B", "R2")]})
    assert not with_wild.legal_mask()[A.add_action(0, tile("Y8"))]
    three = engine.build(2, "burako_casual", hands={0: "R2 Y8 Y9 K10"}, melds={0: [pierna(8, "K R B")]})
    assert three.legal_mask()[A.add_action(0, tile("R2"))] and three.legal_mask()[A.add_action(0, tile("Y8"))]
    free = engine.build(2, "burako", hands={0: "R2 Y8 Y9 K10"}, melds={0: [pierna(8, "K R B Y")]})
    assert free.legal_mask()[A.add_action(0, tile("R2"))]
    free = engine.build(2, "burako", hands={0: "Y8 Y9 Y9 K10"}, melds={0: [pierna(8, "K R B", "R2")]})
    assert free.legal_mask()[A.add_action(0, tile("Y8"))]
    with pytest.raises(ValueError):  # such a set is no position of the game
        engine.build(2, "burako_casual", hands={0: "Y9 Y9 K10"}, melds={0: [pierna(8, "K R B Y", "R2")]})


# --------------------------------------------------------------------------- unplayed indirect muerto


@pytest.mark.parametrize(("preset", "penalised"), [("burako", False), ("burako_br", True), ("buraco_cards", True)])
def test_indirect_muerto_not_yet_played_when_the_opponent_closes(engine: Engine, preset: str, penalised: bool) -> None:
    """Part 2 table: in burako_br and buraco_cards an indirect muerto not yet
    played when the hand ends costs -100 as if not taken, its tiles not
    counted; in burako its tiles count in hand (B26)."""
    canasta = run("black", 3, 9)
    state = engine.build(
        2,
        preset,
        hands={0: "Y5", 1: "K10"},
        melds={1: [canasta]},
        muerto_taken={1: True},
        muertos={0: "R3 R4 R5 R6 R7 R8 R9 R10 R11 R12 R13"},
        stock="K11",
        current=0,
    )
    play(state, discard("Y5"))  # empties the hand: indirect take (B21)
    assert state.muerto_taken[0] and state.muerto_unplayed[0]
    assert state.current == 1 and state.phase == Phase.DRAW
    state.apply(A.DRAW_STOCK)  # K11
    state.apply(A.add_action(0, tile("K10")))
    state.apply(A.add_action(0, tile("K11")))  # hand empty, canasta held: closes (B22)
    assert state.end_reason == CLOSED and state.closer == 1
    # side 0, penalised: -100 as if not taken, the muerto's tiles not counted;
    #   otherwise red 3..7 = 5 x 5 = 25, red 8..13 = 6 x 10 = 60: -85 in hand, muerto taken
    # side 1: black 3..7 25 + K8..K11 40 = 65; clean canasta 200; closing 100
    side0 = breakdown(0, 0, 0, 0, 100) if penalised else breakdown(0, 0, 0, 85, 0)
    assert scores(state) == [side0, breakdown(65, 200, 100, 0, 0)]


# --------------------------------------------------------------------------- mano's privilege


@pytest.mark.parametrize(
    ("preset", "privilege"),
    [("burako", True), ("burako_royal", True), ("buraco_cards", False), ("burako_br", False), ("burako_casual", False)],
)
def test_mano_privilege_on_or_off(engine: Engine, preset: str, privilege: bool) -> None:
    """B17 per preset: the first decision is KEEP/REJECT only where the privilege is on."""
    rules = load_rules(preset)
    state = engine.new_game(np.random.default_rng(3), rules, 2)
    hand = rules.hand_size[2]
    if privilege:
        assert state.phase == Phase.PRIVILEGE
        assert state.hand_size[state.mano] == hand + 1
        assert state.legal_actions() == [A.KEEP, A.REJECT]
    else:
        assert state.phase == Phase.DRAW
        assert state.hand_size[state.mano] == hand
        assert state.legal_actions() == [A.DRAW_STOCK]


# --------------------------------------------------------------------------- V4, V5


def test_v4_three_player_casual_deal_and_individual_sides(engine: Engine) -> None:
    state = engine.new_game(np.random.default_rng(5), "burako_casual", 3)
    assert state.num_sides == 3 and state.side_of == (0, 1, 2)
    assert state.hand_size == [14, 14, 14]
    assert [len(m) for m in state.muertos] == [11, 11, 11]
    assert len(state.stock) == 31
    state.check_conservation()


def test_v4_three_player_rewards_are_zero_sum(engine: Engine) -> None:
    """V4/E5: with three individual sides a closed hand scores each side, and
    each side's reward is its total minus the mean of the other two."""
    state = engine.build(
        3,
        "burako_casual",
        hands={0: "Y5", 1: "K9", 2: "R1"},
        melds={0: [run("black", 3, 9)]},
        muerto_taken={0: True},
    )
    play(state, discard("Y5"))
    assert (state.end_reason, state.closer) == (CLOSED, 0)
    # side 0: K3..K7 25 + K8 K9 20 = 45; clean canasta 200; closing 100 -> 345
    # side 1: K9 -10, muerto -100 -> -110; side 2: R1 -15, muerto -100 -> -115
    assert scores(state) == [breakdown(45, 200, 100, 0, 0), breakdown(0, 0, 0, 10, 100), breakdown(0, 0, 0, 15, 100)]
    rewards = state.side_rewards()
    assert rewards == pytest.approx([345 - (-110 - 115) / 2, -110 - (345 - 115) / 2, -115 - (345 - 110) / 2])
    assert sum(rewards) == pytest.approx(0.0)


def test_v5_override_target_changes_match_end(engine: Engine) -> None:
    """V5/B28: an override of ``target`` moves the end of the match: side 0
    closes for 345 from 400; with target 500 it has won, with 3000 it plays on."""
    for overrides, target, winner in (({"target": 500}, 500, 0), (None, 3000, -1)):
        state = engine.build(
            2,
            "burako",
            overrides=overrides,
            hands={0: "Y5", 1: "K9"},
            melds={0: [run("black", 3, 9)]},
            muerto_taken={0: True},
            match_scores=[400, 0],
        )
        assert state.rules.target == target
        play(state, discard("Y5"))
        # side 0: 45 + 200 + 100 = 345; side 1: K9 -10, muerto -100 -> -110
        assert state.match_scores == [745, -110]
        assert (state.match_winner, state.match_over) == (winner, winner >= 0)


@pytest.mark.parametrize("preset", ["burako", "buraco_cards", "burako_br", "burako_royal", "burako_casual"])
def test_every_preset_deals_as_its_table_says(engine: Engine, preset: str) -> None:
    rules = load_rules(preset)
    for n in rules.players:
        state = engine.new_game(np.random.default_rng(n), rules, n)
        drawn = 1 if rules.mano_privilege else 0
        assert sum(state.hand_size) == n * rules.hand_size[n] + drawn
        assert len(state.stock) == rules.stock_size(n) - drawn
        state.check_conservation()


# --------------------------------------------------------------------------- V3a: three decisions


@pytest.mark.parametrize("preset", ["burako_br", "burako"])
def test_v3a_unplayed_indirect_muerto_counts_as_untaken_when_the_partner_closes(engine: Engine, preset: str) -> None:
    """V3a decision 1: the table rule "as if not taken" applies whoever ends
    the hand, the partner included. Seat 0 took the muerto indirectly (B21)
    and has not played since (B9 B10 in hand); his partner, seat 2, closes by
    discarding his last tile (B22). burako_br: side 0 pays the muerto penalty
    and seat 0's tiles count for nothing; burako (tiles count in hand): no
    penalty, seat 0's tiles count against side 0."""
    state = engine.build(
        4,
        preset,
        hands={0: "B9 B10", 1: "Y4", 2: "R3", 3: "Y5"},
        melds={0: [run("black", 3, 9)]},
        muerto_taken={0: True},
        muerto_unplayed={0: True},
        current=2,
    )
    play(state, discard("R3"))
    assert state.hand_over and state.end_reason == CLOSED
    # side 0: black 3..9 = 5 x 5 + 10 + 10 = 45, clean canasta 200, closing 100;
    #   burako_br: muerto -100 as if not taken, B9 B10 not counted -> 245
    #   burako: B9 B10 -20 in hand, muerto taken -> 325
    # side 1: Y4 + Y5 in hand -10, muerto never taken -100 -> -110
    side0 = breakdown(45, 200, 100, 0, 100) if preset == "burako_br" else breakdown(45, 200, 100, 20, 0)
    assert scores(state) == [side0, breakdown(0, 0, 0, 10, 100)]


def test_v3a_meld_leaving_a_tile_that_can_neither_be_melded_nor_discarded_is_illegal(engine: Engine) -> None:
    """V3a decision 2 (B15, B23, E3): side 0 has its muerto and no canasta.
    With R3 R4 R5 K9, melding red 3-4-5 would leave K9, which may not be
    discarded (B23) and fits no meld: illegal; every discard (keeping three
    tiles) is legal. With R3 R4 R5 R6 no meld is legal either (the last tile
    would fit only by emptying the hand). With R3 R4 R5 K9 K9 the meld leaves
    two tiles and is legal."""
    meld = meld_of(run("red", 3, 5))
    for hand, meld_legal in (("R3 R4 R5 K9", False), ("R3 R4 R5 R6", False), ("R3 R4 R5 K9 K9", True)):
        state = engine.build(2, "burako", hands={0: hand}, muerto_taken={0: True})
        kinds = sorted({tile(t) for t in hand.split()})
        legal = state.legal_actions()
        discards = [A.discard_action(k) for k in kinds]
        assert legal[: len(discards)] == discards
        assert (meld in legal) is meld_legal
        if not meld_legal:
            assert legal == discards


def test_v3a_truncated_hand_ends_unscored_like_a_void_hand(engine: Engine) -> None:
    """V3a decision 3: a hand that reaches ``max_turns`` ends truncated with
    no score at all (like a void hand, B24): no hand scores, match scores
    unchanged, zero rewards, no match winner."""
    rules = load_rules("burako", {"max_turns": 2})
    game = engine.new_game(np.random.default_rng(4), rules, 2)
    turns = 0
    while not game.hand_over:
        legal = np.flatnonzero(game.legal_mask())
        discards = legal[(legal >= A.DISCARD_BASE) & (legal < A.MELD_BASE)]
        game.apply(int(discards[0]) if len(discards) else int(legal[0]))
        turns += int(len(discards) > 0)
    assert turns == 2
    assert game.end_reason == "truncated"
    assert game.hand_scores is None
    assert game.match_scores == [0, 0]
    assert game.side_rewards() == [0.0, 0.0]
    assert not game.match_over
