"""Search on the compiled core (issue 16): ``FastGame.determinize`` (E1, E2)
and the search agents (a legal move, a forced move at once, the time budget)."""

from __future__ import annotations

import numpy as np
import pytest

from burako_env.engine import GameState, Phase
from burako_env.fast import KNOWN, NK, FastGame
from burako_env.observation import Observer
from burako_env.rules import load_rules


def _random_states(seed: int, rules: str, num_players: int, every: int) -> list[FastGame]:
    """Every ``every``-th state of one hand played by uniform random moves."""
    game = FastGame.new_game(np.random.default_rng(seed), rules, num_players)
    rng = np.random.default_rng(seed + 1)
    out: list[FastGame] = []
    step = 0
    while not game.hand_over:
        if step % every == 0 or game.phase == Phase.PRIVILEGE:
            out.append(game.clone())
        game.apply(int(rng.choice(np.flatnonzero(game.legal_mask()))))
        step += 1
    return out


def _tile_counts(game: FastGame) -> np.ndarray:
    return game.to_game_state().tile_counts()


@pytest.mark.parametrize(("rules", "num_players"), [("burako", 2), ("burako", 4), ("burako_casual", 3)])
def test_e2_fast_determinize_same_draws_as_engine(rules: str, num_players: int) -> None:
    """E2/E1: from the same generator state, ``FastGame.determinize`` gives
    exactly ``GameState.determinize``'s state (so the same distribution), the
    observer's observation and mask do not change, the tiles are conserved,
    and hidden parts do change."""
    full = load_rules(rules).full_counts()
    observer = Observer(num_players, load_rules(rules))
    checked = changed = 0
    for seed in (1, 2):
        for game in _random_states(seed, rules, num_players, every=9):
            state = game.to_game_state()
            assert FastGame.from_game_state(state).to_dict() == game.to_dict()
            for player in range(num_players):
                fast = game.determinize(player, np.random.default_rng(checked))
                slow = state.determinize(player, np.random.default_rng(checked))
                assert fast.to_dict() == slow.to_dict()
                assert np.array_equal(fast.encode(player), game.encode(player))
                assert np.array_equal(fast.encode(player), observer.encode(slow, player))
                if player == game.current:
                    assert np.array_equal(fast.legal_mask(), game.legal_mask())
                else:
                    assert np.array_equal(fast.legal_mask(), slow.legal_mask().astype(np.int8))
                assert np.array_equal(_tile_counts(fast), full)
                changed += fast.to_dict()["stock"] != game.to_dict()["stock"]
                checked += 1
    assert checked >= 40 and changed >= 0.9 * checked


def test_e2_fast_determinize_distribution_matches_engine() -> None:
    """E2, statistically: with independent generators, the opponent's
    resampled hand has the same per-kind distribution in both engines (a
    chi-square test of homogeneity on 53 kinds, 3,000 samples each), and
    the known tiles (taken with the pile) are always in it."""
    chi2 = pytest.importorskip("scipy.stats").chi2
    rng = np.random.default_rng(7)
    game = FastGame.new_game(np.random.default_rng(7), "burako", 2)
    # play until the opponent (seat 1) holds some tiles known from a pile take
    while not (game.current == 0 and game.phase == Phase.DRAW and game.st[KNOWN + NK : KNOWN + 2 * NK].sum() > 0):
        mask = game.legal_mask()
        take = 1 if mask[1] else None  # TAKE_PILE whenever legal, so tiles become known
        game.apply(take if take is not None else int(rng.choice(np.flatnonzero(mask))))
        if game.hand_over:
            pytest.fail("the hand ended before a pile take")
    state = game.to_game_state()
    known = state.known[1].astype(np.int64)
    samples = 3000
    fast_counts = np.zeros(53, dtype=np.int64)
    slow_counts = np.zeros(53, dtype=np.int64)
    fast_rng, slow_rng = np.random.default_rng(11), np.random.default_rng(12)
    for _ in range(samples):
        hand = game.determinize(0, fast_rng).to_dict()["hands"][1]
        assert np.all(np.asarray(hand) >= known)
        fast_counts += hand
        slow_counts += state.determinize(0, slow_rng).hands[1]
    fast_counts -= samples * known
    slow_counts -= samples * known
    used = (fast_counts + slow_counts) > 0
    table = np.stack([fast_counts[used], slow_counts[used]]).astype(float)
    expected = table.sum(axis=0) * table.sum(axis=1, keepdims=True) / table.sum()
    statistic = float(((table - expected) ** 2 / expected).sum())
    assert statistic < chi2.ppf(0.999, int(used.sum()) - 1), statistic


def test_fast_determinize_rejects_a_bad_seat() -> None:
    game = FastGame.new_game(np.random.default_rng(0))
    before = game.to_dict()
    with pytest.raises(ValueError, match="not a seat"):
        game.determinize(2, np.random.default_rng(0))
    assert game.to_dict() == before


def test_from_game_state_round_trips_a_finished_hand() -> None:
    """Scores, end reason and closer come back too (the search's leaves)."""
    game = FastGame.new_game(np.random.default_rng(3))
    rng = np.random.default_rng(4)
    while not game.hand_over:
        game.apply(int(rng.choice(np.flatnonzero(game.legal_mask()))))
    state: GameState = game.to_game_state()
    back = FastGame.from_game_state(state)
    assert back.to_dict() == game.to_dict()
    assert back.side_rewards() == state.side_rewards()
