"""The Rummy mask against an independent oracle (E3), property tests over random hands, and the env."""

from __future__ import annotations

import time

import numpy as np
import pytest
from pettingzoo.test import api_test, render_test, seed_test

import burako_env
from burako_env.rummy import actions as A
from burako_env.rummy.engine import NO_TILE, Phase, RummyState
from burako_env.rummy.observation import OBSERVATION_SIZE, encode
from burako_env.rummy.rules import load_rummy_rules
from burako_env.rummy.scenario import build_rummy_state
from burako_env.scenario import tiles_text
from burako_env.tiles import JOKER, KIND_NUMBER_LIST, NUM_KINDS
from tests.rummy_oracle import MELDS, brute_partition, brute_value, sub_multisets

FULL = np.array([2] * NUM_KINDS, dtype=np.int64)


def oracle_plays(state: RummyState) -> list[tuple[np.ndarray, bool]]:
    """E3 from first principles: list every legal play by brute force, then what can still reach one.

    A play is a sub-multiset Q of the hand, with or without the closing tile
    (then Q is the whole hand, R8); legal when the table (none before the first
    play, R5) plus Q splits into melds (brute force), worth at least the
    minimum on a first play (jokers at their best number, closing tile not
    counted, R11a/b), and not empty (or the closing tile alone on an empty
    hand, R11c). The sampled closing tiles are naturals.
    """
    player = state.current
    hand = state.hands[player]
    first = not state.first_play_done[player]
    base = np.zeros(NUM_KINDS, np.int64) if first else state.table
    plays = []
    for sub in sub_multisets(hand):
        q = np.array(sub, dtype=np.int64)
        for with_closing in (False, True):
            if with_closing and (state.closing_tile == NO_TILE or not (q == hand).all()):
                continue
            if not with_closing and q.sum() == 0:
                continue
            tiles = base + q
            if with_closing:
                tiles = tiles.copy()
                tiles[state.closing_tile] += 1
            if first:
                value = brute_value(tiles)
                closing_value = KIND_NUMBER_LIST[state.closing_tile] if with_closing else 0
                ok = value is not None and value - closing_value >= state.rules.first_play_minimum
            else:
                ok = brute_partition(tiles)
            if ok:
                plays.append((q, with_closing))
    return plays


def oracle_mask(state: RummyState, plays: list[tuple[np.ndarray, bool]]) -> np.ndarray:
    """The actions that keep some legal play of ``plays`` reachable from the pending play (E3)."""
    mask = np.zeros(A.NUM_ACTIONS, dtype=np.int8)
    p = state.pending
    for q, with_closing in plays:
        if state.pending_closing and not with_closing:
            continue
        if not (q >= p).all():
            continue
        for kind in np.flatnonzero(q > p):
            mask[A.ADD_TILE + kind] = 1
        if with_closing and not state.pending_closing:
            mask[A.ADD_CLOSING] = 1
        if (q == p).all() and with_closing == state.pending_closing:
            mask[A.COMMIT] = 1
    mask[A.END_TURN] = not p.any() and not state.pending_closing
    return mask


def random_small_state(rng: np.random.Generator) -> RummyState:
    """A small random position: 0-3 melds on the table, 1-5 hand tiles, a natural closing tile."""
    table = np.zeros(NUM_KINDS, np.int64)
    for _ in range(int(rng.integers(0, 4))):
        naturals, jokers, _ = MELDS[rng.integers(len(MELDS))]
        trial = table.copy()
        for kind in naturals:
            trial[kind] += 1
        trial[JOKER] += jokers
        if (trial <= FULL).all() and trial[JOKER] <= 2:
            table = trial
    left = FULL - table
    left[JOKER] = 2 - table[JOKER]
    pool = np.repeat(np.arange(NUM_KINDS), left)
    # bias the hand toward tiles near the table's and toward melds: more legal plays to test
    size = int(rng.integers(1, 6))
    picks = rng.choice(pool, size=size + 1, replace=False)
    closing = int(picks[0]) if picks[0] != JOKER else 0
    hand_tiles = [int(k) for k in picks[1:]]
    if rng.random() < 0.5:  # a meld-like hand
        naturals, jokers, _ = MELDS[rng.integers(len(MELDS))]
        extra = list(naturals) + [JOKER] * jokers
        hand_tiles = (extra + hand_tiles)[:5]
    hand = np.bincount(np.asarray(hand_tiles, dtype=np.int64), minlength=NUM_KINDS)
    used = table + hand
    used[closing] += 1
    if (used > FULL).any():
        return random_small_state(rng)
    state = build_rummy_state(
        hands={0: tiles_text(hand), 1: ""},
        table=tiles_text(table) if table.any() else (),
        closing=tiles_text(np.bincount([closing], minlength=NUM_KINDS)),
        first_play={0: bool(rng.random() < 0.6)},
        stock="",
    )
    return state


def compare_mask_with_oracle(states: int, seed: int) -> tuple[int, int]:
    """E3 on ``states`` sampled states: the mask equals the brute-force oracle, at the state and at
    each step of a walk into one of its legal plays; returns (states with pending plays, of them
    with COMMIT legal)."""
    rng = np.random.default_rng(seed)
    compared = with_pending = with_commit = 0
    while compared < states:
        state = random_small_state(rng)
        plays = oracle_plays(state)
        expected = oracle_mask(state, plays)
        assert np.array_equal(state.legal_mask(), expected), (state.to_json(), np.flatnonzero(expected))
        compared += 1
        if plays and rng.random() < 0.8:  # walk into a random legal play, comparing at each step
            q, with_closing = plays[rng.integers(len(plays))]
            order = rng.permutation(np.repeat(np.arange(NUM_KINDS), q)).tolist()
            steps = [A.ADD_TILE + k for k in order] + ([A.ADD_CLOSING] if with_closing else [])
            for action in steps[: int(rng.integers(1, len(steps) + 1))]:
                state.step(action)
                expected = oracle_mask(state, plays)
                assert np.array_equal(state.legal_mask(), expected), state.to_json()
                compared += 1
                with_pending += 1
                with_commit += int(expected[A.COMMIT])
    return with_pending, with_commit


def test_e3_mask_equals_the_oracle_on_2500_states() -> None:
    """E3: the mask equals the brute-force oracle on 2,500 sampled states (with pending plays; the
    slow twin compares 25,000)."""
    with_pending, with_commit = compare_mask_with_oracle(2500, seed=2024)
    assert with_pending > 500 and with_commit > 250


@pytest.mark.slow
def test_e3_mask_equals_the_oracle_on_25000_states_slow() -> None:
    """E3 as above on 25,000 other sampled states."""
    with_pending, with_commit = compare_mask_with_oracle(25_000, seed=2025)
    assert with_pending > 5000 and with_commit > 2500


def check_whole_random_hands(num_players: int, hands: int) -> None:
    """E1-E5, R4, R8-R10 over whole hands played to the end with random legal
    actions: tiles conserved at every step (E1), the player to act always has an action and every
    unmasked action applies (E3), END_TURN only with nothing pending; at one random step per hand the
    observer's view hides nothing else (E2: a determinized state looks the same to him) and a clone is
    independent; at the end the hand is closed by the player who placed the closing tile (R8) or
    blocked with an empty stock (R9), the totals are R10's, the rewards zero-sum (E5), the JSON round
    trip exact (E4)."""
    rules = load_rummy_rules("rummy")
    rng = np.random.default_rng(num_players)
    closed = blocked = 0
    for hand_index in range(hands):
        state = RummyState.new_game(np.random.default_rng(hand_index * 10 + num_players), rules, num_players)
        probe = int(rng.integers(0, 60))
        steps = 0
        while state.phase == Phase.PLAY:
            mask = state.legal_mask()
            assert mask.any()  # E3: the player to act always has an action
            assert mask[A.END_TURN] == (not state.pending.any() and not state.pending_closing)
            if steps == probe:
                observer = int(rng.integers(num_players))
                other = state.determinize(observer, rng)
                assert np.array_equal(encode(other, observer), encode(state, observer))  # E2
                copy = state.clone()
                copy.step(int(rng.choice(np.flatnonzero(mask))))
                copy.check_conservation()
                assert np.array_equal(state.legal_mask(), mask) and state.to_json() != copy.to_json()
            state.step(int(rng.choice(np.flatnonzero(mask))))
            state.check_conservation()  # E1
            steps += 1
        values = [state.hand_value(p) for p in range(num_players)]
        if state.closer is None:
            blocked += 1
            assert state.blocked and not state.stock and state.closing_tile != NO_TILE  # R9
            assert state.hand_scores == values
        else:
            closed += 1
            assert not state.blocked and state.closing_tile == NO_TILE and state.hand_size(state.closer) == 0  # R8
            assert state.hand_scores == [0 if p == state.closer else values[p] for p in range(num_players)]  # R10
            assert state.hand_winners() == [state.closer]
        assert state.match_scores == state.hand_scores
        assert abs(sum(state.hand_rewards("score"))) < 1e-9 and abs(sum(state.hand_rewards("win"))) < 1e-9  # E5
        assert RummyState.from_json(state.to_json()).to_json() == state.to_json()  # E4
    assert closed > hands // 2


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_properties_over_500_whole_random_hands(num_players: int) -> None:
    """The properties of :func:`check_whole_random_hands` over 500 whole hands per player count
    (the slow twin plays 2,000)."""
    check_whole_random_hands(num_players, 500)


@pytest.mark.slow
@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_properties_over_2000_whole_random_hands_slow(num_players: int) -> None:
    """The properties of :func:`check_whole_random_hands` over 2,000 whole hands per player count
    (about 20-70 s each on one core)."""
    check_whole_random_hands(num_players, 2000)


def test_env_api_seed_render() -> None:
    """The PettingZoo env rummy_v0 passes api_test, seed_test and render_test."""
    env = burako_env.rummy_env(num_players=3)
    assert env.metadata["name"] == "rummy_v0"
    api_test(env, num_cycles=200)
    seed_test(lambda: burako_env.rummy_env(num_players=2), num_cycles=100)
    render_test(lambda render_mode=None: burako_env.rummy_env(num_players=2, render_mode=render_mode))


def test_env_plays_a_match_with_zero_sum_rewards() -> None:
    """E5: a full random match through the env; rewards sum to zero; the picture is an RGB array."""
    env = burako_env.rummy_raw_env(num_players=2, match=True, render_mode="rgb_array")
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    total = {a: 0.0 for a in env.possible_agents}
    started = time.perf_counter()
    for agent in env.agent_iter():
        obs, reward, termination, truncation, _info = env.last()
        total[agent] += reward
        assert obs["observation"].shape == (OBSERVATION_SIZE,)
        if termination or truncation:
            env.step(None)
            continue
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    assert env.game.phase == Phase.MATCH_OVER and abs(sum(total.values())) < 1e-9
    image = env.render()
    assert image.ndim == 3 and image.shape[2] == 3 and image.dtype == np.uint8
    assert time.perf_counter() - started < 120


def test_env_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="reward"):
        burako_env.rummy_raw_env(reward="points")
    with pytest.raises(burako_env.RulesError, match="num_players=5"):
        burako_env.rummy_raw_env(num_players=5)


def test_env_refuses_non_integer_actions_and_steps_outside_a_game() -> None:
    """Actions were int()-ed: 9.7, "9" and True were played as 9, 9 and 1. Now, as in Burako's env, a
    non-integer action is refused and changes nothing; step() before reset() or after the game is a
    clear RuntimeError (was AttributeError / KeyError); numpy integers work, seeds included."""
    env = burako_env.rummy_raw_env()
    with pytest.raises(RuntimeError, match=r"call reset\(\)"):
        env.step(0)
    env.reset(seed=np.int64(0))
    before = env.game.to_dict()
    for bad in (9.7, "9", np.float64(9.5), True, None):
        with pytest.raises(ValueError, match="action must be an integer"):
            env.step(bad)  # type: ignore[arg-type]
    assert env.game.to_dict() == before
    while env.agents:
        obs, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else np.int64(np.flatnonzero(obs["action_mask"])[0]))
    with pytest.raises(RuntimeError, match="the game is over"):
        env.step(0)


def test_agents_play_rummy() -> None:
    """The registry's random agent and the Rummy heuristic play whole hands through the env, legally."""
    from agents.registry import make_agent

    for seed in range(3):
        env = burako_env.rummy_raw_env(num_players=3)
        env.reset(seed=seed)
        seats = {a: make_agent("rummy-heuristic" if i == 0 else "random", seed=i) for i, a in enumerate(env.agents)}
        for i, agent in enumerate(env.agents):
            seats[agent].reset(i, env.rules, 3)
        for agent in env.agent_iter():
            obs, _reward, termination, truncation, _info = env.last()
            if termination or truncation:
                env.step(None)
                continue
            action = seats[agent].act(obs)
            assert obs["action_mask"][action]
            env.step(action)
        assert env.game.phase != Phase.PLAY


def play_turn(agent: object, state: RummyState) -> list[int]:
    """The actions ``agent`` takes in the current player's turn (applied to ``state``)."""
    player, played = state.current, []
    while state.current == player and state.phase == Phase.PLAY:
        action = agent.act({"observation": encode(state, player), "action_mask": state.legal_mask()})
        played.append(action)
        state.step(action)
    return played


def test_greedy_plans_the_most_value_and_keeps_jokers() -> None:
    """The greedy player's turn places the highest-value legal play, without its joker."""
    from agents.rummy_heuristic import RummyGreedy

    state = build_rummy_state(
        hands={0: "R5 R6 R7 K10 K11 K12 * Y1", 1: "Y5"}, table=["B1 B2 B3"], closing="B9", first_play={0: True}
    )
    agent = RummyGreedy()
    agent.reset(0, state.rules, 2)
    played = play_turn(agent, state)
    assert tiles_text(np.bincount([a for a in played if a < NUM_KINDS], minlength=NUM_KINDS)) == "K10 K11 K12 R5 R6 R7"
    assert played[-1] == A.COMMIT and state.hands[0, JOKER] == 1


def test_heuristic_first_play_then_holds_then_closes() -> None:
    """R5, R8: the heuristic makes its first play at once (the most value, joker kept), then keeps its
    tiles while the stock has some (playing only feeds the others' closing test), and closes when legal."""
    from agents.rummy_heuristic import RummyHeuristic

    agent = RummyHeuristic()
    agent.reset(0, None, 2)
    state = build_rummy_state(hands={0: "R10 R11 R12 K1 K2 K3 * Y1", 1: "Y5"}, closing="B9", stock="Y2 Y3 Y4")
    play_turn(agent, state)
    assert tiles_text(state.table) == "K1 K2 K3 R10 R11 R12" and tiles_text(state.hands[0]) == "Y1 *"
    state = build_rummy_state(
        hands={0: "R5 R6 R7 K10 K11 K12 * Y1", 1: "Y5"},
        table=["B1 B2 B3"],
        closing="B9",
        first_play={0: True},
        stock="Y2",
    )
    assert play_turn(agent, state) == [A.END_TURN] and state.hand_size(0) == 8
    state = build_rummy_state(
        hands={0: "R5 R6 K10 Y1 Y3", 1: "Y5"},
        table=["B1 B2 B3", "R7 R8 R9", "K11 K12 K13"],
        closing="Y2",
        first_play={0: True},
        stock="Y3",
    )
    played = play_turn(agent, state)
    assert played[-2:] == [A.ADD_CLOSING, A.COMMIT] and state.closer == 0 and state.hand_scores == [0, 5]


def test_heuristic_sheds_when_the_stock_is_empty() -> None:
    """R9, R10: with the stock empty a hand can end blocked and be scored by totals, so the heuristic
    plays the most value it can, its joker included (it costs 50)."""
    from agents.rummy_heuristic import RummyHeuristic

    agent = RummyHeuristic()
    agent.reset(0, None, 2)
    state = build_rummy_state(
        hands={0: "R5 R6 K10 K11 K12 * Y1", 1: "Y5"},
        table=["B1 B2 B3"],
        closing="B9",
        first_play={0: True},
        leftover=1,
        turn_started_empty=True,
    )
    play_turn(agent, state)
    assert tiles_text(state.hands[0]) == "Y1" and state.hands[1].sum() > 1


def test_import_burako_env_leaves_rummy_for_first_use() -> None:
    """`import burako_env` does not build the Rummy tables; `burako_env.rummy_env` loads them when asked."""
    import subprocess
    import sys

    code = (
        "import sys, burako_env; assert 'burako_env.rummy.partition' not in sys.modules; "
        "burako_env.rummy_env(num_players=2); assert 'burako_env.rummy.partition' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
