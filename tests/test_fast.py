"""One truth: the compiled core (fast.py, vector.py) against the readable engine.

The same seeds and actions go through both; masks, observations, rewards and
final states must be identical. Random play rarely closes a hand or reaches
the exact look-ahead (B23 with few tiles, V3, the clean-canasta-to-close
table), so half the hands are played by an *eager* random policy that melds
and adds whenever it can, which takes muertos, closes hands and runs into
those states. The default run plays 300 hands per preset and player count
(``BURAKO_DIFF_GAMES`` sets another number); the ``slow`` twin plays 3,000
(``pytest -m slow tests/test_fast.py``).
"""

from __future__ import annotations

import os
import random
from collections import Counter

import numpy as np
import pytest

from burako_env import actions as A
from burako_env import fast as F
from burako_env.engine import GameState, IllegalActionError, Phase
from burako_env.observation import Observer
from burako_env.rules import load_rules, preset_names
from burako_env.vector import BurakoVectorEnv, sample_legal_actions

DIFF_GAMES = int(os.environ.get("BURAKO_DIFF_GAMES", "300"))
SLOW_DIFF_GAMES = 3000
TABLES = [(name, n) for name in preset_names() for n in load_rules(name).players]


def _pick(mask: np.ndarray, rnd: random.Random, eager: bool) -> int:
    legal = np.flatnonzero(mask).tolist()
    if eager and rnd.random() < 0.9:
        plays = [a for a in legal if a >= A.MELD_BASE or A.CHOOSE_BASE <= a < A.DISCARD_BASE]
        if plays:
            return rnd.choice(plays)
    return rnd.choice(legal)


def _play_both(rules: str, n: int, seed: int, eager: bool, observer: Observer, stats: Counter) -> None:
    slow = GameState.new_game(np.random.default_rng(seed), rules, n)
    fast = F.FastGame.new_game(np.random.default_rng(seed), rules, n)
    rnd = random.Random(seed)
    step = 0
    assert fast.to_dict() == slow.to_dict(), f"seed {seed}: different deals"
    while not slow.hand_over:
        mask = slow.legal_mask()
        fmask = fast.legal_mask()
        if not np.array_equal(mask, fmask):
            diff = np.flatnonzero(mask != fmask).tolist()
            raise AssertionError(f"{rules} {n}p seed {seed} step {step} ({slow.phase.name}): masks differ at {diff}")
        observers = range(n) if step % 7 == 0 else (slow.current,)
        for p in observers:
            if not np.array_equal(observer.encode(slow, p), fast.encode(p)):
                raise AssertionError(f"{rules} {n}p seed {seed} step {step}: observations of seat {p} differ")
        if slow._constrained() if slow.phase in (Phase.PLAY, Phase.CHOOSE_END) else False:
            stats["constrained steps"] += 1
        if slow.pile_top_required >= 0:
            stats["V3 steps"] += 1
        action = _pick(mask, rnd, eager)
        slow.apply(action)
        fast.apply(action)
        step += 1
    assert fast.to_dict() == slow.to_dict(), f"{rules} {n}p seed {seed}: final states differ"
    assert fast.side_rewards() == slow.side_rewards()
    stats[slow.end_reason] += 1
    stats["steps"] += step


def _check_equivalence(rules: str, num_players: int, hands: int) -> None:
    observer = Observer(num_players, load_rules(rules))
    stats: Counter = Counter()
    for seed in range(hands):
        _play_both(rules, num_players, seed, eager=seed % 2 == 1, observer=observer, stats=stats)
    assert sum(stats[r] for r in ("closed", "stock_exhausted", "void", "truncated")) == hands
    if hands >= 200:
        # the exact look-ahead and closings were really exercised
        assert stats["closed"] > 0, stats
        assert stats["constrained steps"] > 0, stats
        if load_rules(rules).pile_top_must_be_melded:
            assert stats["V3 steps"] > 0, stats


@pytest.mark.parametrize(("rules", "num_players"), TABLES, ids=[f"{r}-{n}p" for r, n in TABLES])
def test_fast_core_matches_the_readable_engine(rules: str, num_players: int) -> None:
    """E1-E5 and every rule the hands touch (B4-B28, V1-V5): identical masks,
    observations, rewards and final states over DIFF_GAMES hands (half random,
    half eager), dealt from the same seeds."""
    _check_equivalence(rules, num_players, DIFF_GAMES)


@pytest.mark.slow
@pytest.mark.parametrize(("rules", "num_players"), TABLES, ids=[f"{r}-{n}p" for r, n in TABLES])
def test_fast_core_matches_the_readable_engine_slow(rules: str, num_players: int) -> None:
    """E1-E5, B4-B28, V1-V5 as above over 3,000 hands per table (the default
    run's 300 keep CI short; this twin is the long property run)."""
    _check_equivalence(rules, num_players, SLOW_DIFF_GAMES)


def _vector_vs_slow(rules: str, n: int, reward: str, games: int, steps: int, own_obs: bool = False) -> Counter:
    env = BurakoVectorEnv(
        games, num_players=n, rules=rules, reward=reward, reward_scale=250.0, num_threads=1, own_obs=own_obs
    )
    seeds = [1000 + 17 * i for i in range(games)]
    obs, masks, info = env.reset(seed=seeds)
    rngs = [np.random.default_rng(s) for s in seeds]
    slow = [GameState.new_game(rng, rules, n) for rng in rngs]
    observer = Observer(n, env.rules)
    pick_rng = np.random.default_rng(5)
    done = Counter()
    for step in range(steps):
        for i, state in enumerate(slow):
            assert info["current_player"][i] == state.current
            assert np.array_equal(masks[i], state.legal_mask()), f"game {i} step {step}: masks differ"
            assert np.array_equal(obs[i], observer.encode(state, state.current)), f"game {i} step {step}: obs differ"
        actions = sample_legal_actions(masks, pick_rng)
        obs, masks, rewards, terminated, truncated, info = env.step(actions)
        for i, state in enumerate(slow):
            state.apply(int(actions[i]))
            if state.hand_over:
                assert terminated[i] != truncated[i]
                assert truncated[i] == (state.end_reason == "truncated")
                assert info["end_reason"][i] == F.END_REASON_NAMES.index(state.end_reason)
                if reward == "score":
                    side = [r / 250.0 for r in state.side_rewards()]
                else:
                    totals = [s.total for s in state.hand_scores] if state.hand_scores else []
                    best = max(totals) if totals else None
                    winner = totals.index(best) if totals and totals.count(best) == 1 else -1
                    k = state.num_sides
                    side = [0.0] * k if winner < 0 else [1.0 if s == winner else -1.0 / (k - 1) for s in range(k)]
                expected = np.array([side[state.side_of[p]] for p in range(n)], dtype=np.float32)
                assert np.array_equal(rewards[i], expected), (rewards[i], expected)
                done[state.end_reason] += 1
                slow[i] = GameState.new_game(rngs[i], rules, n)  # the next hand, from the same generator
            else:
                assert not terminated[i] and not truncated[i] and not rewards[i].any()
    return done


@pytest.mark.parametrize(
    ("rules", "num_players", "reward", "own_obs"),
    [
        ("burako", 2, "score", False),
        ("burako", 4, "win", False),
        ("burako_casual", 3, "score", False),
        ("buraco_cards", 2, "win", False),
        ("burako", 2, "score", True),
        ("burako", 4, "win", True),
        ("burako_casual", 3, "score", True),
    ],
)
def test_vector_env_matches_the_readable_engine_across_auto_resets(
    rules: str, num_players: int, reward: str, own_obs: bool
) -> None:
    """E5 rewards, per-game seeds and automatic reset: game i is the sequence
    of hands GameState.new_game deals from default_rng(seeds[i]). With ``own_obs`` each step clears only
    what a row's observation before set (``fast.encode_over``): every observation still equals the
    readable engine's, across hands re-dealt and seats whose side blocks swap each turn."""
    done = _vector_vs_slow(rules, num_players, reward, games=6, steps=700, own_obs=own_obs)
    assert sum(done.values()) >= 6  # every game went through at least one reset


def test_vector_env_own_obs_switched_on_between_steps_gives_the_same_observations() -> None:
    """``own_obs`` may be switched on mid-game: the steps before noted the slots each row set."""
    envs = [BurakoVectorEnv(6, num_threads=1) for _ in range(2)]
    for env in envs:
        env.reset(seed=11)
    rng = np.random.default_rng(2)
    for step in range(300):
        if step == 150:
            envs[1].own_obs = True
        actions = sample_legal_actions(envs[0].masks, rng)
        for env in envs:
            env.step(actions)
        np.testing.assert_array_equal(envs[1].obs, envs[0].obs)
    assert envs[0]._obs_slots.max() >= 2  # melds were on the table


def test_vector_env_rejects_illegal_actions_and_moves_no_game() -> None:
    env = BurakoVectorEnv(4, num_threads=1)
    obs, masks, _ = env.reset(seed=3)
    before = env._states.copy()
    obs_before, masks_before = obs.copy(), masks.copy()
    actions = np.array([np.flatnonzero(m)[0] for m in masks])
    illegal = actions.copy()
    illegal[2] = np.flatnonzero(masks[2] == 0)[0]
    with pytest.raises(ValueError, match=r"illegal actions \(game 2: action"):
        env.step(illegal)
    out_of_range = actions.copy()
    out_of_range[0] = A.NUM_ACTIONS
    with pytest.raises(ValueError, match="game 0"):
        env.step(out_of_range)
    with pytest.raises(ValueError, match="shape"):
        env.step(actions[:3])
    with pytest.raises(ValueError, match="integer"):
        env.step(actions.astype(np.float32))
    assert np.array_equal(env._states, before)
    assert np.array_equal(obs, obs_before) and np.array_equal(masks, masks_before)
    env.step(actions)  # the legal batch still works
    assert not np.array_equal(env._states, before)


def test_vector_env_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="num_envs"):
        BurakoVectorEnv(0)
    with pytest.raises(ValueError, match="reward"):
        BurakoVectorEnv(2, reward="points")
    env = BurakoVectorEnv(2)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(ValueError, match="seeds"):
        env.reset(seed=[1, 2, 3])


def test_vector_env_game_state_and_seeds() -> None:
    """Per-game seeds: a game's deal depends on its own seed only."""
    a = BurakoVectorEnv(3, num_threads=1)
    b = BurakoVectorEnv(2, num_threads=1)
    a.reset(seed=[7, 8, 9])
    b.reset(seed=[9, 7])
    assert a.game_state(2).to_dict() == b.game_state(0).to_dict()
    assert a.game_state(0).to_dict() == GameState.new_game(np.random.default_rng(7), "burako", 2).to_dict()
    assert a.memory_bytes > a.obs.nbytes + a.masks.nbytes


def test_fast_game_refuses_illegal_actions_and_clones_independently() -> None:
    game = F.FastGame.new_game(np.random.default_rng(1), "burako", 2)
    snapshot = game.st.copy()
    with pytest.raises(IllegalActionError, match="not legal"):
        game.apply(A.TAKE_PILE)
    with pytest.raises(IllegalActionError, match="out of range"):
        game.apply(-1)
    with pytest.raises(IllegalActionError, match="integer"):
        game.apply(True)
    assert np.array_equal(game.st, snapshot)
    copy = game.clone()
    copy.apply(int(np.flatnonzero(copy.legal_mask())[0]))
    assert np.array_equal(game.st, snapshot)
    assert not np.array_equal(copy.st, snapshot)


def test_state_layout_holds_every_table() -> None:
    """The flat state's capacities cover every legal rules object (B1, B4)."""
    assert F.MUERTO_CAP * 2 >= 106 - 2  # two muertos and at least a tile per hand
    assert F.MAX_TILES >= 106 and F.SLOTS == A.MAX_MELD_SLOTS
    universe, ids = F.meld_universe()
    assert len(universe) == len(ids) == 15972
    assert all(ids[m] == i for i, m in enumerate(universe[: len(F.PATTERNS)]))


def test_vector_env_masks_are_read_only() -> None:
    """The masks step() checks actions against cannot be edited from outside,
    so an illegal action can never slip through them."""
    env = BurakoVectorEnv(2, num_threads=1)
    _obs, masks, _info = env.reset(seed=0)
    with pytest.raises(ValueError, match="read-only"):
        masks[0, A.DISCARD_BASE] = 1


def test_fast_game_keeps_a_handed_out_mask_and_answers_plain_bools() -> None:
    game = F.FastGame.new_game(np.random.default_rng(2), "burako", 2)
    kept = game.legal_mask()
    before = kept.copy()
    game.apply(int(np.flatnonzero(kept)[0]))
    game.legal_mask()
    assert np.array_equal(kept, before)
    assert type(game.hand_over) is bool and type(game.match_over) is bool


def test_fast_core_refuses_scores_beyond_int32() -> None:
    """Scores live in int32: rules that could overflow them are refused with
    the fields named; the readable engine plays them."""
    rules = load_rules("burako", {"closing_bonus": 3_000_000_000})
    with pytest.raises(ValueError, match=r"closing_bonus.*engine=\"python\""):
        F.fast_tables(rules, 2)
    GameState.new_game(np.random.default_rng(0), rules, 2)
    # a readable state whose match totals left int32 (a scenario, or a match of the readable engine)
    # failed with numpy's bare OverflowError
    from burako_env.scenario import build_state

    for totals in ([2**31, 0], [0, -(2**31)]):
        state = build_state(hands={0: "R3 R4 R5 B9", 1: "K3 K4"}, match_scores=totals)
        with pytest.raises(ValueError, match=r"match scores .* do not fit the compiled core's int32 state"):
            F.FastGame.from_game_state(state)
    fits = build_state(hands={0: "R3 R4 R5 B9", 1: "K3 K4"}, match_scores=[2**31 - 1, -(2**31 - 1)])
    assert F.FastGame.from_game_state(fits).match_scores == [2**31 - 1, -(2**31 - 1)]


def test_vector_env_steps_strided_and_read_only_actions_on_the_one_compiled_kernel() -> None:
    """A column of a policy's output or a read-only array (np.asarray of a memmap or a JAX array) is
    another type to numba: the step kernel compiled again for each, ~50 s mid-run, unannounced."""
    from burako_env import vector

    for threads, kernel in ((1, vector._step_all_serial), (2, vector._step_all)):
        env = BurakoVectorEnv(4, num_threads=threads)
        _obs, masks, _info = env.reset(seed=3)
        rng = np.random.default_rng(0)
        env.step(sample_legal_actions(masks, rng))
        compiled = len(kernel.signatures)
        assert compiled >= 1  # the kernel this thread count runs
        two_columns = np.stack([sample_legal_actions(env.masks, rng), np.zeros(4, np.int64)], axis=1)
        env.step(two_columns[:, 0])  # strided
        frozen = sample_legal_actions(env.masks, rng)
        frozen.flags.writeable = False
        env.step(frozen)
        assert len(kernel.signatures) == compiled


def test_vector_env_steps_alike_on_one_thread_and_on_two() -> None:
    """One thread runs the serial step kernel on one scratch block, two the parallel one on 16 a thread:
    the same games, step for step (observations, masks, rewards, ends, hands dealt again)."""
    import numba

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs numba with 2 threads or more")
    envs = [BurakoVectorEnv(24, num_threads=threads) for threads in (1, 2)]
    outs = [env.reset(seed=11) for env in envs]
    rng = np.random.default_rng(5)
    ended = 0
    for _ in range(400):
        assert all(np.array_equal(a, b) for a, b in zip(outs[0][:2], outs[1][:2], strict=True))
        actions = sample_legal_actions(envs[0].masks, rng)
        outs = [env.step(actions) for env in envs]
        for a, b in zip(outs[0][:5], outs[1][:5], strict=True):
            assert np.array_equal(a, b)
        ended += int(outs[0][3].sum() + outs[0][4].sum())
    assert ended > 0  # hands ended and were dealt again on both


def test_vector_envs_step_from_two_python_threads() -> None:
    """numba's workqueue layer (the batched API's default) cannot be entered from two threads at once:
    two envs stepped in two threads ended the whole process (abort, no exception). A subprocess,
    so a regression fails this test rather than killing the test worker."""
    import subprocess
    import sys

    script = """
import threading
import numpy as np
from burako_env.vector import BurakoVectorEnv, sample_legal_actions

def work(seed):
    env = BurakoVectorEnv(16, num_threads=1)
    _obs, masks, _info = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(150):
        masks = env.step(sample_legal_actions(masks, rng))[1]

threads = [threading.Thread(target=work, args=(seed,)) for seed in (0, 1)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print("both done")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "both done" in done.stdout, done.stderr[-2000:]
