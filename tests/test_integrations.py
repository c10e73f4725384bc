"""The game as the RL libraries expect it: PettingZoo's parallel API and a
single-agent Gymnasium env, each passing that library's own checker."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test

import burako_env
from burako_env import actions as A
from burako_env.gym import BurakoGymEnv


# ---------------------------------------------------------------------- PettingZoo
def test_parallel_env_passes_pettingzoo_checks() -> None:
    parallel_api_test(burako_env.parallel_env(), num_cycles=200)
    parallel_seed_test(burako_env.parallel_env, num_cycles=200)


def test_aec_env_still_passes_api_test() -> None:
    api_test(burako_env.env(num_players=4), num_cycles=200)


def test_parallel_env_max_cycles_truncates_after_that_many_steps() -> None:
    """The parallel half of pettingzoo.test.max_cycles_test: with actions
    sampled from the action spaces, the episode ends after exactly
    ``max_cycles`` parallel steps (truncated, no score)."""
    max_cycles = 4
    env = burako_env.parallel_env(max_cycles=max_cycles)
    env.reset(seed=0)
    for step in range(max_cycles + 10):  # noqa: B007 (read after the loop)
        actions = {agent: env.action_space(agent).sample() for agent in env.agents}
        _, rewards, terminations, truncations, infos = env.step(actions)
        if all(terminations[a] or truncations[a] for a in terminations):
            break
    assert step + 1 == max_cycles
    assert all(truncations.values()) and not any(terminations.values())
    assert all(r == 0.0 for r in rewards.values())
    assert {info["end_reason"] for info in infos.values()} == {"max_cycles"}


def test_action_space_sample_is_legal_for_the_agent_to_act() -> None:
    env = burako_env.env(num_players=2)
    env.reset(seed=1)
    space = env.action_space(env.agent_selection)
    space.seed(0)
    for _ in range(60):
        agent = env.agent_selection
        mask = env.observe(agent)["action_mask"]
        action = int(env.action_space(agent).sample())
        assert mask[action] == 1
        env.step(action)
    # an explicit mask still wins, and contains() still accepts every action id
    other = next(a for a in env.agents if a != env.agent_selection)
    assert env.action_space(other).contains(A.NUM_ACTIONS - 1)
    only = np.zeros(A.NUM_ACTIONS, dtype=np.int8)
    only[3] = 1
    assert int(env.action_space(env.agent_selection).sample(mask=only)) == 3


def test_max_cycles_is_checked() -> None:
    with pytest.raises(ValueError, match="max_cycles must be a positive integer"):
        burako_env.env(max_cycles=0)


# ---------------------------------------------------------------------- Gymnasium single agent
def test_gym_env_passes_gymnasium_and_sb3_checkers() -> None:
    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unbounded Box warnings (observation_bounds has inf for scores)
        check_env(BurakoGymEnv(opponents="random"), skip_render_check=True)
    sb3 = pytest.importorskip("stable_baselines3.common.env_checker")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sb3.check_env(BurakoGymEnv(opponents="planner", learner_seat=1))


def _play_out(env: BurakoGymEnv, seed: int, policy_seed: int = 0) -> tuple[float, dict, list[int]]:
    rng = np.random.default_rng(policy_seed)
    obs, info = env.reset(seed=seed)
    total, actions = 0.0, []
    while True:
        mask = env.action_masks()
        assert np.array_equal(mask, obs["action_mask"].astype(bool))
        assert mask.any() and env.game.current == env.learner_seat
        action = int(rng.choice(np.flatnonzero(mask)))
        actions.append(action)
        obs, reward, terminated, truncated, info = env.step(action)
        total += reward
        if terminated or truncated:
            return total, info, actions


def test_gym_env_credits_the_learners_own_hand_result() -> None:
    """The episode return is the learner's side's hand score minus the
    other's (/ reward_scale), read from the final hand's breakdown."""
    seen_nonzero = False
    for seat in (0, 1):
        env = BurakoGymEnv(opponents="random", learner_seat=seat)
        for seed in range(6):
            total, info, _ = _play_out(env, seed)
            assert info["learner_seat"] == seat and info["side"] == seat
            breakdown = info["score_breakdown"]
            if breakdown is None:
                assert total == 0.0
                continue
            mine, theirs = breakdown[seat]["total"], breakdown[1 - seat]["total"]
            assert total == pytest.approx((mine - theirs) / 1000.0)
            assert info["hand_score"] == mine
            seen_nonzero |= mine != theirs
    assert seen_nonzero


def test_gym_env_is_reproducible_from_the_seed_with_reseeded_opponents() -> None:
    a = BurakoGymEnv(opponents="random")
    b = BurakoGymEnv(opponents="random")
    first = _play_out(a, seed=7)
    _play_out(a, seed=8)  # the opponent's generator moves on
    again = _play_out(a, seed=7)  # ... and reset(seed) reseeds it
    other = _play_out(b, seed=7)
    assert first[0] == again[0] == other[0]
    assert first[2] == again[2] == other[2]
    assert first[1]["score_breakdown"] == other[1]["score_breakdown"]


def test_gym_env_opponents_can_be_callables_and_agents() -> None:
    from agents.random_agent import RandomAgent

    calls = []

    def first_legal(observation: dict[str, np.ndarray]) -> int:
        calls.append(observation["observation"].shape)
        return int(np.flatnonzero(observation["action_mask"])[0])

    env = BurakoGymEnv(opponents=[first_legal, RandomAgent(seed=1), "greedy"], num_players=4, learner_seat=2)
    _, info, _ = _play_out(env, seed=3)
    assert info["hand_over"] and calls
    with pytest.raises(ValueError, match="3 opponent seats"):
        BurakoGymEnv(opponents=["random"], num_players=4)
    with pytest.raises(ValueError, match="learner_seat"):
        BurakoGymEnv(learner_seat=2)


def test_gym_env_illegal_action_ends_the_episode_or_raises() -> None:
    env = BurakoGymEnv()
    obs, _ = env.reset(seed=0)
    illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    _, reward, terminated, truncated, info = env.step(illegal)
    assert (reward, terminated, truncated, info["illegal_action"]) == (-1.0, True, False, True)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    strict = BurakoGymEnv(illegal="raise")
    strict.reset(seed=0)
    before = strict.game.st.copy()
    with pytest.raises(ValueError, match="illegal action"):
        strict.step(illegal)
    assert np.array_equal(strict.game.st, before)
