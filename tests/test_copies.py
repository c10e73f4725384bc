"""Copies of a game on the compiled core share its read-only tables.

numba compiles one version of each kernel per argument *type*, and a
read-only array is a different type from a writeable one. A copied or
unpickled env used to carry writeable copies of the lookup tables, so its
first step compiled every kernel again (minutes) and a pickle weighed 12 MB.
These tests count the compiled signatures, so they fail without the fix.
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import burako_env
from burako_env import fast as F
from burako_env.engine import GameState
from burako_env.rules import load_rules, preset_names

KERNELS = ("apply_unchecked", "legal_mask", "encode")


def _signatures() -> dict[str, int]:
    return {name: len(getattr(F, name).signatures) for name in KERNELS}


def _play(env: object, steps: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        obs, *_ = env.last()  # type: ignore[attr-defined]
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))  # type: ignore[attr-defined]


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_copied_env_steps_without_recompiling(how: str) -> None:
    env = burako_env.env(num_players=2)
    env.reset(seed=3)
    _play(env, 5, seed=0)
    before = _signatures()
    twin = {
        "copy": copy.copy,
        "deepcopy": copy.deepcopy,
        "pickle": lambda e: pickle.loads(pickle.dumps(e)),
    }[how](env)
    tables = env.unwrapped.state_.tables
    twin_state = twin.unwrapped.state_
    assert twin_state.tables is tables  # the one shared instance
    assert all(a is b for a, b in zip(twin_state.args, tables.kernel_args, strict=True))
    assert not any(arr.flags.writeable for arr in twin_state.args)
    _play(twin, 20, seed=1)
    assert _signatures() == before


def test_copies_play_on_independently() -> None:
    env = burako_env.env(num_players=2)
    env.reset(seed=5)
    _play(env, 7, seed=2)
    twin = pickle.loads(pickle.dumps(env))
    deep = copy.deepcopy(env)
    assert twin.unwrapped.game.to_dict() == env.unwrapped.game.to_dict()
    _play(twin, 10, seed=4)
    _play(deep, 10, seed=4)
    assert twin.unwrapped.game.to_dict() == deep.unwrapped.game.to_dict()
    assert twin.unwrapped.game.to_dict() != env.unwrapped.game.to_dict()


def test_pickled_env_is_small() -> None:
    env = burako_env.env(num_players=4)
    env.reset(seed=0)
    assert len(pickle.dumps(env)) < 200_000  # 12 MB while the tables travelled with it


def test_pickled_fast_game_keeps_its_mask() -> None:
    game = F.FastGame.new_game(np.random.default_rng(0), "burako", 2)
    mask = game.legal_mask().copy()
    twin = pickle.loads(pickle.dumps(game))
    assert twin.tables is game.tables
    assert np.array_equal(twin.legal_mask(), mask)
    assert np.array_equal(twin.st, game.st)


@pytest.mark.parametrize(("preset", "players"), [(p, n) for p in preset_names() for n in load_rules(p).players])
def test_to_game_state_equals_the_dict_round_trip(preset: str, players: int) -> None:
    """The direct conversion gives the state ``from_dict(to_dict())`` gives,
    derived arrays and the legal mask included, at every step of a hand."""
    rng = np.random.default_rng(11)
    game = F.FastGame.new_game(np.random.default_rng(7), preset, players)
    steps = 0
    while not game.hand_over and steps < 150:
        if steps % 2:
            game.legal_mask()  # half the states convert with a known mask
        direct, slow = game.to_game_state(), GameState.from_dict(game.to_dict())
        assert direct.to_dict() == slow.to_dict()
        for name in ("hands", "known", "pile_counts", "meld_enc", "addable"):
            assert np.array_equal(getattr(direct, name), getattr(slow, name)), name
            assert getattr(direct, name).dtype == getattr(slow, name).dtype, name
        assert direct.close_ready == slow.close_ready and direct.hand_size == slow.hand_size
        assert np.array_equal(direct.legal_mask(), slow.legal_mask())
        direct.check_conservation()
        game.apply(int(rng.choice(np.flatnonzero(game.legal_mask()))))
        steps += 1


def test_a_pickled_game_state_leaves_its_rules_caches_behind() -> None:
    """A readable state's ``Tables`` (per-rules caches of meld outcomes, filled as games are played)
    travel as their rules: a state pickled after many games stays small, and unpickles onto this
    process's own tables, equal and playable."""
    from burako_env.engine import tables_for

    rules = load_rules("burako")
    rng = np.random.default_rng(3)
    state = GameState.new_game(np.random.default_rng(0), rules, 2)
    for _ in range(20):  # fill the shared caches with many games' melds
        game = GameState.new_game(rng, rules, 2)
        for _ in range(300):
            if game.hand_over:
                break
            game.apply(int(rng.choice(np.flatnonzero(game.legal_mask()))))
    assert len(state.t._outcomes) > 500
    data = pickle.dumps(state)
    assert len(data) < 100_000, len(data)
    twin = pickle.loads(data)
    assert twin.t is tables_for(rules)
    assert twin.to_dict() == state.to_dict()
    np.testing.assert_array_equal(twin.legal_mask(), state.legal_mask())
    assert copy.deepcopy(state).t is state.t
