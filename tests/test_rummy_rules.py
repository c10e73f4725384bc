"""Rummy rules R1-R11 and guarantees E1-E5 on exact, readable states (docs/rules.md Part 3, 4)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from burako_env.rules import RulesError
from burako_env.rummy import actions as A
from burako_env.rummy.engine import NO_TILE, IllegalActionError, Phase, RummyState
from burako_env.rummy.observation import encode
from burako_env.rummy.rules import load_rummy_rules
from burako_env.rummy.scenario import build_rummy_state, play, rummy_hand, table_text
from burako_env.scenario import tile
from burako_env.tiles import JOKER

ADD = {name: A.ADD_TILE + tile(name) for name in ("R5", "R6", "K1", "K2", "R9", "Y9", "K7", "K9", "R10", "R11")}


def legal(state: RummyState) -> set[str]:
    """The unmasked actions, named."""
    names = set()
    for action in np.flatnonzero(state.legal_mask()):
        if action < JOKER + 1:
            names.add(f"add {'*' if action == JOKER else table_kind(action)}")
        else:
            names.add({A.ADD_CLOSING: "closing", A.COMMIT: "commit", A.END_TURN: "end"}[int(action)])
    return names


def table_kind(kind: int) -> str:
    from burako_env.scenario import tile_text

    return tile_text(kind)


def test_r1_r2_deal() -> None:
    """R1, R2: 106 tiles, 14 each, one face-up closing tile, the rest is the stock; the starter drew (R4)."""
    for players, stock in ((2, 106 - 28 - 1), (3, 106 - 42 - 1), (4, 106 - 56 - 1)):
        state = RummyState.new_game(np.random.default_rng(players), "rummy", players)
        assert state.closing_tile != NO_TILE
        sizes = [state.hand_size(p) for p in range(players)]
        assert sizes[state.current] == 15 and sorted(sizes) == [14] * (players - 1) + [15]
        assert state.stock_size == stock - 1
        state.check_conservation()  # E1


def test_r1_twos_are_plain_and_only_jokers_wild() -> None:
    """R1: a 2 is a plain tile (1-2-3 of one colour is a run; a 2 cannot stand for another tile)."""
    state = build_rummy_state(hands={0: "K1 K2 K3 K10 K11 K12 K13", 1: "Y5"}, closing="B5")
    assert "add K2" in legal(state)
    bad = build_rummy_state(hands={0: "K1 R2 K3 K10 K11 K12", 1: "Y5"}, closing="B5")
    assert "add R2" not in legal(bad) and "add K1" not in legal(bad)


def test_r4_turn_draws_one_tile_and_never_discards() -> None:
    """R4: the next player draws one tile from the stock when his turn starts; ending a turn discards nothing."""
    state = build_rummy_state(hands={0: "K1", 1: "Y5"}, closing="B5", stock="R3 R4")
    state.step(A.END_TURN)
    assert state.current == 1 and rummy_hand(state, 1) == "R3 Y5" and rummy_hand(state, 0) == "K1"
    state.step(A.END_TURN)
    assert rummy_hand(state, 0) == "K1 R4"


def test_r4_draw_skipped_when_the_stock_is_empty() -> None:
    """R4: with an empty stock the turn starts without a draw."""
    state = build_rummy_state(hands={0: "K1", 1: "Y5"}, closing="B5", leftover=1)
    size = state.hand_size(1)
    state.step(A.END_TURN)
    assert state.current == 1 and state.hand_size(1) == size and state.turn_started_empty


def test_r5_first_play_under_30_refused() -> None:
    """R5: a first play of 7+8+9 = 24 is refused; 9+10+11 = 30 is accepted."""
    state = build_rummy_state(hands={0: "K7 K8 K9 R9 R10 R11", 1: "Y5"}, closing="B5")
    for name in ("K7", "K8", "K9"):
        state.step(A.ADD_TILE + tile(name))
    assert "commit" not in legal(state)  # 24 < 30
    with pytest.raises(IllegalActionError):
        state.step(A.COMMIT)
    fresh = build_rummy_state(hands={0: "K7 K8 K9 R9 R10 R11", 1: "Y5"}, closing="B5")
    play(fresh, "R9 R10 R11")
    assert table_text(fresh) == "R9 R10 R11" and fresh.first_play_done == [True, False]
    assert rummy_hand(fresh, 0) == "K7 K8 K9" and fresh.current == 1


def test_r5_first_play_may_not_use_the_table() -> None:
    """R5: before his first play a player cannot add to the table's melds, even for 30 points."""
    state = build_rummy_state(hands={0: "R12 R13 K1", 1: "Y5"}, table=["R9 R10 R11"], closing="B5")
    assert legal(state) == {"end"}
    state.first_play_done[0] = True
    state._mask = None
    assert legal(state) == {"add R12", "add R13", "end"}


def test_r11a_joker_counts_at_its_best_number() -> None:
    """R5, R11a: in 9-10-★ the joker counts 11 (not 8): 30 points, a legal first play."""
    state = build_rummy_state(hands={0: "R9 R10 * K1", 1: "Y5"}, closing="B5")
    play(state, "R9 R10 *")
    assert state.table[JOKER] == 1 and state.first_play_done[0]


def test_r11b_closing_tile_never_counts_toward_30() -> None:
    """R11b: 9-10-11 with the closing tile as the 11 is only 19 points from the hand: refused."""
    state = build_rummy_state(hands={0: "R9 R10", 1: "Y5"}, closing="R11")
    assert legal(state) == {"end"}
    enough = build_rummy_state(hands={0: "R10 R12", 1: "Y5"}, closing="R11")  # 10 + 12 = 22
    assert legal(enough) == {"end"}
    closes = build_rummy_state(hands={0: "R12 R13 K11 B11 Y11", 1: "Y5"}, closing="R11")  # 25 + 33 = 58
    play(closes, "R12 R13 K11 B11 Y11", closing=True)
    assert closes.closer == 0 and closes.hand_scores == [0, 5]


def test_r6_split_a_run_with_a_tile_from_the_hand() -> None:
    """R6: R3..R8 on the table and R5 from the hand: the run is split into R3 R4 R5 and R5 R6 R7 R8."""
    state = build_rummy_state(
        hands={0: "R5 K1", 1: "Y5"}, table=["R3 R4 R5 R6 R7 R8"], closing="B5", first_play={0: True}
    )
    assert legal(state) == {"add R5", "end"}
    play(state, "R5")
    assert table_text(state) == "R3 R4 R5 R5 R6 R7 R8" and rummy_hand(state, 0) == "K1"


def test_r6_a_play_needs_a_tile_from_the_hand() -> None:
    """R6: committing nothing is never legal; ending the turn is."""
    state = build_rummy_state(hands={0: "K1", 1: "Y5"}, table=["R3 R4 R5"], closing="B5", first_play={0: True})
    assert legal(state) == {"end"}


def test_r7_swapped_joker_must_be_reused_in_the_same_play() -> None:
    """R7: table R5 ★ R7; K1 K2 alone cannot take the joker (it is needed as the R6); with R6 they can."""
    state = build_rummy_state(hands={0: "R6 K1 K2 Y13", 1: "Y5"}, table=["R5 * R7"], closing="B5", first_play={0: True})
    state.step(ADD["K1"])
    state.step(ADD["K2"])
    assert legal(state) == {"add R6"}  # no commit yet: the joker would be missing from R5 _ R7
    state.step(ADD["R6"])
    assert legal(state) == {"commit"}
    state.step(A.COMMIT)
    assert table_text(state) == "K1 K2 R5 R6 R7 *" and rummy_hand(state, 0) == "Y13"
    assert state.table[JOKER] == 1  # the joker stayed on the table (it never returns to a hand)


def test_r7_joker_in_a_three_tile_set_cannot_be_swapped_out() -> None:
    """R7: table K9 B9 ★; R9 completes the set with the joker, but R9 and Y9 would free the joker with
    nowhere to go (a set holds at most 4), so after R9 the Y9 is masked."""
    state = build_rummy_state(hands={0: "R9 Y9 K1", 1: "Y5"}, table=["K9 B9 *"], closing="B5", first_play={0: True})
    assert legal(state) == {"add R9", "add Y9", "end"}
    state.step(ADD["R9"])
    assert legal(state) == {"commit"}
    state.step(A.COMMIT)
    assert table_text(state) == "K9 R9 B9 *"


def test_r8_closing_with_the_closing_tile() -> None:
    """R8, R10: the last tiles plus the closing tile close the hand; the other player pays his hand."""
    state = build_rummy_state(
        hands={0: "R10 R11", 1: "K5 *"}, table=["K1 K2 K3"], closing="R12", first_play={0: True}, stock="B1"
    )
    assert legal(state) == {"add R10", "add R11", "closing", "end"}
    play(state, "R10 R11", closing=True)
    assert state.phase == Phase.HAND_OVER and state.closer == 0 and state.closing_tile == NO_TILE
    assert state.hand_scores == [0, 55] and state.match_scores == [0, 55]  # 5 + joker 50
    assert table_text(state) == "K1 K2 K3 R10 R11 R12"


def test_r8_closing_tile_that_does_not_fit() -> None:
    """R8: the closing tile K3 fits nowhere; the player may still empty his hand, and keeps playing."""
    state = build_rummy_state(
        hands={0: "R10 R11", 1: "Y5"}, table=["R7 R8 R9"], closing="K3", first_play={0: True}, stock="B1 B2"
    )
    assert legal(state) == {"add R10", "add R11", "end"}
    play(state, "R10 R11")
    assert state.phase == Phase.PLAY and state.closer is None and state.hand_size(0) == 0
    assert state.closing_tile == tile("K3") and state.current == 1


def test_r8_closing_tile_only_with_the_whole_hand() -> None:
    """R8: the closing tile is never used for ordinary melds: with R10 R11 Y2 in hand, R12 cannot be placed."""
    state = build_rummy_state(hands={0: "R10 R11 Y2", 1: "Y5"}, table=["K1 K2 K3"], closing="R12", first_play={0: True})
    assert "closing" not in legal(state) and "commit" not in legal(state)


def test_r11c_empty_hand_closes_with_the_closing_tile_alone() -> None:
    """R11c: a player whose hand is empty may close with the closing tile alone (his choice)."""
    state = build_rummy_state(
        hands={0: "", 1: "K5"}, table=["R9 R10 R11"], closing="R12", first_play={0: True}, leftover=1
    )
    assert legal(state) == {"closing", "end"}
    state.step(A.ADD_CLOSING)
    assert legal(state) == {"commit"}
    state.step(A.COMMIT)
    assert state.closer == 0 and state.hand_scores[0] == 0


def test_r9_blocked_hand() -> None:
    """R9, R11e: stock empty and a full round without a play: the hand ends, nobody closes, all pay."""
    state = build_rummy_state(
        hands={0: "K5 * *", 1: ""}, table=["R1 R2 R3"], closing="Y13", first_play={0: True, 1: True}, leftover=1
    )
    state.step(A.END_TURN)
    assert state.phase == Phase.PLAY and state.blocked_turns == 1
    state.step(A.END_TURN)
    assert state.phase == Phase.HAND_OVER and state.blocked and state.closer is None
    # 828 = all tiles (8 x 91 + 2 x 50); player 1 holds all but K5 * *, R1 R2 R3 and Y13
    assert state.hand_scores == [105, 828 - 105 - 6 - 13]
    assert state.hand_winners() == [0]


def test_r9_a_play_resets_the_blocked_count() -> None:
    """R11e: a play in the round means the round does not block the hand."""
    state = build_rummy_state(
        num_players=3,
        hands={0: "K5", 1: "R4"},
        table=["R1 R2 R3"],
        closing="Y13",
        first_play={0: True, 1: True},
        leftover=2,
        blocked_turns=1,
    )
    state.step(A.END_TURN)
    assert state.blocked_turns == 2
    play(state, "R4")
    assert state.blocked_turns == 0 and state.phase == Phase.PLAY and state.current == 2


def three_players_seat_0_closes(**kwargs: Any) -> RummyState:
    """Seat 0 of 3 can close with R10 R11 and the closing R12; the others hold K5 and Y5 Y6."""
    hands = {0: "R10 R11", 1: "K5", 2: "Y5 Y6"}
    return build_rummy_state(3, hands=hands, table=["K1 K2 K3"], closing="R12", first_play={0: True}, **kwargs)


def test_r10_match_of_four_hands_lowest_total_wins() -> None:
    """R10, R11i: four hands; the start moves one seat left each hand; the lowest total wins; ties share."""
    rng = np.random.default_rng(0)
    state = RummyState.new_game(rng, "rummy", 3)
    starters = [state.starter]
    for _ in range(3):
        state._finish_hand(closer=state.current)
        assert state.phase == Phase.HAND_OVER
        state.next_hand(rng)
        starters.append(state.starter)
    assert starters == [(starters[0] + i) % 3 for i in range(4)]
    last = three_players_seat_0_closes(match_scores=[30, 20, 9], hand_number=3)
    play(last, "R10 R11", closing=True)
    assert last.phase == Phase.MATCH_OVER and last.match_scores == [30, 25, 20] and last.match_winners() == [2]
    tie = build_rummy_state(
        num_players=2, hands={0: "R10 R11", 1: "K5"}, table=["K1 K2 K3"], closing="R12",
        first_play={0: True}, match_scores=[5, 0], hand_number=3,
    )  # fmt: skip
    play(tie, "R10 R11", closing=True)
    assert tie.match_scores == [5, 5] and tie.match_winners() == [0, 1]


def test_e5_hand_rewards_are_zero_sum() -> None:
    """E5, R11h: score rewards = mean of the others' totals minus one's own; win rewards; both sum to 0."""
    state = three_players_seat_0_closes()
    play(state, "R10 R11", closing=True)
    assert state.hand_scores == [0, 5, 11]
    assert state.hand_rewards("score", 1.0) == [8.0, 0.5, -8.5]
    assert state.hand_rewards("win") == [1.0, -0.5, -0.5]
    assert sum(state.hand_rewards("score", 1.0)) == 0.0


def test_e1_e4_random_games_conserve_tiles_and_replay_byte_for_byte() -> None:
    """E1: tiles conserved at every step; E4: same seed, same actions -> the same JSON, byte for byte."""
    rng = np.random.default_rng(4)
    state = RummyState.new_game(np.random.default_rng(99), "rummy", 3)
    actions = []
    while state.phase == Phase.PLAY:
        action = int(rng.choice(np.flatnonzero(state.legal_mask())))
        actions.append(action)
        state.step(action)
        state.check_conservation()
    again = RummyState.new_game(np.random.default_rng(99), "rummy", 3)
    for action in actions:
        again.step(action)
    assert again.to_json() == state.to_json()
    assert RummyState.from_json(state.to_json()).to_json() == state.to_json()


def test_e2_observation_hides_other_hands_and_stock_order() -> None:
    """E2: re-dealing what player 0 cannot see leaves his observation unchanged; his own hand shows."""
    state = RummyState.new_game(np.random.default_rng(5), "rummy", 4)
    for seed in range(5):
        other = state.determinize(0, np.random.default_rng(seed))
        other.check_conservation()
        assert np.array_equal(encode(other, 0), encode(state, 0))
        assert not np.array_equal(other.hands, state.hands) or state.current == 0
    changed = state.clone()
    changed.hands[0, :] = 0
    changed.hands[0, JOKER] = 0
    assert not np.array_equal(encode(changed, 0), encode(state, 0))


def test_illegal_action_changes_nothing() -> None:
    """E3: an action the mask forbids raises a clear error and changes nothing."""
    state = build_rummy_state(hands={0: "K1", 1: "Y5"}, closing="B5")
    before = state.to_json()
    with pytest.raises(IllegalActionError, match="illegal action"):
        state.step(A.COMMIT)
    with pytest.raises(IllegalActionError, match="out of range"):
        state.step(99)
    assert state.to_json() == before


def test_rules_preset_and_errors() -> None:
    """The rummy preset carries the fields the sheets vary; a bad value names the field."""
    rules = load_rummy_rules("rummy")
    assert (rules.hand_size, rules.first_play_minimum, rules.joker_penalty, rules.hands_per_match) == (14, 30, 50, 4)
    assert rules.players == (2, 3, 4)
    with pytest.raises(RulesError, match="first_play_minimum"):
        load_rummy_rules("rummy", {"first_play_minimum": -1})
    with pytest.raises(RulesError, match="unknown rummy rules field"):
        load_rummy_rules("rummy", {"muerto_size": 11})
    with pytest.raises(RulesError, match="num_players=5"):
        RummyState.new_game(np.random.default_rng(0), "rummy", 5)
    cheap = load_rummy_rules("rummy", {"first_play_minimum": 0})
    state = build_rummy_state(rules=cheap, hands={0: "K1 K2 K3", 1: "Y5"}, closing="B5")
    assert "commit" not in legal(state) and "add K1" in legal(state)


def test_r11h_the_next_hand_does_not_report_the_last_hands_result() -> None:
    """R10, R11h: after next_hand, hand_winners and hand_rewards describe no hand yet; they reported the
    last hand's winners and rewards while the next one was in play. A reward mode is checked, not guessed."""
    state = three_players_seat_0_closes()
    play(state, "R10 R11", closing=True)
    assert state.hand_winners() == [0] and state.hand_rewards("win") == [1.0, -0.5, -0.5]
    state.next_hand(np.random.default_rng(3))
    assert state.phase == Phase.PLAY and state.hand_scores is None
    assert state.hand_winners() == [] and state.hand_rewards("win") == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="reward must be one of"):
        state.hand_rewards("scroe")
    with pytest.raises(ValueError, match="reward_scale"):
        state.hand_rewards("score", 0)


def test_r11i_each_hand_of_a_match_counts_its_own_turns() -> None:
    """R11i: a match deals hand after hand on one state; ``turns`` (the render's "hand h/H, turn t")
    ran on from the last hand's count. Each hand now starts at turn 0, as a hand's record does."""
    rng = np.random.default_rng(11)
    state = RummyState.new_game(rng, "rummy", 2)
    while state.phase == Phase.PLAY:
        state.step(int(rng.choice(np.flatnonzero(state.legal_mask()))))
    assert state.turns > 0
    state.next_hand(rng)
    assert state.turns == 0 and state.hand_number == 1


def test_a_rummy_state_from_data_must_be_possible() -> None:
    """E1, R3: from_dict refused nothing but conservation: negative counts, seats out of range, a lone
    tile on the table, scores of the wrong length, a pending closing tile that is gone (no legal action),
    and a bad phase or tile raised a bare KeyError or IndexError."""
    state = RummyState.new_game(np.random.default_rng(5), "rummy", 2)
    good = state.to_dict()
    assert RummyState.from_dict(good).to_dict() == good

    def changed(**fields: Any) -> dict[str, Any]:
        return {**good, **fields}

    hands = np.asarray(good["hands"])
    moved = hands.copy()
    kind = int(np.flatnonzero(moved[0])[0])
    moved[0, kind] -= 1 + moved[0, kind]  # -1 of a kind seat 0 holds...
    moved[1, kind] += 1 + hands[0, kind]  # ...the copies given to seat 1: conservation holds
    lone = np.zeros(53, dtype=int)
    lone[kind] = 1
    from_hand = hands.copy()
    from_hand[0, kind] -= 1
    bad = {
        "negative count": changed(hands=moved.tolist()),
        "current": changed(current=-1),
        "melds (R3)": changed(table=lone.tolist(), hands=from_hand.tolist()),
        "match_scores has 3 entries": changed(match_scores=[0, 0, 0]),
        "no closing tile is left": changed(pending_closing=True, closing_tile=NO_TILE),
        "KeyError": changed(phase="BOGUS"),
        "closing_tile 60": changed(closing_tile=60),
        "current 7": changed(current=7),
    }
    for reason, data in bad.items():
        with pytest.raises(ValueError, match=re.escape(reason)):
            RummyState.from_dict(data)


def test_build_rummy_state_refuses_seats_and_counts_out_of_range() -> None:
    """build_rummy_state took current=5, blocked_turns=-1 or 9, a float seat and match scores of the
    wrong length (a state whose first step crashed or never ended)."""
    base = {"hands": {0: "R5 R6", 1: "K3"}, "table": ["R9 R10 R11"], "closing": "R12"}
    for options, message in (
        ({"current": 5}, "current 5 is outside 0..1"),
        ({"current": 0.5}, "current must be a whole number"),
        ({"blocked_turns": -1}, "blocked_turns -1 is outside 0..2"),
        ({"blocked_turns": 9}, "blocked_turns 9 is outside 0..2"),
        ({"match_scores": [0, 0, 0]}, "match_scores has 3 entries, not 2"),
        ({"match_scores": [0.5, 1]}, "match_scores: expected whole numbers"),
    ):
        with pytest.raises(ValueError, match=re.escape(message)):
            build_rummy_state(**base, **options)  # type: ignore[arg-type]
