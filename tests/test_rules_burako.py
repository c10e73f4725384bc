"""One scenario per rule of docs/rules.md Part 1 (B1-B28), preset ``burako``.

Every rule test builds a small table with :func:`burako_env.scenario.build_state`
(``engine.build``) and runs twice, on the readable engine and on the compiled
core (the ``engine`` fixture of ``tests/conftest.py``), asserting the exact
legal actions, the exact resulting melds, hands, phases and turns, and exact
score breakdowns: the same expectations for both engines. Every expected score is
computed by hand in the test (the arithmetic is in a comment); the engine's
scoring is never called to produce an expectation.

Tile values (B25): joker 50, any 2 20, 1 15, 8-13 10, 3-7 5.

Why one file of about 900 lines: it is the rule sheet's Part 1 as tests, in
rule order (B1 to B28), so a rule and its scenarios are found by its id.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import (
    CHOOSE_HIGH,
    CHOOSE_LOW,
    CompiledTable,
    Engine,
    Table,
    add,
    breakdown,
    discard,
    legal,
    legal_adds,
    legal_discards,
    legal_melds,
    meld_of,
    play,
    rng,
    scores,
)

from burako_env import actions as A
from burako_env.engine import IllegalActionError, Phase
from burako_env.melds import PATTERNS, encode_meld
from burako_env.rules import RulesError, load_rules
from burako_env.scenario import (
    build_state,
    canonical,
    counts,
    hand_of,
    pierna,
    run,
    tile,
    tiles,
)

# ----------------------------------------------------------------------------- the scenario builder


def test_scenario_build_state_is_consistent() -> None:
    state = build_state(
        hands={0: "R3 R4 R5 K7 *", 1: "Y1 Y1"},
        melds={0: [run("red", 6, 9), pierna(9, "R K B", wild="K2")], 1: [run("K", 3, 9)]},
        pile="K5 Y9",
        stock="B7 Y13",
        muerto_taken={1: True},
    )
    assert hand_of(state, 0) == canonical("R3 R4 R5 K7 *") == "K7 R3 R4 R5 *"
    assert state.hand_size == [5, 2]
    assert state.pile == tiles("K5 Y9")
    assert state.pile_counts.tolist() == counts("K5 Y9").tolist()
    assert state.stock[-2:] == tiles("Y13 B7")  # B7 is on top (drawn first)
    assert [len(m) for m in state.muertos] == [11, 0]
    assert state.muerto_taken == [False, True]
    assert state.close_ready == [False, True]  # side 1 holds a 7-tile canasta
    assert np.array_equal(state.meld_enc[0, 1], encode_meld(pierna(9, "R K B", wild="K2")))
    assert not state.meld_enc[0, 2].any()
    assert state._mask is None
    # 5 + 2 in hands, 4 + 4 + 7 melded, 2 in the pile, 11 in the untaken muerto
    assert len(state.stock) == 106 - 7 - 15 - 2 - 11
    state.check_conservation()


def test_scenario_errors_name_the_tile_or_field() -> None:
    with pytest.raises(ValueError, match=r"red 5 \(R5\): 3 asked for"):
        build_state(hands={0: "R5 R5", 1: "R5"})
    with pytest.raises(ValueError, match="joker"):
        build_state(hands={0: "* *"}, melds={1: [run("K", 3, 5, wild="*", at=4)]})
    with pytest.raises(ValueError, match="bad tile 'R14'"):
        build_state(hands={0: "R14"})
    with pytest.raises(ValueError, match="not a valid meld"):
        build_state(melds={0: [run("K", 3, 3)]})


def test_engine_fixture_compiled_table_never_answers_with_readable_logic() -> None:
    """The ``[fast]`` runs read the compiled state back but never decide with
    the readable engine: its deciding methods are refused by name."""
    state = build_state(hands={0: "R3 R4 R5 K9"}, muerto_taken={0: True})
    table = Engine("fast").table(state)
    assert isinstance(table, CompiledTable)
    assert hand_of(table, 0) == hand_of(state, 0) == "K9 R3 R4 R5"
    assert table.legal_actions() == state.legal_actions()
    for name in ("_compute_mask", "_apply_unchecked", "_end_hand", "determinize", "to_json"):
        assert hasattr(state, name)
        with pytest.raises(AttributeError, match=name):
            getattr(table, name)


# ----------------------------------------------------------------------------- B1-B5 tiles and deal


def test_b1_full_set_is_106_tiles_of_53_kinds(engine: Engine) -> None:
    for n in (2, 4):
        state = engine.new_game(rng(1), "burako", n)
        assert state.tile_counts().tolist() == [2] * 53  # 52 numbered kinds and the joker, 2 of each
        assert int(state.tile_counts().sum()) == 106


def test_b1_there_is_no_third_copy_of_a_tile() -> None:
    with pytest.raises(ValueError, match="red 5"):
        build_state(hands={0: "R5 R5", 1: "R5"})
    with pytest.raises(ValueError, match="joker"):
        build_state(hands={0: "* * *"})


@pytest.mark.parametrize("wild", ["*", "K2", "R2", "B2", "Y2"])
def test_b2_jokers_and_every_two_are_wild(engine: Engine, wild: str) -> None:
    state = engine.build(hands={0: f"K5 K6 {wild} Y9"})
    # the wild stands for black 4 or black 7
    assert legal_melds(state) == {run("K", 4, 6, wild=wild, at=4), run("K", 5, 7, wild=wild, at=7)}


def test_b2_a_three_is_not_wild(engine: Engine) -> None:
    state = engine.build(hands={0: "K5 K6 R3 Y9"})
    assert legal_melds(state) == set()


def test_b3_four_players_two_partnerships_play_passes_left(engine: Engine) -> None:
    state = engine.build(4, hands={0: "K9 K10", 1: "R9 R10", 2: "B9 B10", 3: "Y9 Y10"}, current=3, mano=3)
    assert state.side_of == (0, 1, 0, 1)
    play(state, discard("Y9"))
    assert (state.current, state.phase) == (0, Phase.DRAW)  # seat 3 -> seat 0


def test_b3_two_players_alternate(engine: Engine) -> None:
    state = engine.build(2, hands={0: "K9 K10", 1: "R9 R10"}, current=1)
    assert state.side_of == (0, 1)
    play(state, discard("R9"))
    assert (state.current, state.phase) == (0, Phase.DRAW)


def test_b3_only_two_or_four_players(engine: Engine) -> None:
    for n in (1, 3, 5):
        with pytest.raises(RulesError, match=f"num_players={n}"):
            engine.new_game(rng(), "burako", n)


def test_b4_deal_two_players(engine: Engine) -> None:
    state = engine.new_game(rng(3), "burako", 2)
    mano, other = state.mano, 1 - state.mano
    # 12 each; the mano has already drawn his privilege tile (B17)
    assert state.hand_size[other] == 12
    assert state.hand_size[mano] == 13
    assert state.hands[mano, state.privilege_tile] >= 1
    assert [len(m) for m in state.muertos] == [11, 11]
    assert len(state.stock) == 60 - 1  # 106 - 24 - 22 = 60, one drawn for the privilege
    assert state.pile == []


def test_b4_deal_four_players(engine: Engine) -> None:
    state = engine.new_game(rng(3), "burako", 4)
    expected = [11, 11, 11, 11]
    expected[state.mano] += 1  # the privilege tile
    assert state.hand_size == expected
    assert [len(m) for m in state.muertos] == [11, 11]
    assert len(state.stock) == 40 - 1  # 106 - 44 - 22 = 40
    assert state.pile == []


def test_b4_deal_without_the_privilege_draw(engine: Engine) -> None:
    rules = load_rules("burako", {"mano_privilege": False})
    state = engine.new_game(rng(3), rules, 2)
    assert state.hand_size == [12, 12]
    assert len(state.stock) == 60
    assert state.phase == Phase.DRAW
    state = engine.new_game(rng(3), rules, 4)
    assert state.hand_size == [11, 11, 11, 11]
    assert len(state.stock) == 40


def test_b5_first_mano_is_drawn_from_the_seed(engine: Engine) -> None:
    for n in (2, 4):
        manos = [engine.new_game(rng(seed), "burako", n).mano for seed in range(40)]
        assert manos == [engine.new_game(rng(seed), "burako", n).mano for seed in range(40)]
        assert set(manos) == set(range(n))
        state = engine.new_game(rng(5), "burako", n)
        assert (state.current, state.phase) == (state.mano, Phase.PRIVILEGE)


def _closing_table(engine: Engine, num_players: int, mano: int) -> Table:
    """Side 0 has its muerto and a canasta; player 0 closes by discarding K13."""
    hands = {p: f"Y{3 + p}" for p in range(1, num_players)}
    hands[0] = "K13"
    return engine.build(num_players, hands=hands, melds={0: [run("K", 3, 9)]}, muerto_taken={0: True}, mano=mano)


def test_b5_mano_passes_left_each_hand(engine: Engine) -> None:
    for num_players, mano, next_mano in ((2, 1, 0), (4, 3, 0), (4, 1, 2)):
        state = play(_closing_table(engine, num_players, mano), discard("K13"))
        assert state.end_reason == "closed"
        state.next_hand(rng(9))
        assert (state.mano, state.current, state.hand_number) == (next_mano, next_mano, 1)
        assert state.phase == Phase.PRIVILEGE


# ----------------------------------------------------------------------------- B6-B14 melds


def test_b6_run_of_one_colour_and_1_low_or_high(engine: Engine) -> None:
    assert legal_melds(engine.build(hands={0: "R12 R13 R1 Y9"})) == {run("R", 12, 14)}  # 12-13-1
    assert legal_melds(engine.build(hands={0: "K3 K4 K5 Y9"})) == {run("K", 3, 5)}
    assert legal_melds(engine.build(hands={0: "K3 R4 K5 Y9"})) == set()  # two colours


def test_b6_13_1_2_is_not_a_run(engine: Engine) -> None:
    # R13 R1 R2: the only meld is 12-13-1 with the red 2 as a wild for the 12
    state = engine.build(hands={0: "R13 R1 R2 Y9"})
    assert legal_melds(state) == {run("R", 12, 14, wild="R2", at=12)}
    # a 2 never goes after the high 1: on 12-13-1 it can only be a wild at 11
    state = engine.build(hands={0: "R2 R3 Y9"}, melds={0: [run("R", 12, 14)]})
    assert legal_adds(state) == {(0, "R2")}
    play(state, add(0, "R2"))
    assert state.melds[0] == [run("R", 11, 14, wild="R2", at=11)]
    assert not state.melds[0][0].clean
    # and nothing goes below the low 1
    state = engine.build(hands={0: "R13 R4 Y9"}, melds={0: [run("R", 1, 3)]})
    assert legal_adds(state) == {(0, "R4")}


def test_b6_longest_run_is_1_to_1(engine: Engine) -> None:
    state = engine.build(hands={0: "R1 * Y5 Y6"}, melds={0: [run("R", 1, 13)]})
    assert legal_adds(state) == {(0, "R1"), (0, "*")}
    play(state, add(0, "R1"))  # the second red 1 can only go high (position 14)
    assert state.phase == Phase.PLAY
    assert state.melds[0] == [run("R", 1, 14)]
    assert state.melds[0][0].length == 14
    assert legal_adds(state) == set()  # no free end, not even for a wild
    assert hand_of(state, 0) == "Y5 Y6 *"


def test_b6_a_1_that_fits_both_ends_is_the_players_choice(engine: Engine) -> None:
    state = engine.build(hands={0: "R1 Y5 Y6"}, melds={0: [run("R", 2, 13)]})
    play(state, add(0, "R1"))
    assert state.phase == Phase.CHOOSE_END
    assert legal(state) == {CHOOSE_LOW, CHOOSE_HIGH}
    low, high = state.clone(), state.clone()
    play(low, CHOOSE_LOW)
    play(high, CHOOSE_HIGH)
    assert low.melds[0] == [run("R", 1, 13)]
    assert high.melds[0] == [run("R", 2, 14)]
    assert low.phase == high.phase == Phase.PLAY
    assert hand_of(low, 0) == hand_of(high, 0) == "Y5 Y6"


def test_b7_sets_allow_repeated_colours(engine: Engine) -> None:
    state = engine.build(hands={0: "R9 R9 K9 Y5"})
    assert legal_melds(state) == {pierna(9, "R R K")}
    play(state, meld_of(pierna(9, "R R K")))
    assert state.melds[0] == [pierna(9, "R R K")]
    assert hand_of(state, 0) == "Y5"
    # two naturals of one colour and a wild
    assert legal_melds(engine.build(hands={0: "R9 R9 * Y5"})) == {pierna(9, "R R", wild="*")}


def test_b7_sets_have_no_upper_size(engine: Engine) -> None:
    state = engine.build(hands={0: "Y9 * Y5 Y6"}, melds={0: [pierna(9, "R R K K B B Y")]})
    assert legal_adds(state) == {(0, "Y9"), (0, "*")}
    play(state, add(0, "Y9"), add(0, "*"))
    assert state.melds[0] == [pierna(9, "K K R R B B Y Y", wild="*")]
    assert state.melds[0][0].length == 9


def test_b7_no_sets_of_twos_or_of_jokers(engine: Engine) -> None:
    state = engine.build(hands={0: "K2 R2 B2 Y2 * *"})
    assert legal_melds(state) == set()
    assert not any(m.number == 2 for m in PATTERNS if not m.is_run)
    with pytest.raises(ValueError, match="not a valid meld"):
        engine.build(melds={0: [pierna(2, "K R B")]})


def test_b8_one_wild_and_two_naturals_at_least(engine: Engine) -> None:
    # K5 + two wilds is no meld; K5 K6 + one wild is, with either wild
    assert legal_melds(engine.build(hands={0: "K5 * K2 Y9"})) == set()
    assert legal_melds(engine.build(hands={0: "K5 K6 * R2 Y9"})) == {
        run("K", 4, 6, wild="*", at=4),
        run("K", 5, 7, wild="*", at=7),
        run("K", 4, 6, wild="R2", at=4),
        run("K", 5, 7, wild="R2", at=7),
    }
    with pytest.raises(ValueError, match="not a valid meld"):
        engine.build(melds={0: [pierna(9, "R", wild="*")]})


def test_b8_a_second_wild_cannot_be_added(engine: Engine) -> None:
    state = engine.build(
        hands={0: "R2 * K8 B9"},
        melds={0: [run("K", 5, 7, wild="*", at=7), pierna(9, "R K", wild="K2")]},
    )
    assert legal_adds(state) == {(0, "K8"), (1, "B9")}


def test_b9_own_colour_two_on_position_two_is_natural(engine: Engine) -> None:
    assert legal_melds(engine.build(hands={0: "R1 R2 R3 Y9"})) == {run("R", 1, 3)}
    state = engine.build(hands={0: "R1 R2 R3 Y9 *"})
    play(state, meld_of(run("R", 1, 3)))
    assert state.melds[0][0].clean
    assert state.melds[0][0].wild_kind == -1
    # the meld holds no wild, so a joker can still join it (at the high end only)
    assert (0, "*") in legal_adds(state)
    play(state, add(0, "*"))
    assert state.melds[0] == [run("R", 1, 4, wild="*", at=4)]


def test_b9_a_two_anywhere_else_is_wild(engine: Engine) -> None:
    assert legal_melds(engine.build(hands={0: "R1 K2 R3 Y9"})) == {run("R", 1, 3, wild="K2", at=2)}
    assert legal_melds(engine.build(hands={0: "R4 R5 R2 Y9"})) == {
        run("R", 3, 5, wild="R2", at=3),
        run("R", 4, 6, wild="R2", at=6),
    }


def test_b9_own_colour_two_added_next_to_the_3_is_natural_or_a_wild_at_the_top(engine: Engine) -> None:
    state = engine.build(hands={0: "R2 Y9 Y10"}, melds={0: [run("R", 3, 5)]})
    play(state, add(0, "R2"))
    assert legal(state) == {CHOOSE_LOW, CHOOSE_HIGH}
    low, high = state.clone(), state.clone()
    play(low, CHOOSE_LOW)
    play(high, CHOOSE_HIGH)
    assert low.melds[0] == [run("R", 2, 5)]  # natural on position 2: still clean
    assert low.melds[0][0].clean
    assert high.melds[0] == [run("R", 3, 6, wild="R2", at=6)]  # a wild standing for the 6
    assert not high.melds[0][0].clean


def test_b9_clean_canasta_with_the_red_two(engine: Engine) -> None:
    state = engine.build(hands={0: "Y9", 1: "K13"}, melds={0: [run("R", 1, 7)]}, muerto_taken={0: True, 1: True})
    play(state, discard("Y9"))
    assert state.end_reason == "closed"
    # melded R1 15 + R2 20 + R3..R7 5*5 = 60; clean canasta 200; closing 100
    # side 1: hand K13 -10
    assert scores(state) == [breakdown(60, 200, 100, 0, 0), breakdown(0, 0, 0, 10, 0)]


def test_b10_natural_replaces_wild_which_moves_to_either_end(engine: Engine) -> None:
    state = engine.build(hands={0: "K5 R9 R11"}, melds={0: [run("K", 4, 6, wild="*", at=5)]})
    assert legal_adds(state) == {(0, "K5")}
    play(state, add(0, "K5"))
    assert state.phase == Phase.CHOOSE_END
    assert state.current == 0
    assert legal(state) == {CHOOSE_LOW, CHOOSE_HIGH}
    low, high = state.clone(), state.clone()
    play(low, CHOOSE_LOW)
    play(high, CHOOSE_HIGH)
    assert low.melds[0] == [run("K", 3, 6, wild="*", at=3)]  # joker now stands for the 3
    assert high.melds[0] == [run("K", 4, 7, wild="*", at=7)]  # or for the 7
    for s in (low, high):
        assert s.phase == Phase.PLAY
        assert hand_of(s, 0) == "R9 R11"


def test_b10_wild_does_not_move_below_1(engine: Engine) -> None:
    state = engine.build(hands={0: "K3 R9 R11"}, melds={0: [run("K", 1, 3, wild="*", at=3)]})
    play(state, add(0, "K3"))
    assert state.phase == Phase.PLAY  # only the high end exists: no choice
    assert state.melds[0] == [run("K", 1, 4, wild="*", at=4)]


def test_b10_wild_does_not_move_above_14(engine: Engine) -> None:
    state = engine.build(hands={0: "K13 R9 R11"}, melds={0: [run("K", 12, 14, wild="*", at=13)]})
    play(state, add(0, "K13"))
    assert state.phase == Phase.PLAY
    assert state.melds[0] == [run("K", 11, 14, wild="*", at=11)]


def test_b10_no_free_end_no_replacement(engine: Engine) -> None:
    state = engine.build(hands={0: "K7 R9"}, melds={0: [run("K", 1, 14, wild="*", at=7)]})
    assert legal_adds(state) == set()
    assert not state.is_legal(add(0, "K7"))
    with pytest.raises(IllegalActionError):
        state.apply(add(0, "K7"))
    assert state.melds[0] == [run("K", 1, 14, wild="*", at=7)]


def test_b11_two_moved_onto_position_two_becomes_natural(engine: Engine) -> None:
    state = engine.build(hands={0: "R4 * Y9"}, melds={0: [run("R", 3, 5, wild="R2", at=4)]})
    play(state, add(0, "R4"))
    assert legal(state) == {CHOOSE_LOW, CHOOSE_HIGH}
    low, high = state.clone(), state.clone()
    play(low, CHOOSE_LOW)
    play(high, CHOOSE_HIGH)
    assert low.melds[0] == [run("R", 2, 5)]  # R2 R3 R4 R5, all natural
    assert low.melds[0][0].clean
    assert high.melds[0] == [run("R", 3, 6, wild="R2", at=6)]  # the 2 is still a wild
    # a clean run takes a wild again, the dirty one does not
    assert (0, "*") in legal_adds(low)
    assert (0, "*") not in legal_adds(high)


def test_b11_run_cleaned_by_the_move_scores_as_clean_canasta(engine: Engine) -> None:
    state = engine.build(
        hands={0: "R5 K9", 1: "Y9 Y9"},
        melds={0: [run("R", 3, 8, wild="R2", at=5)]},  # R3 R4 R2 R6 R7 R8
        muerto_taken={0: True},
    )
    play(state, add(0, "R5"), CHOOSE_LOW)
    assert state.melds[0] == [run("R", 2, 8)]
    assert state.close_ready[0]
    play(state, discard("K9"))
    assert (state.end_reason, state.closer) == ("closed", 0)
    # side 0: R2 20 + R3..R7 5*5 + R8 10 = 55; clean canasta 200; closing 100
    # side 1: hand Y9 Y9 -20; muerto never taken -100
    assert scores(state) == [breakdown(55, 200, 100, 0, 0), breakdown(0, 0, 0, 20, 100)]
    assert state.match_scores == [355, -120]


def test_b12_replaced_wild_stays_in_the_meld(engine: Engine) -> None:
    state = engine.build(
        hands={0: "K5 R9 R11"},
        melds={0: [run("K", 4, 6, wild="*", at=5), run("B", 7, 9)]},
    )
    play(state, add(0, "K5"))
    # the only decisions are where the joker goes within its own meld
    assert legal(state) == {CHOOSE_LOW, CHOOSE_HIGH}
    play(state, CHOOSE_HIGH)
    assert hand_of(state, 0) == "R9 R11"  # the joker did not come back
    assert state.hands[0, tile("*")] == 0
    assert state.melds[0] == [run("K", 4, 7, wild="*", at=7), run("B", 7, 9)]
    # nothing in PLAY ever uses a tile that is not in the hand
    for action in legal(state):
        what, a, b = A.decode(action)
        kind = {A.DISCARD: a, A.ADD: b}.get(what)
        if kind is not None:
            assert state.hands[0, kind] > 0


def test_b13_no_additions_to_the_opponents_melds(engine: Engine) -> None:
    state = engine.build(hands={0: "K6 R6 Y9"}, melds={0: [run("K", 3, 5)], 1: [run("R", 3, 5)]})
    assert legal_adds(state) == {(0, "K6")}  # slot 0 is side 0's own meld
    play(state, add(0, "K6"))
    assert state.melds == [[run("K", 3, 6)], [run("R", 3, 5)]]


def test_b13_partners_share_their_melds(engine: Engine) -> None:
    state = engine.build(
        4,
        hands={0: "Y3", 1: "Y4", 2: "R6 K6 Y9", 3: "Y5"},
        melds={0: [run("R", 3, 5)], 1: [run("K", 3, 5)]},
        current=2,
    )
    assert legal_adds(state) == {(0, "R6")}  # his partner's meld, never the opponents'
    play(state, add(0, "R6"))
    assert state.melds == [[run("R", 3, 6)], [run("K", 3, 5)]]


def test_b14_canasta_classes_and_bonuses(engine: Engine) -> None:
    state = engine.build(
        hands={0: "R13", 1: "B13"},
        melds={0: [run("K", 3, 9), pierna(10, "R R K K B B", wild="*"), run("Y", 3, 8)]},
        muerto_taken={0: True},
    )
    play(state, discard("R13"))
    # melded: K3..K9 = 5*5 + 10 + 10 = 45; six 10s + joker = 60 + 50 = 110; Y3..Y8 = 5*5 + 10 = 35
    #         45 + 110 + 35 = 190
    # canastas: clean 7-tile run 200 + dirty 7-tile set 100; the 6-tile run none -> 300
    # closing 100 -> total 590
    # side 1: hand B13 -10, muerto -100 -> -110
    assert scores(state) == [breakdown(190, 300, 100, 0, 0), breakdown(0, 0, 0, 10, 100)]


def test_b14_class_is_the_state_at_the_end_of_the_hand(engine: Engine) -> None:
    state = engine.build(hands={0: "* R13", 1: "B13"}, melds={0: [run("K", 3, 9)]}, muerto_taken={0: True, 1: True})
    play(state, add(0, "*"))
    assert legal(state) == {CHOOSE_LOW, CHOOSE_HIGH}
    play(state, CHOOSE_HIGH, discard("R13"))
    assert state.melds[0] == [run("K", 3, 10, wild="*", at=10)]
    # melded K3..K9 45 + joker 50 = 95; dirty canasta 100 (it was clean when melded); closing 100
    assert scores(state) == [breakdown(95, 100, 100, 0, 0), breakdown(0, 0, 0, 10, 0)]


# ----------------------------------------------------------------------------- B15-B18 the turn


def test_b15_turn_is_draw_melds_discard(engine: Engine) -> None:
    state = engine.build(
        hands={0: "R3 R4 R5 K9 K9 B6", 1: "Y5"},
        melds={0: [run("B", 3, 5)]},
        stock="R6 K1",
        phase=Phase.DRAW,
    )
    assert legal(state) == {A.DRAW_STOCK}  # the pile is empty; no melding or discarding before the draw
    play(state, A.DRAW_STOCK)
    assert (state.phase, state.current) == (Phase.PLAY, 0)
    assert hand_of(state, 0) == canonical("R3 R4 R5 K9 K9 B6 R6")
    assert not legal(state) & {A.DRAW_STOCK, A.TAKE_PILE, A.KEEP, A.REJECT, CHOOSE_LOW, CHOOSE_HIGH}
    # any number of new melds and additions, in any order, then one discard
    play(state, meld_of(run("R", 3, 5)), add(0, "B6"), add(1, "R6"))
    assert state.melds[0] == [run("B", 3, 6), run("R", 3, 6)]
    assert (state.phase, state.current) == (Phase.PLAY, 0)
    play(state, discard("K9"))
    assert hand_of(state, 0) == "K9"
    assert state.pile == [tile("K9")]
    assert (state.phase, state.current, state.turn) == (Phase.DRAW, 1, 1)
    assert state.stock[-1] == tile("K1")


def test_b16_draw_takes_the_whole_pile(engine: Engine) -> None:
    state = engine.build(hands={0: "B3 B4", 1: "Y5"}, pile="K5 R9 Y1", phase=Phase.DRAW)
    stock_size = len(state.stock)
    assert legal(state) == {A.DRAW_STOCK, A.TAKE_PILE}  # even though Y1 fits no meld
    play(state, A.TAKE_PILE)
    assert hand_of(state, 0) == canonical("B3 B4 K5 R9 Y1")
    assert state.pile == []
    assert not state.pile_counts.any()
    assert state.known[0].tolist() == counts("K5 R9 Y1").tolist()
    assert len(state.stock) == stock_size
    assert state.phase == Phase.PLAY


def test_b16_empty_pile_cannot_be_taken(engine: Engine) -> None:
    state = engine.build(hands={0: "B3 B4", 1: "Y5"}, stock="K7", phase=Phase.DRAW)
    assert legal(state) == {A.DRAW_STOCK}
    with pytest.raises(IllegalActionError):
        state.apply(A.TAKE_PILE)
    play(state, A.DRAW_STOCK)
    assert hand_of(state, 0) == "K7 B3 B4"


def _privilege_table(engine: Engine) -> Table:
    return engine.build(
        hands={0: "K3 K4 K9 B7", 1: "Y5 Y6"},
        stock="Y13 R1",
        phase=Phase.PRIVILEGE,
        mano=0,
        current=0,
        privilege_tile="B7",
    )


def test_b17_mano_keeps_the_privilege_tile(engine: Engine) -> None:
    state = _privilege_table(engine)
    assert legal(state) == {A.KEEP, A.REJECT}
    play(state, A.KEEP)
    assert (state.phase, state.current, state.privilege_tile) == (Phase.PLAY, 0, -1)
    assert hand_of(state, 0) == "K3 K4 K9 B7"
    assert state.pile == []
    assert state.stock[-1] == tile("Y13")


def test_b17_mano_rejects_the_tile_which_starts_the_pile(engine: Engine) -> None:
    state = _privilege_table(engine)
    play(state, A.REJECT)
    assert state.pile == [tile("B7")]
    assert hand_of(state, 0) == "K3 K4 K9 Y13"  # the second draw is kept: no second choice
    assert state.phase == Phase.PLAY
    assert not legal(state) & {A.KEEP, A.REJECT, A.DRAW_STOCK, A.TAKE_PILE}
    play(state, discard("K9"))
    assert state.pile == tiles("B7 K9")
    # the privilege is the mano's first draw only: the next player draws normally
    assert (state.current, state.phase) == (1, Phase.DRAW)
    assert legal(state) == {A.DRAW_STOCK, A.TAKE_PILE}
    play(state, A.TAKE_PILE)
    assert hand_of(state, 1) == canonical("Y5 Y6 B7 K9")


def test_b17_new_hand_starts_with_the_privilege(engine: Engine) -> None:
    state = engine.new_game(rng(11), "burako", 2)
    assert state.phase == Phase.PRIVILEGE
    assert legal(state) == {A.KEEP, A.REJECT}
    drawn = state.privilege_tile
    before = state.hands[state.mano].copy()
    stock_top = state.stock[-1]
    play(state, A.REJECT)
    assert state.pile == [drawn]
    expected = before.copy()
    expected[drawn] -= 1
    expected[stock_top] += 1
    assert state.hands[state.mano].tolist() == expected.tolist()


def test_b18_any_tile_may_be_discarded_wilds_included(engine: Engine) -> None:
    state = engine.build(hands={0: "* K2 R9", 1: "Y5"})
    assert legal_discards(state) == {"*", "K2", "R9"}
    play(state, discard("*"))
    assert state.pile == [tile("*")]
    assert hand_of(state, 0) == "K2 R9"
    assert (state.current, state.phase) == (1, Phase.DRAW)


# ----------------------------------------------------------------------------- B19-B24 muerto, going out, stock


def test_b19_one_muerto_per_side(engine: Engine) -> None:
    assert [len(m) for m in engine.new_game(rng(2), "burako", 2).muertos] == [11, 11]  # one per player
    assert [len(m) for m in engine.new_game(rng(2), "burako", 4).muertos] == [11, 11]  # one per team


def test_b19_team_takes_one_muerto_partner_cannot_take_a_second(engine: Engine) -> None:
    muerto0 = "K1 K3 K4 K5 B9 B9 B10 Y11 Y12 Y13 R13"
    state = engine.build(
        4,
        hands={0: "R9", 1: "Y3 Y4", 2: "K9 K10 K11", 3: "Y5"},
        muertos={0: muerto0},
        stock="Y8 K12",
    )
    muerto1 = list(state.muertos[1])
    play(state, discard("R9"))  # seat 0 empties his hand: team 0 takes its muerto (B21)
    assert hand_of(state, 0) == canonical(muerto0)
    assert state.muerto_taken == [True, False]
    assert state.muertos == [[], muerto1]
    play(state, A.DRAW_STOCK, discard("Y8"))  # seat 1
    play(state, A.DRAW_STOCK)  # seat 2 draws K12
    assert state.current == 2
    assert hand_of(state, 2) == "K9 K10 K11 K12"
    # any meld would leave him with no tile, or with K12 that only empties his hand
    # by joining the run: there is no second muerto, and no canasta (B23)
    assert legal_melds(state) == set()
    assert legal_discards(state) == {"K9", "K10", "K11", "K12"}


def test_b19_in_two_players_each_takes_his_own(engine: Engine) -> None:
    state = engine.build(hands={0: "Y3 Y4", 1: "R9"}, muertos={1: "K1 K3 K4 K5 B9 B9 B10 Y11 Y12 Y13 R13"}, current=1)
    muerto0 = list(state.muertos[0])
    play(state, discard("R9"))
    assert state.muerto_taken == [False, True]
    assert state.muertos[0] == muerto0
    assert hand_of(state, 1) == canonical("K1 K3 K4 K5 B9 B9 B10 Y11 Y12 Y13 R13")


MUERTO = "K1 K3 K4 K5 B9 B9 B10 Y11 Y12 Y13 *"


def test_b20_direct_take_by_melding_goes_on_with_the_turn(engine: Engine) -> None:
    state = engine.build(hands={0: "R3 R4 R5", 1: "Y5"}, muertos={0: MUERTO})
    play(state, meld_of(run("R", 3, 5)))
    assert hand_of(state, 0) == canonical(MUERTO)
    assert state.hand_size[0] == 11
    assert (state.muerto_taken, state.muertos[0]) == ([True, False], [])
    assert (state.phase, state.current, state.turn) == (Phase.PLAY, 0, 0)
    assert state.muerto_unplayed == [False, False]
    # the same turn goes on with the muerto tiles
    play(state, meld_of(run("K", 3, 5)), discard("B10"))
    assert state.melds[0] == [run("R", 3, 5), run("K", 3, 5)]
    assert (state.current, state.phase) == (1, Phase.DRAW)


def test_b20_direct_take_by_adding(engine: Engine) -> None:
    state = engine.build(hands={0: "R6", 1: "Y5"}, melds={0: [run("R", 3, 5)]}, muertos={0: MUERTO})
    play(state, add(0, "R6"))
    assert state.melds[0] == [run("R", 3, 6)]
    assert hand_of(state, 0) == canonical(MUERTO)
    assert (state.phase, state.current) == (Phase.PLAY, 0)


def test_b21_indirect_take_by_discarding_played_next_turn(engine: Engine) -> None:
    state = engine.build(hands={0: "R9", 1: "Y5 Y6"}, muertos={0: MUERTO}, stock="K13 R12")
    play(state, discard("R9"))
    assert hand_of(state, 0) == canonical(MUERTO)
    assert state.muerto_taken == [True, False]
    assert state.muerto_unplayed == [True, False]
    assert state.pile == [tile("R9")]
    assert (state.current, state.phase, state.turn) == (1, Phase.DRAW, 1)
    play(state, A.DRAW_STOCK, discard("K13"))
    assert (state.current, state.phase) == (0, Phase.DRAW)
    play(state, A.DRAW_STOCK)  # draws R12
    assert state.muerto_unplayed == [False, False]
    assert meld_of(run("K", 3, 5)) in legal(state)


def test_b22_close_by_melding(engine: Engine) -> None:
    state = engine.build(
        hands={0: "R3 R4 R5", 1: "Y9 Y10"},
        melds={0: [run("K", 3, 9)]},
        muerto_taken={0: True},
    )
    play(state, meld_of(run("R", 3, 5)))
    assert (state.phase, state.end_reason, state.closer) == (Phase.HAND_OVER, "closed", 0)
    assert not state.legal_mask().any()
    # side 0: K3..K9 45 + R3 R4 R5 15 = 60; clean canasta 200; closing 100 -> 360
    # side 1: hand Y9 Y10 -20; muerto -100 -> -120
    assert scores(state) == [breakdown(60, 200, 100, 0, 0), breakdown(0, 0, 0, 20, 100)]
    assert state.match_scores == [360, -120]


def test_b22_close_by_discarding(engine: Engine) -> None:
    state = engine.build(hands={0: "R3", 1: "Y9 Y10"}, melds={0: [run("K", 3, 9)]}, muerto_taken={0: True})
    play(state, discard("R3"))
    assert (state.phase, state.end_reason, state.closer) == (Phase.HAND_OVER, "closed", 0)
    assert state.pile == [tile("R3")]
    # side 0: 45 + 200 + 100 = 345; side 1: -20 - 100 = -120
    assert scores(state) == [breakdown(45, 200, 100, 0, 0), breakdown(0, 0, 0, 20, 100)]


def test_b22_partner_closes_for_the_team(engine: Engine) -> None:
    state = engine.build(
        4,
        hands={0: "K13", 1: "Y3", 2: "R3", 3: "Y4"},
        melds={0: [run("K", 3, 9)]},
        muerto_taken={0: True},
        current=2,
    )
    play(state, discard("R3"))
    assert (state.end_reason, state.closer) == ("closed", 2)
    # team 0: 45 + 200 + 100 - K13 10 = 335; team 1: -(5 + 5) - 100 = -110
    assert scores(state) == [breakdown(45, 200, 100, 10, 0), breakdown(0, 0, 0, 10, 100)]


def test_b23_no_emptying_the_hand_without_a_canasta(engine: Engine) -> None:
    state = engine.build(hands={0: "R3 R4 R5", 1: "Y5"}, muerto_taken={0: True})
    assert legal_melds(state) == set()  # would leave him with no tile
    assert legal_discards(state) == {"R3", "R4", "R5"}
    # B23's "never stuck" (and E3): a play that leaves one tile which could only
    # empty the hand is illegal too. Adding R6 would leave K9 alone, and then
    # discarding K9 would empty the hand, so only the discards remain.
    state = engine.build(hands={0: "R6 K9", 1: "Y5"}, melds={0: [run("R", 3, 5)]}, muerto_taken={0: True})
    assert legal(state) == {discard("R6"), discard("K9")}


def test_b23_never_stuck_and_closing_when_the_last_tile_makes_the_canasta(engine: Engine) -> None:
    state = engine.build(hands={0: "R6 R7", 1: "Y5"}, melds={0: [run("R", 1, 5)]}, muerto_taken={0: True})
    assert legal(state) == {add(0, "R6"), discard("R6"), discard("R7")}
    play(state, add(0, "R6"))
    assert hand_of(state, 0) == "R7"
    assert legal(state) == {add(0, "R7")}  # discarding R7 would empty the hand without a canasta
    play(state, add(0, "R7"))
    assert (state.end_reason, state.closer) == ("closed", 0)
    # side 0: R1 15 + R2 20 + R3..R7 25 = 60; clean canasta 200; closing 100 -> 360
    # side 1: Y5 -5, muerto -100 -> -105
    assert scores(state) == [breakdown(60, 200, 100, 0, 0), breakdown(0, 0, 0, 5, 100)]


def test_b24_stock_exhausted_without_canasta_is_void(engine: Engine) -> None:
    state = engine.build(
        hands={0: "K9 K10", 1: "Y5"},
        melds={0: [run("R", 3, 5)]},
        stock=None,
        leftover="pile",
        match_scores=[500, 700],
        mano=0,
    )
    assert state.stock == []
    play(state, discard("K9"))
    # player 1 would draw from the empty stock: the hand ends, though the pile is there
    assert (state.phase, state.end_reason, state.closer) == (Phase.HAND_OVER, "void", -1)
    assert state.hand_scores is None
    assert state.match_scores == [500, 700]
    assert not state.legal_mask().any()
    state.next_hand(rng(4))
    assert (state.mano, state.current, state.hand_number) == (0, 0, 1)  # the same mano deals again
    assert state.match_scores == [500, 700]


def test_b24_stock_exhausted_with_a_canasta_scores_without_closing_bonus(engine: Engine) -> None:
    state = engine.build(
        hands={0: "Y3 Y4", 1: "B5 *"},
        melds={0: [run("K", 3, 9)]},
        muerto_taken={0: True},
        stock=None,
        leftover="pile",
        mano=0,
    )
    play(state, discard("Y3"))
    assert (state.end_reason, state.closer) == ("stock_exhausted", -1)
    # side 0: 45 + 200, no closing bonus, hand Y4 -5 -> 240
    # side 1: hand B5 5 + joker 50 = -55, muerto -100 -> -155
    assert scores(state) == [breakdown(45, 200, 0, 5, 0), breakdown(0, 0, 0, 55, 100)]
    assert state.match_scores == [240, -155]
    state.next_hand(rng(4))
    assert state.mano == 1  # a scored hand passes the mano on


def test_v3a_a_truncated_hand_scores_nothing_and_passes_the_mano_on(engine: Engine) -> None:
    """V3a, B5: a hand cut at ``max_turns`` ends unscored like a void hand, but it was played:
    the next hand's mano is the next player (only a void hand, B24, is dealt again by the same mano)."""
    state = engine.new_game(rng(3), load_rules("burako", {"max_turns": 2}), num_players=2, mano=1)
    while state.phase != Phase.HAND_OVER:
        play(state, int(np.flatnonzero(state.legal_mask())[0]))
    assert (state.end_reason, state.hand_scores, state.turn) == ("truncated", None, 2)
    assert state.match_scores == [0, 0]
    state.next_hand(rng(4))
    assert (state.mano, state.current, state.hand_number) == (0, 0, 1)


def test_b24_last_stock_tile_is_drawn_and_played(engine: Engine) -> None:
    state = engine.build(hands={0: "K9 K10", 1: "Y5"}, stock="B6", leftover="pile", phase=Phase.DRAW)
    assert legal(state) == {A.DRAW_STOCK, A.TAKE_PILE}
    play(state, A.DRAW_STOCK)
    assert (state.stock, state.phase) == ([], Phase.PLAY)
    assert hand_of(state, 0) == "K9 K10 B6"
    play(state, discard("B6"))
    assert (state.phase, state.end_reason) == (Phase.HAND_OVER, "void")


# ----------------------------------------------------------------------------- B25-B28 scoring


def test_b25_tile_values_whatever_the_role(engine: Engine) -> None:
    state = engine.build(
        hands={0: "B13", 1: "* R2 K1 K8 K13 K3 K7"},
        melds={
            0: [
                run("R", 1, 7),  # R2 natural on position 2
                run("Y", 11, 14, wild="K2", at=12),  # K2 as a wild, Y1 as the high 1
                pierna(8, "B B", wild="*"),
            ]
        },
        muerto_taken={0: True},
    )
    play(state, discard("B13"))
    # side 0 melded: R1 15 + R2 20 + R3..R7 5*5 = 60
    #                Y11 10 + K2 20 + Y13 10 + Y1 15 = 55
    #                B8 10 + B8 10 + joker 50 = 70          -> 185
    #   canastas: the red run (7, clean) 200; closing 100    -> 485
    # side 1 hand: joker 50 + R2 20 + K1 15 + K8 10 + K13 10 + K3 5 + K7 5 = 115; muerto -100 -> -215
    assert scores(state) == [breakdown(185, 200, 100, 0, 0), breakdown(0, 0, 0, 115, 100)]
    assert state.match_scores == [485, -215]


def test_b26_full_breakdown_four_players(engine: Engine) -> None:
    state = engine.build(
        4,
        hands={0: "B4 B5 B6", 1: "Y3 Y3", 2: "Y1 K2", 3: "*"},
        melds={
            0: [run("K", 3, 9), pierna(12, "R R B Y Y", wild="*")],
            1: [run("R", 5, 11, wild="B2", at=8)],
        },
        muerto_taken={0: True, 1: True},
    )
    play(state, meld_of(run("B", 4, 6)))
    assert (state.end_reason, state.closer) == ("closed", 0)
    # team 0 melded: K3..K9 45 + five 12s and a joker 50 + 50 = 100 + B4 B5 B6 15 = 160
    #   canastas: K3..K9 clean 200 (the 6-tile set has none); closing 100
    #   hands: seat 2 Y1 15 + K2 20 = 35                     -> 160 + 200 + 100 - 35 = 425
    # team 1 melded: R5 R6 R7 15 + B2 20 + R9 R10 R11 30 = 65; dirty canasta 100
    #   hands: seat 1 Y3 Y3 10 + seat 3 joker 50 = 60         -> 65 + 100 - 60 = 105
    assert scores(state) == [breakdown(160, 200, 100, 35, 0), breakdown(65, 100, 0, 60, 0)]
    assert state.match_scores == [425, 105]


def test_b26_scores_can_be_negative_and_accumulate(engine: Engine) -> None:
    state = engine.build(
        hands={0: "R3", 1: "* *"},
        melds={0: [run("K", 3, 9)], 1: [run("B", 3, 5)]},
        muerto_taken={0: True},
        match_scores=[1000, 50],
    )
    play(state, discard("R3"))
    # side 0: 45 + 200 + 100 = 345
    # side 1: B3 B4 B5 15 - jokers 100 - muerto 100 = -185
    assert scores(state) == [breakdown(45, 200, 100, 0, 0), breakdown(15, 0, 0, 100, 100)]
    assert state.match_scores == [1000 + 345, 50 - 185]


def test_b27_untaken_muerto_tiles_count_for_nobody(engine: Engine) -> None:
    rich = "R1 R1 B1 B1 Y1 Y1 K13 K13 R13 R13 B13"
    poor = "K3 K4 K5 K6 K7 R3 R4 R5 R6 R7 B3"
    results = []
    for muerto in (rich, poor):
        state = engine.build(
            hands={0: "Y9", 1: "Y10"},
            melds={0: [run("B", 4, 10)]},
            muerto_taken={0: True},
            muertos={1: muerto},
        )
        play(state, discard("Y9"))
        assert state.muertos[1] == tiles(muerto)  # still set aside
        results.append(scores(state))
    # side 0: B4..B7 20 + B8 B9 B10 30 = 50; clean canasta 200; closing 100 -> 350
    # side 1: Y10 -10, muerto -100 -> -110, whatever the muerto holds
    assert results[0] == results[1] == [breakdown(50, 200, 100, 0, 0), breakdown(0, 0, 0, 10, 100)]


def test_b27_indirect_muerto_not_yet_played_counts_in_hand(engine: Engine) -> None:
    muerto1 = "K1 K3 K4 K5 B9 B9 B10 Y11 Y12 Y13 *"
    state = engine.build(
        hands={0: "Y3 Y4", 1: "R9"},
        melds={0: [run("K", 6, 12)]},
        muerto_taken={0: True},
        muertos={1: muerto1},
        current=1,
        stock="Y5",
    )
    play(state, discard("R9"))  # player 1 takes his muerto by discarding (B21)
    assert state.muerto_unplayed == [False, True]
    play(state, A.DRAW_STOCK, meld_of(run("Y", 3, 5)))  # player 0 draws Y5 and closes by melding
    assert (state.end_reason, state.closer) == ("closed", 0)
    # side 0: K6 K7 10 + K8..K12 50 + Y3 Y4 Y5 15 = 75; clean canasta 200; closing 100 -> 375
    # side 1 (burako: the unplayed muerto counts in hand, and it was taken):
    #   K1 15 + K3 K4 K5 15 + B9 B9 B10 30 + Y11 Y12 Y13 30 + joker 50 = 140 -> -140
    assert scores(state) == [breakdown(75, 200, 100, 0, 0), breakdown(0, 0, 0, 140, 0)]


def _both_close_table(engine: Engine, match_scores: list[int]) -> Table:
    """Player 0 closes by discarding Y3: side 0 scores 345, side 1 scores 235."""
    return engine.build(
        hands={0: "Y3", 1: "Y9"},
        melds={0: [run("K", 3, 9)], 1: [run("R", 3, 9)]},
        muerto_taken={0: True, 1: True},
        match_scores=match_scores,
        mano=0,
    )


def test_b28_hand_scores_of_the_match_table(engine: Engine) -> None:
    state = play(_both_close_table(engine, [0, 0]), discard("Y3"))
    # side 0: K3..K9 45 + clean canasta 200 + closing 100 = 345
    # side 1: R3..R9 45 + clean canasta 200 - Y9 10 = 235
    assert scores(state) == [breakdown(45, 200, 100, 0, 0), breakdown(45, 200, 0, 10, 0)]
    assert state.match_scores == [345, 235]


def test_b28_match_ends_when_a_side_reaches_3000(engine: Engine) -> None:
    state = play(_both_close_table(engine, [2655, 1000]), discard("Y3"))
    assert state.match_scores == [3000, 1235]  # 2655 + 345 = 3000 exactly: "3000 or more"
    assert (state.match_winner, state.match_over) == (0, True)
    with pytest.raises(IllegalActionError):
        state.next_hand(rng())


def test_b28_below_the_target_the_match_goes_on(engine: Engine) -> None:
    state = play(_both_close_table(engine, [2654, 1000]), discard("Y3"))
    assert state.match_scores == [2999, 1235]
    assert (state.match_winner, state.match_over) == (-1, False)
    state.next_hand(rng())
    assert (state.hand_number, state.mano, state.match_scores) == (1, 1, [2999, 1235])


def test_b28_both_pass_the_higher_total_wins(engine: Engine) -> None:
    state = play(_both_close_table(engine, [2700, 2780]), discard("Y3"))
    assert state.match_scores == [3045, 3015]  # 2700 + 345, 2780 + 235
    assert state.match_winner == 0  # side 1 led before the hand, side 0 ends higher


def test_b28_tie_at_the_top_plays_another_hand(engine: Engine) -> None:
    state = play(_both_close_table(engine, [2700, 2810]), discard("Y3"))
    assert state.match_scores == [3045, 3045]  # 2700 + 345 = 2810 + 235
    assert (state.match_winner, state.match_over) == (-1, False)
    state.next_hand(rng())
    assert (state.hand_number, state.phase) == (1, Phase.PRIVILEGE)
